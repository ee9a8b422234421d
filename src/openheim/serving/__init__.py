"""What the two HTTP servers (``openheim serve`` and ``openheim mcp serve --http``) share: the
token that lets a client in, and the address they listen on. A shared package, no surface: it
imports none."""
