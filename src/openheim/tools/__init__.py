"""Tools: the Tool abstraction, the ``@tool`` decorator, the path sandbox and built-in tools."""
