"""The Agent Client Protocol surface: ``openheim acp`` and ``serve_acp`` over any byte streams."""
