"""The server's metrics: OpenTelemetry instruments named by the HTTP and GenAI semantic conventions.

Theory of operation. Metrics are off unless the application hands :func:`create_app` a
:class:`Metrics` (``agent-core serve --admin-token``, or an embedding application's own
meter provider); off, nothing of this module runs, per request or per chunk. On, two
parts record, both through the OpenTelemetry metrics *API* (the provider decides where
the numbers go):

- :class:`MetricsLayer`, an ASGI layer outside the token check, measures each HTTP
  request: ``http.server.request.duration`` (its count is the request count; a status of
  400 and above, or the exception's class, is its ``error.type``),
  ``http.server.active_requests``, and for the model routes ``gen_ai.server.request.duration``.
  It sees the response's start only: a stream's body parts skip the ``send`` wrappers
  (:mod:`.event_stream`), so it costs nothing per chunk.
- :class:`GenAiMetrics`, a feature the server registers on its pipeline, whose observer
  (:mod:`agent_core.engine.observe`) measures each model call:
  ``gen_ai.client.operation.duration``, ``gen_ai.client.operation.time_to_first_chunk`` and
  ``gen_ai.client.token.usage`` (by ``gen_ai.token.type``), and on a stream
  ``gen_ai.server.time_to_first_token``: from the HTTP request's arrival to the upstream's
  first chunk, which the relay passes on at once. Nothing per chunk.

Both carry ``agent_core.tenant`` (the tenant's name; empty without a tokens file) and,
once the pipeline knows it, ``gen_ai.request.model``. They find each other through
:data:`SCOPE`, a context variable holding the request's ASGI scope: the engine hands its
observers' hook in the context the request was made in, so the observer reads the tenant
the token check put in the scope and leaves the model there for the layer.

``GET /metrics`` answers the Prometheus text format when :class:`Metrics` has a scrape
function (the ``metrics`` extra's Prometheus reader), to the admin token only
(:mod:`agent_core.server.metering.admin`). With ``--workers``, a worker's scrape gathers the
other workers' numbers too (:mod:`agent_core.server.metering.exposition`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from socket import gethostname
from typing import Any, ClassVar

from ... import RequestObserver
from ...plugin_kit import Feature
from ..access.guard import TENANT_KEY

__all__ = ["SCOPE", "GenAiMetrics", "Metrics", "MetricsLayer", "prometheus_metrics", "prometheus_reader"]

#: the ASGI scope of the HTTP request being served (set by :class:`MetricsLayer`)
SCOPE: ContextVar[dict[str, Any] | None] = ContextVar("agent_core_server_scope", default=None)
MODEL_KEY = "agent_core.model"
STARTED_KEY = "agent_core.started"
TENANT_ATTR = "agent_core.tenant"
_MODEL_ROUTES = frozenset({"/v1/chat/completions", "/v1/messages", "/v1/responses"})
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
_TOKENS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304)


class _Instruments:
    def __init__(self, meter: Any) -> None:
        def seconds(name: str, what: str) -> Any:
            return meter.create_histogram(name, unit="s", description=what,
                                          explicit_bucket_boundaries_advisory=_SECONDS)

        self.http_duration = seconds("http.server.request.duration", "Duration of HTTP server requests")
        self.active = meter.create_up_down_counter("http.server.active_requests", unit="{request}",
                                                   description="HTTP requests (streams included) in flight")
        self.server_duration = seconds("gen_ai.server.request.duration", "Time to answer a model request")
        self.first_token = seconds("gen_ai.server.time_to_first_token", "Time to the first bytes of a streamed answer")
        self.call_duration = seconds("gen_ai.client.operation.duration", "Duration of a model call upstream")
        self.first_chunk = seconds("gen_ai.client.operation.time_to_first_chunk",
                                   "Time to the upstream's first chunk of a streamed call")
        self.tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}",
                                             description="Tokens used by a request, by gen_ai.token.type",
                                             explicit_bucket_boundaries_advisory=_TOKENS)


class Metrics:
    """What the server measures with, and how ``GET /metrics`` is answered.

    Args:
        meter_provider: an OpenTelemetry ``MeterProvider`` (None: the global one).
        scrape: returns ``(body, content type)`` of the Prometheus text format, or an awaitable of
            them, for ``GET /metrics`` (:mod:`agent_core.server.metering.admin`); None: no such route.
        serving: what runs while the app serves, with async ``start()`` and ``close()`` (the
            workers' sockets a scrape gathers through); the app's lifespan calls them.
    """

    def __init__(self, meter_provider: Any = None, *,
                 scrape: Callable[[], tuple[bytes, str] | Awaitable[tuple[bytes, str]]] | None = None,
                 serving: Any = None) -> None:
        from opentelemetry import metrics

        meter = metrics.get_meter("agent_core.server", meter_provider=meter_provider)
        self.instruments = _Instruments(meter)
        self.scrape = scrape
        self.serving = serving

    async def start(self) -> None:
        if self.serving is not None:
            await self.serving.start()

    async def close(self) -> None:
        if self.serving is not None:
            await self.serving.close()

    def feature(self) -> type[GenAiMetrics]:
        """The feature class to register on the pipeline, bound to these instruments."""
        return type("GenAiMetrics", (GenAiMetrics,), {"instruments": self.instruments,
                                                      "__module__": GenAiMetrics.__module__})

    def layer(self, app: Any) -> MetricsLayer:
        return MetricsLayer(app, self)


def prometheus_metrics() -> Metrics:
    """Metrics on an OpenTelemetry SDK provider of their own, read by ``GET /metrics`` (the ``metrics`` extra).

    Raises:
        ConfigError: the ``metrics`` extra is not installed (with the command that installs it).
    """
    provider, render, kind = prometheus_reader()
    return Metrics(provider, scrape=lambda: (render(), kind))


def prometheus_reader() -> tuple[Any, Callable[[], bytes], str]:
    """An OpenTelemetry SDK meter provider of its own, the function rendering its numbers in the Prometheus
    text format, and that format's content type.

    Raises:
        ConfigError: the ``metrics`` extra is not installed (with the command that installs it).
    """
    from ...errors import ConfigError, install_hint

    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.resources import Resource
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
    except ImportError as exc:
        raise ConfigError(f"metrics (--admin-token) need the metrics extra: {install_hint('metrics')} ({exc})",
                          key="admin_token") from None
    registry = CollectorRegistry()  # the process's own: two apps in one process do not mix their numbers
    # which process measured (with --workers, target_info has its worker label too): service_instance_id
    resource = Resource.create({"service.name": "agent-core", "service.instance.id": f"{gethostname()}:{os.getpid()}"})
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)], resource=resource)
    return provider, lambda: generate_latest(registry), CONTENT_TYPE_LATEST


def _route(path: str) -> str:
    """A bounded ``http.route``: the path of a fixed route, or the template of a route with ids."""
    if path.startswith("/v1/sessions/"):
        rest = path[len("/v1/sessions/"):].split("/", 2)
        return "/v1/sessions/{session_id}" + ("/" + rest[1] if len(rest) > 1 else "")
    if path.startswith("/v1/requests/"):
        return "/v1/requests/{request_id}/approvals/{call_id}" if "/approvals/" in path else \
            "/v1/requests/{request_id}"
    if path.startswith("/v1/models/"):
        return "/v1/models/{model_id}"
    if path.startswith("/console/"):
        return "/console/{name}"
    return path if path.count("/") <= 3 and len(path) <= 40 else "other"


class MetricsLayer:
    """The ASGI layer that measures each request (see the module docstring)."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics
        self.on = metrics.instruments

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = scope[STARTED_KEY] = time.perf_counter()
        status = [0]
        method = {"http.request.method": scope["method"]}

        async def measured(message: Any) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        token = SCOPE.set(scope)
        self.on.active.add(1, method)
        try:
            await self.app(scope, receive, measured)
        except BaseException as exc:
            self._record(scope, started, status[0] or 500, type(exc).__name__)
            raise
        else:
            self._record(scope, started, status[0], None)
        finally:
            self.on.active.add(-1, method)
            SCOPE.reset(token)

    def _record(self, scope: Any, started: float, status: int, error: str | None) -> None:
        took = time.perf_counter() - started
        tenant = scope.get(TENANT_KEY)
        path = scope["path"]
        attrs: dict[str, Any] = {"http.request.method": scope["method"], "http.route": _route(path),
                                 "http.response.status_code": status, TENANT_ATTR: tenant.name if tenant else ""}
        if error or status >= 400:
            attrs["error.type"] = error or str(status)
        self.on.http_duration.record(took, attrs)
        if path in _MODEL_ROUTES or (path.startswith("/v1/sessions/") and path.endswith("/turns")):
            gen = {"gen_ai.operation.name": "chat", TENANT_ATTR: attrs[TENANT_ATTR]}
            if MODEL_KEY in scope:
                gen["gen_ai.request.model"] = scope[MODEL_KEY]
            if "error.type" in attrs:
                gen["error.type"] = attrs["error.type"]
            self.on.server_duration.record(took, gen)


class GenAiMetrics(Feature):
    """Model-call metrics through the engine's observer seam; registered by the server when metrics are on."""

    name = "server_metrics"
    version = "1.0.0"
    default_enabled = True
    instruments: ClassVar[Any] = None  # bound by Metrics.feature()

    def observe_request(self, config: Any, *, context: Any = None) -> Any:
        if self.instruments is None:
            return None
        return _CallMetrics(self.instruments, config, context)


class _CallMetrics(RequestObserver):
    def __init__(self, instruments: _Instruments, config: Any, context: Any) -> None:
        self.on = instruments
        scope = SCOPE.get()  # the hook runs in the context the request was made in: the HTTP request's
        tenant = scope.get(TENANT_KEY) if scope is not None else None
        model = config.get("model")
        provider = context.get("provider") if context is not None else None  # the one that runs
        self.attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", TENANT_ATTR: tenant.name if tenant else ""}
        if isinstance(provider, str) and provider:
            self.attrs["gen_ai.provider.name"] = provider
        if isinstance(model, str) and model:
            self.attrs["gen_ai.request.model"] = model[:200]
            if scope is not None:
                scope[MODEL_KEY] = model[:200]  # for the HTTP layer's gen_ai.server.* numbers
        self.call: float | None = None
        self.started = scope.get(STARTED_KEY) if scope is not None else None  # when the HTTP request came

    def provider_call_started(self, iteration: int, messages: Any) -> None:
        self.call = time.perf_counter()

    def first_chunk(self, iteration: int) -> None:
        now = time.perf_counter()
        if self.call is not None:
            self.on.first_chunk.record(now - self.call, self.attrs)
        if self.started is not None:  # the request's first: what its client waits for, from its arrival
            self.on.first_token.record(now - self.started, {k: v for k, v in self.attrs.items()
                                                            if k != "gen_ai.provider.name"})
            self.started = None

    def provider_call_ended(self, iteration: int, messages: Any) -> None:
        if self.call is not None:
            self.on.call_duration.record(time.perf_counter() - self.call, self.attrs)
            self.call = None

    def request_ended(self, outcome: Any, usage: Any, error: BaseException | None) -> None:
        if self.call is not None:  # the call that was running when the request failed or was cancelled
            failed = {**self.attrs, "error.type": type(error).__name__ if error is not None else "abandoned"}
            self.on.call_duration.record(time.perf_counter() - self.call, failed)
            self.call = None
        for kind, count in (("input", usage.input_tokens), ("output", usage.output_tokens)):
            if count:
                self.on.tokens.record(count, {**self.attrs, "gen_ai.token.type": kind})
