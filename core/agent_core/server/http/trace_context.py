"""A request's W3C ``traceparent`` header as the parent of the spans its turn makes.

When the OpenTelemetry API is installed (the ``otel`` extra), :func:`with_trace_context`
wraps the app in an ASGI layer that reads ``traceparent`` and ``tracestate``
with the API's W3C Trace Context propagator and makes that remote span
context current while the request is answered, its streamed body included.
The engine hands the context current when a request is made to its observers
(``agent_core.engine.observe``), so the ``otel`` feature's ``invoke_agent`` span is
a child of the caller's span, and the provider-call and tool spans its children.

Only those two headers are read, by the W3C propagator itself, never the
operator's configured propagators: a client's ``baggage`` header is not taken
in, so nothing a client writes is passed on to the upstream by an instrumented
HTTP client. A malformed header is ignored (the propagator checks its format,
and ``tracestate`` is bounded by the API); the request is answered as without
it. When a span is already current (an outer layer, such as the operator's own
ASGI instrumentation, made the request's HTTP span from the same header), it
is left as the parent. Without the API installed the app is returned as it is.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TRACE_HEADERS", "with_trace_context"]

#: the headers read, as ASGI gives them (lower case bytes)
TRACE_HEADERS = (b"traceparent", b"tracestate")


class _TraceContext:
    """The ASGI layer: attach the header's context for the request's whole life, then detach it."""

    def __init__(self, app: Any) -> None:
        from opentelemetry import context, trace
        from opentelemetry.trace.propagation.tracecontext import (
            TraceContextTextMapPropagator,
        )

        self.app = app
        self._propagator = TraceContextTextMapPropagator()
        self._context = context
        self._current_span = trace.get_current_span

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        carrier: dict[str, str] = {}
        if scope.get("type") == "http":
            for name, value in scope.get("headers") or ():
                if name in TRACE_HEADERS and name.decode() not in carrier:  # the first of each
                    carrier[name.decode()] = value.decode("latin-1")
        if "traceparent" not in carrier or self._current_span().get_span_context().is_valid:
            # no header; or an outer layer (the operator's ASGI instrumentation) already made a
            # span for this request from it: that span stays the parent
            await self.app(scope, receive, send)
            return
        token = self._context.attach(self._propagator.extract(carrier))
        try:
            await self.app(scope, receive, send)
        finally:
            self._context.detach(token)


def with_trace_context(app: Any) -> Any:
    """``app`` reading ``traceparent`` when the OpenTelemetry API is installed; else ``app`` itself."""
    try:
        import opentelemetry.trace.propagation.tracecontext  # noqa: F401
    except ImportError:
        return app
    return _TraceContext(app)
