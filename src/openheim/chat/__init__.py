"""The interactive chat shared by the terminal UI and the plain REPL: the commands, the
session they drive, the input history and the REPL itself. Nothing here imports Textual."""
