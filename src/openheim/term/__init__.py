"""What the terminal surfaces share (the command line, the REPL, the terminal UI): events
rendered as text or JSON lines, approvals asked on the controlling terminal, and the
program's exit codes. No surface of its own: it imports none."""
