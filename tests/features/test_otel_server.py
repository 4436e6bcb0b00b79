"""``agent-core serve`` over real HTTP: a request's ``traceparent`` header parents its turn's spans.

A uvicorn server on 127.0.0.1 runs ``create_app`` with the ``otel`` feature bound to an
in-memory SDK exporter. A client sends a W3C ``traceparent``; the turn's ``invoke_agent``
span is its child (same trace id, the header's span as parent), and the provider-call
span is the request span's child, streamed or not, on both facades and the sessions API.
A request without the header starts its own trace; a malformed header is ignored and
the request answered as usual; a ``baggage`` header is not taken in.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="agent-core serve needs the server extra")
pytest.importorskip("opentelemetry.sdk", reason="the otel tests need opentelemetry-sdk (the test extra)")

from agent_core import AgentCore
from agent_core.server import create_app
from agent_core.store import open_store
from agent_core_features.otel import OtelFeature
from opentelemetry import baggage
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from server._live import running

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


class Seen:
    """Spans exported, and the baggage the observer found current when each request began."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.baggage: list[dict[str, Any]] = []

    def spans(self, name: str) -> list[Any]:
        return [s for s in self.exporter.get_finished_spans() if s.name == name]


@pytest.fixture
def served(tmp_path: Any) -> Iterator[tuple[str, Seen]]:
    seen = Seen()
    bound = OtelFeature.using(seen.provider)

    class Recording(bound):  # type: ignore[misc, valid-type]
        def observe_request(self, config: Any, *, context: Any = None) -> Any:
            seen.baggage.append(dict(baggage.get_all(otel_context.get_current())))
            return super().observe_request(config, context=context)

    core = AgentCore.discover(features=[Recording])
    store = open_store(f"sqlite:///{tmp_path / 'sessions.db'}")
    try:
        with running(create_app(core, store=store, config={"enabled_plugins": ["otel"]})) as url:
            yield url, seen
    finally:
        store.close()


