"""Two tenants on one store: neither can see, list, resume, export, delete or cancel the other's things.

Alice and Bob each hold a token from one tokens file. Alice has a session ``chat-1`` (two
turns) and a streamed request ``r-1`` that is still running. Bob then tries every route on
those names; each try must leave Alice's session and request exactly as they were. The table
runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_core.server import ServeSettings, create_app
from agent_core.store import open_store
from providers._server import Delay, ScriptedServer, sse_reply
from providers._wire import OA_DONE, oa_chunk

from ._live import running
from .conftest import pg_schema_url

ALICE = "alice-token-0123456789"
BOB = "bob-token-abcdefghijkl"


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    url = f"sqlite:///{tmp_path}/shared.db" if request.param == "sqlite" else pg_schema_url(request.getfixturevalue("pg"))
    store = open_store(url)
    yield store
    store.close()


@pytest.fixture
def tenants_file(tmp_path: Path) -> str:
    import hashlib

    path = tmp_path / "tokens.toml"
    path.write_text(
        "[[tenants]]\n"
        f'name = "alice"\ntoken = "{ALICE}"\n\n'
        "[[tenants]]\n"
        f'name = "bob"\ntoken_sha256 = "{hashlib.sha256(BOB.encode()).hexdigest()}"\n'
        'models = ["echo"]\n'
    )
    return str(path)


def _as(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def _turn(url: str, token: str, sid: str, text: str, **headers: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/sessions/{sid}/turns", json={"message": text, "config": {"model": "echo"}},
                      headers={**_as(token), **headers}, timeout=30)


# Every route Bob can aim at Alice's session "chat-1" or request "r-1": (method, path, JSON body, headers, status
# Bob must get). 404 means "not there" for Bob; 201/200 means Bob made a thing of his own under that name.
BOB_TRIES: list[tuple[str, str, Any, dict[str, str], int]] = [
    ("GET", "/v1/sessions/chat-1", None, {}, 404),
    ("DELETE", "/v1/sessions/chat-1", None, {}, 404),
    ("DELETE", "/v1/sessions/chat-1", None, {"if-match": "3"}, 404),
    ("POST", "/v1/sessions/chat-1/turns", {"message": "mine now", "config": {"model": "echo"}}, {"if-match": "3"}, 404),
    ("POST", "/v1/sessions/chat-1/actions/usage_total", {}, {}, 404),
    ("DELETE", "/v1/requests/r-1", None, {}, 404),
    ("GET", "/v1/sessions?after=chat-0", None, {}, 200),
    ("POST", "/v1/sessions", {"id": "chat-1"}, {}, 201),  # Bob's own chat-1, beside Alice's
    ("POST", "/v1/sessions/chat-1/turns", {"message": "bob here", "config": {"model": "echo"}}, {}, 200),
    ("POST", "/v1/chat/completions", {"model": "echo", "messages": [{"role": "user", "content": "x"}]},
     {"x-session-id": "chat-1", "x-request-id": "r-1"}, 200),  # r-1 is a name Bob may use too
    ("GET", "/v1/sessions/chat-1", None, {}, 200),  # ... and now Bob reads his own
]


@pytest.mark.slow
def test_two_tenants_cannot_touch_each_others_sessions_or_requests(shared_store: Any, tenants_file: str,
                                                                  server: ScriptedServer) -> None:
    server.enqueue(sse_reply(oa_chunk({"role": "assistant", "content": "slow"}), Delay(20), oa_chunk({}, "stop"),
                             OA_DONE))
    operator = {"base_url": f"{server.url}/v1", "api_key": "sk-op-0123456789", "max_retries": 0}
    app = create_app(store=shared_store, config=operator, settings=ServeSettings(tokens_file=tenants_file))
    with running(app) as url:
        assert _turn(url, ALICE, "chat-1", "one").status_code == 200
        assert _turn(url, ALICE, "chat-1", "two").status_code == 200
        alice_before = httpx.get(f"{url}/v1/sessions/chat-1", headers=_as(ALICE)).json()
        assert alice_before["revision"] == 2
        body = {"model": "openai/m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=30,
                          headers={**_as(ALICE), "x-request-id": "r-1"}) as running_request:
            lines = running_request.iter_lines()
            assert any("slow" in line for line in lines)  # Alice's r-1 is running now

            for method, path, payload, headers, status in BOB_TRIES:
                r = httpx.request(method, f"{url}{path}", headers={**_as(BOB), **headers}, timeout=30,
                                  **({"json": payload} if payload is not None else {}))
                assert r.status_code == status, (method, path, headers, r.text)
                assert "alice" not in r.text, (method, path, r.text)
                if path.startswith("/v1/sessions?"):
                    assert r.json()["data"] == []  # Alice's chat-1 is not listed for Bob
                if status == 404 and "sessions" in path:
                    assert r.json()["error"]["type"] == "SessionNotFoundError"
                    assert "'chat-1'" in r.json()["error"]["message"]  # named as Bob named it

            # Alice's request still runs (Bob's DELETE did nothing); Alice can cancel it.
            assert httpx.delete(f"{url}/v1/requests/r-1", headers=_as(ALICE)).status_code == 204
            rest = "\n".join(lines)
            assert "request_cancelled" in rest
        # Alice's session is exactly as it was; Bob's chat-1 is a different session.
        assert httpx.get(f"{url}/v1/sessions/chat-1", headers=_as(ALICE)).json() == alice_before
        bobs = httpx.get(f"{url}/v1/sessions/chat-1", headers=_as(BOB)).json()
        assert [m["content"] for m in bobs["messages"]] == ["x", "Echo: x"]  # the facade's exchange, saved last
        assert [s["id"] for s in httpx.get(f"{url}/v1/sessions", headers=_as(ALICE)).json()["data"]] == ["chat-1"]
        # Bob's entry narrows his models; Alice has the server's default (any).
        r = httpx.post(f"{url}/v1/sessions/b2/turns", json={"message": "x", "config": {"model": "openai/m"}},
                       headers=_as(BOB))
        assert r.status_code == 403 and r.json()["error"]["param"] == "model"
        # no token, or a token of nobody: 401 on every route
        for headers in ({}, {"authorization": "Bearer nobody-0123456789"}):
            assert httpx.get(f"{url}/v1/sessions", headers=headers).status_code == 401
    # In the store the two live apart, each under its tenant's name.
    ids = sorted(s.session_id for s in shared_store.list())
    assert ids == ["alice/chat-1", "bob/chat-1"]


def test_the_turn_stream_names_the_clients_request_id_never_the_tenants(shared_store: Any, tenants_file: str) -> None:
    with running(create_app(store=shared_store, settings=ServeSettings(tokens_file=tenants_file))) as url:
        r = _turn(url, ALICE, "s", "hi", **{"x-request-id": "mine-1"})
        events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
        assert {e["request_id"] for e in events if "request_id" in e} == {"mine-1"}
        assert r.headers["x-request-id"] == "mine-1" and "alice" not in r.text


@pytest.mark.parametrize("bad", ["a/b", "..", ".hidden", "x" * 129, "sp ace", "nul\x00", "tab\t", "é", ":colon"])
def test_ids_outside_the_grammar_are_400_everywhere(base_url: str, bad: str) -> None:
    from urllib.parse import quote

    quoted = quote(bad, safe="")
    for method, path, kw in [
        ("POST", "/v1/sessions", {"json": {"id": bad}}),
        ("GET", f"/v1/sessions/{quoted}", {}),
        ("DELETE", f"/v1/sessions/{quoted}", {}),
        ("POST", f"/v1/sessions/{quoted}/turns", {"json": {"message": "hi"}}),
        ("GET", f"/v1/sessions?after={quoted}", {}),
        ("DELETE", f"/v1/requests/{quoted}", {}),
    ]:
        r = httpx.request(method, f"{base_url}{path}", **kw)
        if r.status_code == 404 and r.json()["error"]["type"] == "not_found":
            continue  # a slash splits the path: no route at all, which is just as unreachable
        assert r.status_code == 400, (method, path, r.text)
        assert r.json()["error"]["type"] in ("invalid_session_id", "invalid_request_id"), r.text
    if "\x00" not in bad and "\t" not in bad:
        for header in ("x-session-id", "x-request-id"):
            try:
                r = httpx.post(f"{base_url}/v1/chat/completions", headers={header: bad},
                               json={"model": "echo", "messages": [{"role": "user", "content": "x"}]})
            except (httpx.LocalProtocolError, UnicodeEncodeError):
                continue  # the client itself will not send such a header
            assert r.status_code == 400, (header, bad, r.text)
