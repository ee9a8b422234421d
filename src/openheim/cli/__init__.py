"""The ``openheim`` command line."""
