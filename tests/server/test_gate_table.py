"""``docs/security.md``'s table of what a client sends, played row by row on SQLite and on PostgreSQL.

The table is the contract: each row names a value a client can send and the rule it meets. This
file reads the table from the doc and runs the probe written for each row against a real server
(two tenants, the defaults otherwise). A row added to the doc without a probe, or a probe whose
row was removed, fails :func:`test_every_row_of_the_table_has_a_probe_and_no_probe_is_stale`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_core import Message, Session
from agent_core.server import ServeSettings, create_app
from agent_core.store import open_store

from ._live import running
from .conftest import pg_schema_url

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"
ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"


def table_rows() -> list[str]:
    """The first cell of each row of the doc's table, as written (backticks included)."""
    text = DOC.read_text()
    section = text.split("### What a client sends, and what becomes of it", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| value")]
    return [row.split(" | ")[0].removeprefix("| ").strip() for row in rows]


class Server:
    """A running server for alice and bob, and the store behind it."""

    def __init__(self, url: str, store: Any) -> None:
        self.url, self.store = url, store

    def alice(self, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"authorization": f"Bearer {ALICE}", **kw.pop("headers", {})}
        return httpx.request(method, f"{self.url}{path}", headers=headers, timeout=30, **kw)

    def bob(self, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"authorization": f"Bearer {BOB}", **kw.pop("headers", {})}
        return httpx.request(method, f"{self.url}{path}", headers=headers, timeout=30, **kw)


def refused(r: httpx.Response, status: int, param: str | None = None) -> None:
    assert r.status_code == status, (status, r.status_code, r.text[:300])
    if param is not None:
        assert r.json()["error"].get("param") == param, r.text[:300]


def _host(s: Server) -> None:
    refused(s.alice("GET", "/healthz", headers={"host": "evil.example"}), 400)
    assert s.alice("GET", "/healthz").status_code == 200


def _origin(s: Server) -> None:
    refused(s.alice("POST", "/v1/sessions", json={}, headers={"origin": "https://evil.example"}), 403)


def _authorization(s: Server) -> None:
    refused(httpx.get(f"{s.url}/healthz"), 401)
    refused(httpx.get(f"{s.url}/healthz", headers={"authorization": "Bearer nope-nope-nope"}), 401)
    assert httpx.get(f"{s.url}/healthz", headers={"x-api-key": BOB}).status_code == 200


def _content_type(s: Server) -> None:
    refused(s.alice("POST", "/v1/sessions", content=b"{}", headers={"content-type": "text/plain"}), 415)
    refused(s.alice("POST", "/v1/sessions", content=b"{}",
                    headers={"content-type": "application/json; charset=utf-7"}), 415)


def _content_length(s: Server) -> None:
    import socket

    host, port = s.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"POST /v1/sessions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                     b"authorization: Bearer " + ALICE.encode() + b"\r\ncontent-length: \xc2\xb2\r\n\r\n{}")
        assert b" 400 " in sock.recv(4096).split(b"\r\n")[0]


def _session_header(s: Server) -> None:
    body = {"model": "echo", "messages": [{"role": "user", "content": "hi"}]}
    refused(s.alice("POST", "/v1/chat/completions", json=body, headers={"x-session-id": "../bob/x"}), 400)
    assert s.alice("POST", "/v1/chat/completions", json=body, headers={"x-session-id": "kept"}).status_code == 200
    assert s.store.get("alice/kept").session.messages[-1].content == "Echo: hi"
    refused(s.bob("GET", "/v1/sessions/kept"), 404)


def _request_header(s: Server) -> None:
    body = {"model": "echo", "messages": [{"role": "user", "content": "hi"}]}
    refused(s.alice("POST", "/v1/chat/completions", json=body, headers={"x-request-id": "a/b"}), 400)
    assert s.alice("POST", "/v1/chat/completions", json=body,
                   headers={"x-request-id": "r-1"}).headers["x-request-id"] == "r-1"


def _if_match(s: Server) -> None:
    s.alice("POST", "/v1/sessions", json={"id": "m"})
    refused(s.alice("DELETE", "/v1/sessions/m", headers={b"if-match": "²".encode()}), 400, "If-Match")
    assert s.alice("DELETE", "/v1/sessions/m", headers={"if-match": '"1"'}).status_code == 204


def _traceparent(s: Server) -> None:
    r = s.alice("POST", "/v1/chat/completions", json={"model": "echo", "messages": [{"role": "user", "content": "x"}]},
                headers={"traceparent": "not-a-trace", "tracestate": "x" * 600})
    assert r.status_code == 200, r.text


def _limit(s: Server) -> None:
    for bad in ("0", "1001", "٣", "1e3"):
        refused(s.alice("GET", "/v1/sessions", params={"limit": bad}), 400, "limit")
    assert s.alice("GET", "/v1/sessions", params={"limit": "5"}).status_code == 200


def _after(s: Server) -> None:
    refused(s.alice("GET", "/v1/sessions", params={"after": "x/y"}), 400)


def _busy(s: Server) -> None:
    refused(s.alice("POST", "/v1/sessions/t/turns?busy=sometimes", json={"message": "hi"}), 400, "busy")
    refused(s.alice("POST", "/v1/sessions/t/turns?approvals=always", json={"message": "hi"}), 400, "approvals")


def _config_query(s: Server) -> None:
    for path in ("/v1/plugins", "/v1/ui-schema", "/v1/actions"):
        refused(s.alice("GET", path, params={"base_url": "http://evil.example"}), 403, "base_url")
        assert s.alice("GET", path, params={"temperature": "0.5"}).status_code == 200


def _config(s: Server) -> None:
    refused(s.alice("POST", "/v1/sessions/c/turns", json={"message": "hi", "config": {"files_root": "/"}}), 403,
            "files_root")
    s.alice("POST", "/v1/sessions", json={"id": "c2"})
    refused(s.alice("POST", "/v1/sessions/c2/actions/compact_native_history",
                    json={"config": {"enabled_plugins": ["files"]}}), 403, "enabled_plugins")
    refused(s.alice("POST", "/v1/input/completions", json={"text": "@", "config": {"api_key": "x"}}), 403, "api_key")


def _facade_fields(s: Server) -> None:
    r = s.alice("POST", "/v1/chat/completions", json={"model": "echo", "base_url": "http://evil.example",
                                                      "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code in (400, 403) and "base_url" in r.text, r.text
    r = s.alice("POST", "/v1/messages", json={"model": "echo", "max_tokens": 5, "mcp_servers": [{"url": "x"}],
                                              "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 400 and "mcp_servers" in r.text, r.text


def _caps(s: Server) -> None:
    from agent_core import ConfigPolicy

    merged = ConfigPolicy().merge({"max_tokens": 100}, {"max_tokens": 5000, "max_completion_tokens": 7000})
    assert merged["max_tokens"] == 100 and merged["max_completion_tokens"] == 100
    assert ConfigPolicy().merge({"max_tokens": 100}, {"max_tokens": 10})["max_tokens"] == 10


def _messages(s: Server) -> None:
    blocks = [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x"} for i in range(2100)]
    r = s.alice("POST", "/v1/messages", json={"model": "echo", "max_tokens": 5,
                                              "messages": [{"role": "user", "content": blocks}]})
    refused(r, 400)  # Anthropic's error shape has no param: the message names the field
    assert r.json()["error"]["message"].startswith("messages: ")
    assert "2101 messages" in r.json()["error"]["message"] and "max_messages" in r.json()["error"]["message"]
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in range(2001)]
    refused(s.alice("POST", "/v1/chat/completions", json={"model": "echo", "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": calls}]}), 400, "messages")
    parts = [{"type": "input_text", "text": "x"} for _ in range(20001)]
    refused(s.alice("POST", "/v1/responses", json={"model": "echo", "input": [{"role": "user", "content": parts}]}),
            400, "input")


def _system(s: Server) -> None:
    from agent_core import AgentCore
    from agent_core_features.system_prompt import SystemPromptFeature
    from agent_core_providers.echo import EchoProvider

    core = AgentCore(providers=[EchoProvider], features=[SystemPromptFeature])
    own = Session("s", [Message("system", "client"), Message("user", "hi")])
    seen = core.resolve({"system_prompt": "op"}, session=own)
    assert seen.reasons["system_prompt"].startswith("on")
    r = s.alice("POST", "/v1/messages", json={"model": "echo", "max_tokens": 5, "system": "client says",
                                              "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200, r.text


def _tools(s: Server) -> None:
    tool = {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}
    r = s.alice("POST", "/v1/chat/completions", json={"model": "echo", "tools": [tool],
                                                      "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200 and r.json()["choices"][0]["message"].get("tool_calls") is None, r.text


def _session_id(s: Server) -> None:
    for bad in (".hidden", "a/b", "x" * 129, ""):
        assert s.alice("POST", "/v1/sessions", json={"id": bad}).status_code == 400, bad


def _session_metadata(s: Server) -> None:
    refused(s.alice("POST", "/v1/sessions", json={"metadata": {"plugins": ["files"]}}), 403, "metadata.plugins")
    refused(s.alice("POST", "/v1/sessions", json={"metadata": {"agent_core.native_history": {}}}), 400)
    assert s.alice("POST", "/v1/sessions", json={"id": "md", "metadata": {"title": "mine"}}).status_code == 201
    assert s.store.get("alice/md").session.metadata["title"] == "mine"


def _session_messages(s: Server) -> None:
    many = [{"role": "user", "content": "x"}] * 2001
    refused(s.alice("POST", "/v1/sessions", json={"messages": many}), 400, "messages")
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x"}'}}
    r = s.alice("POST", "/v1/sessions", json={"id": "tc", "messages": [
        {"role": "user", "content": "go"}, {"role": "assistant", "content": "", "metadata": {"tool_calls": [call]}}]})
    assert r.status_code == 201, r.text
    r = s.alice("POST", "/v1/sessions/tc/turns", json={"message": "on", "config": {"model": "echo"}})
    assert r.status_code == 200 and '"ok":true' not in r.text.replace(" ", "")  # read_file is no tool here


def _stored_plugins(s: Server) -> None:
    s.store.create(Session("alice/sp", [], {"plugins": ["file_mentions"]}))
    r = s.alice("POST", "/v1/sessions/sp/turns", json={"message": "hi", "config": {"model": "echo"}})
    assert r.status_code == 200, r.text
    reasons = s.alice("GET", "/v1/plugins").json()["data"]
    assert not any(p["name"] == "file_mentions" and p["enabled"] for p in reasons)


def _turn_message(s: Server) -> None:
    r = s.alice("POST", "/v1/sessions/tm/turns", json={"message": "hello", "config": {"model": "echo"}})
    assert r.status_code == 200 and s.store.get("alice/tm").session.messages[0].content == "hello"
    refused(s.alice("POST", "/v1/sessions/tm/turns", json={"message": 5}), 400)


def _action_params(s: Server) -> None:
    s.alice("POST", "/v1/sessions", json={"id": "ap"})
    r = s.alice("POST", "/v1/sessions/ap/actions/compact_native_history", json={"params": {"mode": 5}})
    assert r.status_code == 400, r.text


def _action_id(s: Server) -> None:
    s.alice("POST", "/v1/sessions", json={"id": "ai"})
    refused(s.alice("POST", "/v1/sessions/ai/actions/" + "a" * 201, json={}), 400, "action_id")


def _approval(s: Server) -> None:
    refused(s.alice("POST", "/v1/requests/r/approvals/c", json={"decision": "maybe"}), 400)
    refused(s.alice("POST", "/v1/requests/r/approvals/" + "c" * 201, json={"decision": "allow"}), 400, "call_id")
    assert s.alice("POST", "/v1/requests/r/approvals/c", json={"decision": "allow"}).status_code == 404


def _completion_text(s: Server) -> None:
    refused(s.alice("POST", "/v1/input/completions", json={"text": "x" * 20_001}), 400, "text")


def _request_path(s: Server) -> None:
    refused(s.alice("DELETE", "/v1/requests/.x"), 400)
    assert s.bob("DELETE", "/v1/requests/anything").status_code == 404


def _console_file(s: Server) -> None:
    assert s.alice("GET", "/console/..%2Fapp.py").status_code == 404
    assert s.alice("GET", "/console/nothing.js").status_code == 404
    assert httpx.get(f"{s.url}/console/nothing.js").status_code == 401  # only the console's own files are public


PROBES: dict[str, Callable[[Server], None]] = {
    "`Host`": _host,
    "`Origin`": _origin,
    "`Authorization`, `x-api-key`": _authorization,
    "`Content-Type`": _content_type,
    "`Content-Length`": _content_length,
    "`X-Session-Id`": _session_header,
    "`X-Request-Id`": _request_header,
    "`If-Match`": _if_match,
    "`traceparent`, `tracestate`": _traceparent,
    "`limit` query": _limit,
    "`after` query": _after,
    "`busy`, `approvals` query": _busy,
    "config query": _config_query,
    "`config`": _config,
    "facade fields (`model`, sampling, `tool_choice`, ...)": _facade_fields,
    "`max_tokens`, `max_completion_tokens`, `max_output_tokens`": _caps,
    "`messages`, `input`": _messages,
    "`system`, `instructions`, a `system` message": _system,
    "`tools`": _tools,
    "session `id`": _session_id,
    "session `metadata`": _session_metadata,
    "session `messages`": _session_messages,
    "stored `metadata.plugins`": _stored_plugins,
    "turn `message`": _turn_message,
    "action `params`": _action_params,
    "action id": _action_id,
    "approval `decision`, call id": _approval,
    "completion `text`": _completion_text,
    "request id path": _request_path,
    "console file name": _console_file,
}


def test_every_row_of_the_table_has_a_probe_and_no_probe_is_stale() -> None:
    rows = table_rows()
    assert len(rows) == len(set(rows))
    assert set(rows) == set(PROBES), (set(rows) ^ set(PROBES))


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("gate")
    url = f"sqlite:///{tmp}/gate.db" if request.param == "sqlite" else pg_schema_url(request.getfixturevalue("pg"))
    tokens = tmp / "tokens.toml"
    tokens.write_text(f'[[tenants]]\nname = "alice"\ntoken = "{ALICE}"\n\n[[tenants]]\nname = "bob"\n'
                      f'token = "{BOB}"\n')
    store = open_store(url)
    try:
        with running(create_app(store=store, settings=ServeSettings(tokens_file=str(tokens)))) as base:
            yield Server(base, store)
    finally:
        store.close()


@pytest.mark.parametrize("row", sorted(PROBES))
def test_a_row_of_the_table_holds(served: Server, row: str) -> None:
    PROBES[row](served)


def test_probes_leave_no_client_value_in_the_table_untested() -> None:
    """Each rule word of the table is one the doc defines (pass, map, refuse, allow, or a checked form)."""
    text = DOC.read_text().split("### What a client sends, and what becomes of it", 1)[1].split("\n### ", 1)[0]
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| value"):
            rule = line.rsplit(" | ", 1)[-1]
            assert re.search(r"\b(pass|map|refuse|allow|checked|not read|ASCII|the id grammar|one of|at most)\b",
                             rule), line