def _chat(url: str, headers: dict[str, str], *, stream: bool) -> httpx.Response:
    body = {"model": "echo", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    return httpx.post(f"{url}/v1/chat/completions", json=body, headers=headers, timeout=30)


def _children_of_the_header(seen: Seen) -> Any:
    (request,) = seen.spans("invoke_agent")
    assert f"{request.context.trace_id:032x}" == TRACE_ID
    assert f"{request.parent.span_id:016x}" == PARENT_ID and request.parent.is_remote
    (chat,) = seen.spans("chat echo-1")
    assert chat.parent.span_id == request.context.span_id and chat.context.trace_id == request.context.trace_id
    return request


@pytest.mark.parametrize("stream", [False, True])
def test_the_traceparent_header_is_the_parent_of_the_turn(served, stream):
    url, seen = served
    response = _chat(url, {"traceparent": TRACEPARENT}, stream=stream)
    assert response.status_code == 200
    assert "Echo:" in response.text and "hi" in response.text  # streamed word by word, or whole
    request = _children_of_the_header(seen)
    assert request.attributes["agent_core.outcome.status"] == "finished"


def test_the_anthropic_facade_too(served):
    url, seen = served
    body = {"model": "echo", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    response = httpx.post(f"{url}/v1/messages", json=body, headers={"traceparent": TRACEPARENT}, timeout=30)
    assert response.status_code == 200
    _children_of_the_header(seen)


def test_the_responses_facade_too(served):
    url, seen = served
    body = {"model": "echo", "input": "hi", "stream": False}
    response = httpx.post(f"{url}/v1/responses", json=body, headers={"traceparent": TRACEPARENT}, timeout=30)
    assert response.status_code == 200, response.text
    _children_of_the_header(seen)


def test_a_session_turn_too(served):
    url, seen = served
    assert httpx.post(f"{url}/v1/sessions", json={"id": "chat-1"}, timeout=30).status_code == 201
    turn = httpx.post(f"{url}/v1/sessions/chat-1/turns", json={"message": "hi", "config": {"provider": "echo"}},
                      headers={"traceparent": TRACEPARENT}, timeout=30)
    assert turn.status_code == 200 and '"done"' in turn.text, turn.text
    _children_of_the_header(seen)


def test_without_the_header_the_turn_starts_its_own_trace(served):
    url, seen = served
    assert _chat(url, {}, stream=True).status_code == 200
    (request,) = seen.spans("invoke_agent")
    assert request.parent is None and f"{request.context.trace_id:032x}" != TRACE_ID


@pytest.mark.parametrize("bad", ["00-zzzz-00f067aa0ba902b7-01", "not a traceparent", "00-" + "0" * 32 + "-"
                                 + PARENT_ID + "-01", "x" * 4000])
def test_a_malformed_header_is_ignored(served, bad):
    url, seen = served
    response = _chat(url, {"traceparent": bad}, stream=False)
    assert response.status_code == 200 and "Echo: hi" in response.text
    (request,) = seen.spans("invoke_agent")
    assert request.parent is None


def test_a_clients_baggage_is_not_taken_in(served):
    url, seen = served
    response = _chat(url, {"traceparent": TRACEPARENT, "baggage": "tenant=someone-else,role=admin"}, stream=False)
    assert response.status_code == 200
    _children_of_the_header(seen)
    assert seen.baggage == [{}]


def test_an_outer_http_span_stays_the_parent(tmp_path):
    """An operator's own ASGI instrumentation outside the app: its span, not the raw header, parents the turn."""
    from opentelemetry.trace.propagation.tracecontext import (
        TraceContextTextMapPropagator,
    )

    seen = Seen()
    tracer = seen.provider.get_tracer("outer-instrumentation")
    core = AgentCore.discover(features=[OtelFeature.using(seen.provider)])
    store = open_store(f"sqlite:///{tmp_path / 'sessions.db'}")
    inner = create_app(core, store=store, config={"enabled_plugins": ["otel"]})

    async def instrumented(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        parent = TraceContextTextMapPropagator().extract(headers)
        with tracer.start_as_current_span("POST", context=parent):
            await inner(scope, receive, send)

    try:
        with running(instrumented) as url:
            assert _chat(url, {"traceparent": TRACEPARENT}, stream=True).status_code == 200
    finally:
        store.close()
    (http,) = seen.spans("POST")
    (request,) = seen.spans("invoke_agent")
    assert f"{http.parent.span_id:016x}" == PARENT_ID
    assert request.parent.span_id == http.context.span_id


_SITECUSTOMIZE = '''
import json, os
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class ToFile(SpanExporter):
    def export(self, spans):
        with open(os.environ["SPANS_FILE"], "a") as out:
            for s in spans:
                out.write(json.dumps({"name": s.name, "trace": f"{s.context.trace_id:032x}",
                                      "span": f"{s.context.span_id:016x}",
                                      "parent": f"{s.parent.span_id:016x}" if s.parent else None}) + "\\n")
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ToFile()))
trace.set_tracer_provider(provider)
'''


@pytest.mark.slow
def test_agent_core_serve_with_the_operators_own_sdk(tmp_path):
    """The command itself: the SDK set up before it starts (as ``opentelemetry-instrument`` does, through
    ``sitecustomize``), the feature on in the operator's config, a client's traceparent the parent."""
    import json

    from server._live import start_serve, stop_serve

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    spans_file = tmp_path / "spans.jsonl"
    proc, url = start_serve(tmp_path / "home", "-c", 'enabled_plugins=["otel"]',
                            env={"PYTHONPATH": str(site), "SPANS_FILE": str(spans_file)})
    try:
        assert _chat(url, {"traceparent": TRACEPARENT}, stream=True).status_code == 200
    finally:
        stop_serve(proc)
    spans = {s["name"]: s for s in map(json.loads, spans_file.read_text().splitlines())}
    assert set(spans) == {"invoke_agent", "chat echo-1"}
    assert spans["invoke_agent"]["trace"] == spans["chat echo-1"]["trace"] == TRACE_ID
    assert spans["invoke_agent"]["parent"] == PARENT_ID
    assert spans["chat echo-1"]["parent"] == spans["invoke_agent"]["span"]
