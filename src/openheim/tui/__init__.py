"""The terminal UI: a Textual chat over the runtime's session and its events (the ``tui``
extra). ``openheim.cli.chat`` imports it only when the UI opens."""
