"""The server's metrics: read with the OpenTelemetry SDK's in-memory reader, and scraped from GET /metrics."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("opentelemetry.sdk.metrics", reason="the metrics tests read through the OpenTelemetry SDK")

from agent_core.server import ServeSettings, create_app  # noqa: E402
from agent_core.server.metering.metrics import Metrics, prometheus_metrics  # noqa: E402
from agent_core.store import open_store  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from providers._server import ScriptedServer, json_reply  # noqa: E402
from providers._wire import oa_text  # noqa: E402

from ._live import running  # noqa: E402

ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789"


@pytest.fixture
def tokens(tmp_path: Path) -> str:
    path = tmp_path / "tokens.toml"
    path.write_text(f'[[tenants]]\nname = "alice"\ntoken = "{ALICE}"\n\n[[tenants]]\nname = "bob"\ntoken = "{BOB}"\n')
    return str(path)


@pytest.fixture
def measured(tmp_path: Path, tokens: str, server: ScriptedServer) -> Iterator[tuple[str, InMemoryMetricReader]]:
    """A server measured into an in-memory reader, its ``openai`` provider pointed at the scripted ``server``."""
    server.enqueue(oa_text("Hel", "lo", usage={"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}))
    for output in (7, 3):
        server.enqueue(json_reply({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": output, "total_tokens": 11 + output}}))
    reader = InMemoryMetricReader()
    store = open_store(f"sqlite:///{tmp_path / 'sessions.db'}")
    operator = {"base_url": f"{server.url}/v1", "api_key": "sk-x-0123456789", "max_retries": 0}
    app = create_app(store=store, settings=ServeSettings(tokens_file=tokens), config=operator,
                     metrics=Metrics(MeterProvider(metric_readers=[reader])))
    try:
        with running(app) as url:
            yield url, reader
    finally:
        store.close()


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def _chat(url: str, token: str, *, stream: bool, model: str = "echo") -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": "hello there"}], "stream": stream}
    return httpx.post(f"{url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer {token}"},
                      timeout=30)


def test_requests_model_calls_and_tokens_are_measured_per_tenant_and_model(measured: Any) -> None:
    url, reader = measured
    assert _chat(url, ALICE, stream=True, model="openai/m").status_code == 200
    assert _chat(url, ALICE, stream=False, model="openai/m").status_code == 200
    assert _chat(url, BOB, stream=False, model="openai/m").status_code == 200
    points = _points(reader)

    http = {(p.attributes["agent_core.tenant"], p.attributes["http.response.status_code"]): p.count
            for p in points["http.server.request.duration"] if p.attributes["http.route"] == "/v1/chat/completions"}
    assert http == {("alice", 200): 2, ("bob", 200): 1}

    served = {(p.attributes["agent_core.tenant"], p.attributes.get("gen_ai.request.model")): p.count
              for p in points["gen_ai.server.request.duration"]}
    assert served == {("alice", "m"): 2, ("bob", "m"): 1}
    (first,) = points["gen_ai.server.time_to_first_token"]  # the one stream
    assert first.count == 1 and first.attributes["agent_core.tenant"] == "alice" and first.sum > 0
    (upstream_first,) = points["gen_ai.client.operation.time_to_first_chunk"]
    assert upstream_first.count == 1 and upstream_first.sum <= first.sum

    calls = {p.attributes["agent_core.tenant"]: p.count for p in points["gen_ai.client.operation.duration"]}
    assert calls == {"alice": 2, "bob": 1}
    assert all(p.attributes["gen_ai.operation.name"] == "chat" and p.attributes["gen_ai.request.model"] == "m"
               and p.attributes["gen_ai.provider.name"] == "openai" for p in points["gen_ai.client.operation.duration"])
    tokens = {(p.attributes["agent_core.tenant"], p.attributes["gen_ai.token.type"]): (p.count, p.sum)
              for p in points["gen_ai.client.token.usage"]}
    assert tokens == {("alice", "input"): (2, 22), ("alice", "output"): (2, 12),
                      ("bob", "input"): (1, 11), ("bob", "output"): (1, 3)}
    active = {p.attributes["http.request.method"]: p.value for p in points["http.server.active_requests"]}
    assert active == {"POST": 0}  # all ended


def test_errors_are_counted_by_type(measured: Any) -> None:
    url, reader = measured
    assert _chat(url, "wrong-token-0123456789", stream=False).status_code == 401
    assert _chat(url, ALICE, stream=False, model="nosuch/model").status_code in (400, 404)
    points = _points(reader)
    errors = {(p.attributes["agent_core.tenant"], p.attributes.get("error.type"))
              for p in points["http.server.request.duration"]}
    assert ("", "401") in errors  # refused before any tenant was known
    assert any(tenant == "alice" and kind in ("400", "404") for tenant, kind in errors)


def test_session_ids_do_not_become_routes(measured: Any) -> None:
    url, reader = measured
    for sid in ("one", "two", "three"):
        httpx.get(f"{url}/v1/sessions/{sid}", headers={"authorization": f"Bearer {ALICE}"}, timeout=10)
    routes = {p.attributes["http.route"] for p in _points(reader)["http.server.request.duration"]}
    assert routes == {"/v1/sessions/{session_id}"}


def test_metrics_off_registers_nothing(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'sessions.db'}")
    try:
        app = create_app(store=store)
        with running(app) as url:
            assert httpx.get(f"{url}/metrics", timeout=10).status_code == 404
        assert "server_metrics" not in app.state.server.core.plugins("feature")
    finally:
        store.close()


def test_prometheus_endpoint_answers_only_its_token(tmp_path: Path, tokens: str) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'sessions.db'}")
    try:
        app = create_app(store=store, settings=ServeSettings(tokens_file=tokens), metrics=prometheus_metrics(),
                         admin_token="metrics-token-0123456789")
        with running(app) as url:
            assert _chat(url, BOB, stream=True).status_code == 200
            for wrong in ({}, {"authorization": f"Bearer {ALICE}"}, {"authorization": "Bearer metrics-token"}):
                refused = httpx.get(f"{url}/metrics", headers=wrong, timeout=10)
                assert refused.status_code == 401 and "metrics-token" not in refused.text
            scraped = httpx.get(f"{url}/metrics", headers={"authorization": "Bearer metrics-token-0123456789"},
                                timeout=10)
    finally:
        store.close()
    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    lines = scraped.text.splitlines()
    count = next(line for line in lines if line.startswith("gen_ai_client_operation_duration_seconds_count{"))
    assert 'agent_core_tenant="bob"' in count and 'gen_ai_request_model="echo-1"' in count and count.endswith(" 1.0")
    assert any(line.startswith("gen_ai_server_time_to_first_token_seconds_bucket{") for line in lines)
    assert any(line.startswith("http_server_request_duration_seconds_count{") and 'http_route="/metrics"' not in line
               and 'http_response_status_code="401"' not in line for line in lines)
    assert not any("/metrics" in line for line in lines if line.startswith("http_"))  # scrapes are not measured
