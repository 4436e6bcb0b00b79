"""``otel``: OpenTelemetry spans for each request, provider call and tool call (GenAI conventions).

Opt-in (``enabled_plugins=["otel"]``) and built on the OpenTelemetry *API* only
(the ``otel`` extra): the operator installs and sets up the SDK and exporter,
and without one every span is the API's no-op. A request gives this tree:

* ``invoke_agent`` (or ``invoke_agent {otel_agent_name}``): the whole request, a
  child of the caller's current span (for ``agent-core serve``, of the
  request's ``traceparent`` header);
* ``chat {model}``: one per provider call, a child of the request span, with
  the sampling settings, finish reasons, token usage and
  ``gen_ai.response.time_to_first_chunk`` (seconds, streamed calls);
* ``execute_tool {tool}``: one per tool call, a child of the request span.

A failed request ends every open span with ``error.type`` set to the typed
error's class name (``RateLimitError``) and status ERROR. Message contents,
tool arguments and tool results are recorded only with
``otel_capture_content: true`` (:mod:`.otel_spans` says where); config values
other than the model and the sampling numbers never are, so no key reaches a span.

The engine tells the spans where the request is through the observer seam
(:mod:`agent_core.engine.observe`): nothing here runs per streamed chunk.

Without the OpenTelemetry API installed this module still imports (it is
found by entry point in every install); enabling the feature then fails
before anything is sent, with a ``ConfigError`` saying what to install.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agent_core.errors import ConfigError, install_hint
from agent_core.plugin_kit import Feature

__all__ = ["OtelFeature", "opentelemetry_trace"]


def opentelemetry_trace() -> Any:
    """The ``opentelemetry.trace`` module, imported on first use.

    Raises:
        ConfigError: the OpenTelemetry API is not installed (with the command that installs it).
    """
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ConfigError(
            f"the otel feature needs the OpenTelemetry API: {install_hint('otel')}", key="enabled_plugins",
        ) from exc
    return trace


class OtelFeature(Feature):
    """Spans for requests, provider calls and tool calls; see the module docstring."""

    name = "otel"
    version = "1.0.0"
    default_enabled = False  # opt-in: enabled_plugins=["otel"]
    config_schema: ClassVar[dict[str, Any]] = {
        "otel_capture_content": {
            "type": "boolean", "default": False,
            "description": "Record message contents, tool arguments and tool results on the spans "
                           "(they may hold personal data; off by default).",
        },
        "otel_agent_name": {
            "type": "string", "default": "",
            "description": "gen_ai.agent.name of the request span, also in its name (invoke_agent NAME).",
        },
    }
    #: None: the global tracer provider (``opentelemetry.trace.set_tracer_provider``); see :meth:`using`
    tracer_provider: Any = None

    @classmethod
    def using(cls, tracer_provider: Any) -> type[OtelFeature]:
        """This feature bound to ``tracer_provider`` instead of the global one, under the same name.

        For tests and for applications with more than one pipeline:
        ``AgentCore.discover(features=[OtelFeature.using(provider)])``.
        """
        return type(cls.__name__, (cls,), {"tracer_provider": tracer_provider, "__module__": cls.__module__})

    def init(self, config: Any, state: Any) -> Any:
        opentelemetry_trace()  # enabled without the API: say so before anything is sent
        return state

    def observe_request(self, config: Any, *, context: Any = None) -> Any:
        from .otel_spans import RequestSpans

        trace = opentelemetry_trace()
        tracer = trace.get_tracer("agent_core", self.version, tracer_provider=self.tracer_provider)
        return RequestSpans(tracer, config, context or {})
