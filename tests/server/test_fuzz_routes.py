"""Hostile values in every field of every route: always an answer that names the problem, never a 5xx.

Each route has a valid request as a template. Hypothesis picks one place in it (a path
parameter, a header, a query parameter, or any field of the JSON body, nested ones too) and
puts a hostile value there: the wrong type, a huge or deep value, odd text, or nothing at all.
The server must answer below 500 with a JSON error (or succeed), never with a traceback, and a
streamed answer must not carry an internal failure either.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from agent_core.server import ServeSettings, create_app
from agent_core.store import open_store
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ._live import running

MSG = {"role": "user", "content": "hi"}

# (name, method, path with {id} / {action}, headers, query, JSON body or None)
ROUTES: list[tuple[str, str, str, dict[str, str], dict[str, Any], Any]] = [
    ("chat", "POST", "/v1/chat/completions", {"x-request-id": "r1", "x-session-id": "fz"}, {}, {
        "model": "echo", "stream": False, "stream_options": {"include_usage": True},
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": "c1", "content": "3"}],
        "max_tokens": 10, "temperature": 0.5, "top_p": 1, "seed": 1, "stop": ["x"], "user": "u",
        "presence_penalty": 0, "frequency_penalty": 0, "tool_choice": "auto", "response_format": {"type": "text"},
        "parallel_tool_calls": True, "n": 1,
        "tools": [{"type": "function", "function": {"name": "f", "description": "d",
                                                    "parameters": {"type": "object", "properties": {}}}}],
    }),
    ("chat-stream", "POST", "/v1/chat/completions", {}, {}, {"model": "echo", "stream": True, "messages": [MSG]}),
    ("responses", "POST", "/v1/responses", {"x-request-id": "rr1"}, {}, {
        "model": "echo", "stream": False, "instructions": "be brief", "max_output_tokens": 10,
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                  {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                  {"type": "function_call_output", "call_id": "c1", "output": "3"},
                  {"role": "developer", "content": "note"}],
        "tools": [{"type": "function", "name": "f", "description": "d", "parameters": {"type": "object",
                                                                                    "properties": {}}}],
        "tool_choice": "auto", "parallel_tool_calls": True, "store": False, "metadata": {"k": "v"},
        "text": {"format": {"type": "text"}},
    }),
    ("responses-stream", "POST", "/v1/responses", {}, {}, {"model": "echo", "stream": True, "input": "hi"}),
    ("count-tokens", "POST", "/v1/messages/count_tokens", {}, {}, {
        "model": "echo", "system": "be brief", "tool_choice": {"type": "auto"},
        "messages": [MSG, {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"},
                                                           {"type": "tool_use", "id": "u", "name": "f", "input": {}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u", "content": "3"}]}],
        "tools": [{"name": "f", "input_schema": {"type": "object", "properties": {}}}],
    }),
    ("create", "POST", "/v1/sessions", {}, {}, {"id": "fz-new", "metadata": {"k": "v"},
                                               "messages": ["hello", {"role": "assistant", "content": "hi",
                                                                      "metadata": {"a": 1}}]}),
    ("list", "GET", "/v1/sessions", {}, {"limit": "10", "after": "a"}, None),
    ("get", "GET", "/v1/sessions/{id}", {}, {}, None),
    ("delete", "DELETE", "/v1/sessions/{id}", {"if-match": "1"}, {}, None),
    ("turn", "POST", "/v1/sessions/{id}/turns", {"if-match": "1", "x-request-id": "t1"}, {}, {
        "message": {"role": "user", "content": "hi", "metadata": {"k": [1, 2]}},
        "config": {"model": "echo", "temperature": 0.2, "max_tokens": 5, "seed": 3, "stop": ["z"], "top_p": 0.9,
                   "user": "u", "metadata": {"m": 1}, "tool_choice": "auto", "response_format": {"type": "text"}},
    }),
    ("action", "POST", "/v1/sessions/{id}/actions/{action}", {"if-match": "1"}, {},
     {"params": {}, "config": {"model": "echo"}}),
    ("plugins", "GET", "/v1/plugins", {}, {"model": "echo", "temperature": "0.5", "stop": '["x"]'}, None),
    ("ui", "GET", "/v1/ui-schema", {}, {"model": "echo"}, None),
    ("actions", "GET", "/v1/actions", {}, {"model": "echo"}, None),
    ("cancel", "DELETE", "/v1/requests/{id}", {}, {}, None),
    ("approval", "POST", "/v1/requests/{id}/approvals/{action}", {}, {}, {"decision": "allow"}),
    ("turn-approvals", "POST", "/v1/sessions/{id}/turns", {}, {"approvals": "ask", "busy": "reject"},
     {"message": "hi", "config": {"model": "echo"}}),
    ("completions", "POST", "/v1/input/completions", {}, {}, {"text": "see @doc", "config": {"model": "echo"}}),
    ("apply-completion", "POST", "/v1/input/completions/apply", {}, {},
     {"text": "see @doc", "completion": {"text": "@docs/", "plugin": "file_mentions"}, "config": {"model": "echo"}}),
    ("console", "GET", "/", {}, {}, None),
    ("console-file", "GET", "/console/{action}", {}, {}, None),
    ("models", "GET", "/v1/models", {}, {}, None),
    ("health", "GET", "/healthz", {}, {}, None),
]

_ODD_TEXT = ["", " ", "\x00", "\x7f", "../../etc/passwd", "a/b", "{x.__class__}", "%s%n", "null", "NaN", "1e400",
             "-1", "0", "99999999999999999999999", "\u202e", "\ufeff", "é", "x" * 5000, "\\", '"', "'",
             "²", "¹⁰", "٣", "１２", "3\u0660", "+1", "1_000", " 1"]  # digits str.isdigit() takes and int() may not
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30), st.sampled_from(_ODD_TEXT),
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)


def _deep(n: int, as_list: bool) -> Any:
    value: Any = 1
    for _ in range(n):
        value = [value] if as_list else {"d": value}
    return value


_BLOCKS = [{"type": "tool_result", "tool_use_id": "t", "content": "x"}, {"type": "text", "text": "y"},
           {"type": "input_text", "text": "z"}, {"type": "tool_use", "id": "u", "name": "f", "input": {}}]
_CALL = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
#: lists of blocks and of tool calls, long enough to pass the fuzz server's small amount limits
amplified = st.one_of(
    st.lists(st.sampled_from(_BLOCKS), max_size=60),
    st.builds(lambda blocks, role: [{"role": role, "content": blocks}], st.lists(st.sampled_from(_BLOCKS), max_size=60),
              st.sampled_from(["user", "assistant"])),
    st.builds(lambda n: [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [_CALL] * n}],
              st.integers(0, 30)),
)
hostile = st.one_of(
    json_values, st.builds(_deep, st.integers(1, 400), st.booleans()),
    st.lists(st.just({"role": "user", "content": "x"}), min_size=0, max_size=5), amplified,
)
header_text = st.one_of(st.sampled_from(_ODD_TEXT), st.text(st.characters(min_codepoint=32, max_codepoint=126),
                                                            max_size=300))
DELETE = object()  # take the field away


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value a field can be replaced: dict keys and list indexes, nested."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


def _put(body: Any, path: tuple[Any, ...], value: Any) -> Any:
    body = copy.deepcopy(body)
    where = body
    for step in path[:-1]:
        where = where[step]
    if value is DELETE:
        del where[path[-1]]
    else:
        where[path[-1]] = value
    return body


@st.composite
def requests(draw: Any) -> tuple[str, str, dict[str, str], dict[str, Any], bytes | None]:
    name, method, path, headers, query, body = draw(st.sampled_from(ROUTES))
    headers, query = dict(headers), dict(query)
    ids = {"id": "fz", "action": "usage_total"}
    places = ["path:" + k for k in ids if "{" + k + "}" in path]
    places += ["header:" + h for h in (*headers, "x-request-id", "x-session-id", "if-match", "authorization")]
    places += ["query:" + q for q in (*query, "limit", "after", "enabled_plugins", "nonsense")]
    if body is not None:
        places += ["body:" + json.dumps(p) for p in _paths(body)] + ["body:root", "body:raw"]
    place = draw(st.sampled_from(places))
    kind, _, what = place.partition(":")
    raw: bytes | None = None if body is None else json.dumps(body).encode()
    if kind == "path":
        ids[what] = draw(header_text)
    elif kind == "header":
        headers[what] = draw(header_text)
    elif kind == "query":
        value = draw(hostile)
        query[what] = value if isinstance(value, str) else json.dumps(value)
    elif what == "root":
        raw = json.dumps(draw(hostile)).encode()
    elif what == "raw":
        raw = draw(st.binary(max_size=200))
    else:
        value = draw(st.one_of(hostile, st.just(DELETE)))
        raw = json.dumps(_put(body, tuple(json.loads(what)), value)).encode()
    url_path = path.replace("{id}", quote(ids["id"], safe="")).replace("{action}", quote(ids["action"], safe=""))
    return method, url_path, headers, query, raw


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:  # one client: a new one per request costs more than the request
        yield client


@pytest.fixture(scope="module")
def fuzz_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = open_store(f"sqlite:///{tmp_path_factory.mktemp('fuzz')}/s.db")
    store.create(__import__("agent_core").Session("fz"))
    app = create_app(store=store, settings=ServeSettings(max_body_bytes=200_000, max_messages=20, max_blocks=40,
                                                         max_tool_calls=10))
    try:
        with running(app) as url:
            yield url
    finally:
        store.close()


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])
@given(request_=requests())
def test_no_hostile_field_on_any_route_reaches_a_5xx(fuzz_url: str, http: httpx.Client, request_: Any) -> None:
    method, path, headers, query, raw = request_
    send_headers = {**headers, "content-type": "application/json"} if raw is not None else headers
    try:
        r = http.request(method, f"{fuzz_url}{path}", headers=send_headers, params=query, content=raw)
    except (httpx.LocalProtocolError, UnicodeEncodeError):
        assume(False)  # the client refuses to send it; nothing reached the server
        return
    assert r.status_code < 500, (method, path, headers, query, raw and raw[:300], r.status_code, r.text[:500])
    assert "Traceback" not in r.text
    if r.status_code == 400 and r.text == "Invalid HTTP request received.":
        return  # uvicorn's HTTP parser refused the request line or a header: the app never saw it
    if r.status_code >= 400:
        error = r.json()["error"]
        assert error["type"] and error["message"]
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        for line in r.text.splitlines():
            if line.startswith("data: {"):
                event = json.loads(line[6:])
                failure = event.get("error") if isinstance(event.get("error"), dict) else {}
                assert failure.get("type") not in ("internal_error", "PluginError"), (method, path, raw, event)



@pytest.mark.parametrize("name", ["responses", "responses-stream"])
def test_the_responses_base_bodies_are_accepted(fuzz_url: str, http: httpx.Client, name: str) -> None:
    """The fuzz starts from bodies the route takes, so each hostile change is what it refuses."""
    (_, method, path, headers, _, body), = [r for r in ROUTES if r[0] == name]
    r = http.request(method, f"{fuzz_url}{path}", headers=headers, json=body)
    assert r.status_code == 200, r.text[:500]


@pytest.mark.parametrize(("change", "param"), [
    ({"text": {"format": []}}, "text.format"),  # found by the fuzz above: a 500 before
    ({"input": [{"role": [], "content": "hi"}]}, "input[0].role"),  # likewise
    ({"text": {"format": {"type": []}}}, "text.format.type"),  # likewise
    ({"text": {"format": {"type": {"k": 1}}}}, "text.format.type"),
    ({"text": {"verbosity": {"x": 1}}}, "text.verbosity"),
    ({"reasoning": {"effort": 3}}, "reasoning.effort"),
])
def test_hostile_responses_fields_are_400s_naming_them(fuzz_url: str, http: httpx.Client, change: dict,
                                                     param: str) -> None:
    r = http.post(f"{fuzz_url}/v1/responses", json={"model": "echo", "input": "hi", **change})
    assert r.status_code == 400 and r.json()["error"]["param"] == param, r.text[:300]
