"""A property-based fuzz of the REST API from its own OpenAPI document (Schemathesis), against
the app on a real uvicorn: no answer is a 5xx, and every answer matches the document."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck, settings
from schemathesis.core.parameters import ParameterLocation

from openheim.config.load import Overrides, load_settings
from openheim.messages import Message
from openheim.runtime import Runtime
from openheim.server.app import create_app
from openheim.server.context import ServerContext
from openheim.server.guard import Policy
from openheim.server.hub import Hub
from openheim.server.openapi import openapi_document
from openheim.serving.auth import Auth
from openheim.store import open_store
from tests.server.support import TOKEN

schema = schemathesis.openapi.from_dict(openapi_document())


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app on uvicorn in a thread of its own, over a store holding two sessions."""
    root = tmp_path_factory.mktemp("fuzz")
    home, work = root / "home", root / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(
        'default_provider = "fake"\n[providers.fake]\n'
        'api_base = "http://127.0.0.1:9/v1"\ndefault_model = "m"\n'
    )
    found = load_settings(Overrides(work_dir=str(work)), cwd=work, env={"OPENHEIM_HOME": str(home)})
    store = open_store(found.data_dir)
    for text in ("first question", "second question"):
        record = store.create(cwd=str(work), provider="fake", model="m", skills=[])
        store.append(record.id, Message.user(text))
    runtime = Runtime(settings=found)
    auth = Auth(TOKEN, generated=False)
    context = ServerContext(runtime, store, auth, Hub(runtime, store))
    app = create_app(context, Policy(auth, frozenset(), 1024 * 1024))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections queue up until uvicorn accepts them
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=asyncio.run, args=(server.serve(sockets=[sock]),))
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_rest_api_matches_its_document(case: schemathesis.Case[Any], base_url: str) -> None:
    response = case.call_and_validate(base_url=base_url, headers=_auth(case), timeout=10)
    assert response.status_code < 500


def _auth(case: schemathesis.Case[Any]) -> dict[str, str]:
    """The token, except for a case generated to break the headers: the only header the document
    requires is the token, so that case is one without it, and the server must refuse it."""
    if case.meta is not None and case.meta.is_negative_at(ParameterLocation.HEADER):
        return {}
    return {"Authorization": f"Bearer {TOKEN}"}


def test_the_document_lists_every_rest_route() -> None:
    from openheim.server.rest import ROUTES

    documented = set(openapi_document()["paths"])
    served = {route.path for route in ROUTES}
    assert served == documented
