"""``openheim serve``: the REST + WebSocket server and its web page (the ``server`` extra), with
the ACP agent mounted at ``/acp`` (composed here: the server does not import the ACP surface)."""

from __future__ import annotations

import argparse
import sys

from openheim.config.load import Overrides, load_settings
from openheim.errors import ConfigError
from openheim.events import notice_line
from openheim.term import exit_codes


def add_serve(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port (default 8080; 0: any free)")
    serve.add_argument("--work-dir", help="the folder sessions and the fs channel work in")
    serve.add_argument(
        "--new-token",
        action="store_true",
        help="replace the token kept in the data dir (browsers logged in with the old one must "
        "log in again)",
    )


def serve_command(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65_535:
        raise ConfigError(f"--port {args.port} is not a port", hint="give 0 to 65535")
    try:
        from openheim.acp.websocket import serve_websocket
        from openheim.server.launch import serve
        from openheim.serving.address import Address
    except ImportError as err:
        raise ConfigError(
            f"openheim serve needs the server extra ({err.name} is missing)",
            hint="pip install 'openheim[server]'",
        ) from None
    settings = load_settings(Overrides(work_dir=args.work_dir))
    sys.stderr.writelines(f"{notice_line(notice)}\n" for notice in settings.notices)
    serve(settings, Address(args.host, args.port), acp=serve_websocket, new_token=args.new_token)
    return exit_codes.OK
