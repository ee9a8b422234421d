"""The plain line REPL: the chat (``openheim.chat``) over a prompt and streamed text, for pipes
and terminals without the UI. ``openheim.cli.chat`` opens it."""
