"""``openheim serve``: REST, a WebSocket with ``agent``/``fs``/``system`` channels, ACP over a
WebSocket and a web page, over the runtime (Starlette on uvicorn, the ``server`` extra).

The modules: ``guard`` (the middleware that enforces the token of ``openheim.serving.auth``, the
origin allow-list, body sizes and security headers), ``rest`` and ``openapi`` (the REST routes
and their document), ``hub`` (sessions kept open with their numbered frames) and ``writer``
(those frames into the store), ``frames``, ``ws``, ``agent``, ``fs`` and ``fs_ops`` (the ``/ws``
socket and its channels), ``context`` (what they share, the ACP bridge of ``/acp`` among it,
handed in by the launcher), ``app`` (the application) and ``launch`` (running it). Nothing is
imported here, so ``openheim run`` never loads Starlette.
"""
