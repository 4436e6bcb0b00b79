"""The spans of one request: :class:`RequestSpans`, the observer the ``otel`` feature gives the engine.

Names and attributes follow OpenTelemetry's GenAI semantic conventions
(``gen_ai.*``, development status). ``gen_ai.provider.name`` is the current
name of the provider attribute; ``gen_ai.system``, the name conventions up to
1.36 used, is set beside it on provider-call spans for backends that still
read it. Our own attributes are under ``agent_core.*``.

Parent links are explicit: the request span's parent is the context current
where the request was made (the engine runs ``observe_request`` there), and
every other span's parent is the request span. Nothing is made current, so a
stream read on another thread or task cannot put a span under the wrong parent.

With ``otel_capture_content`` the spans also carry, as JSON text:
``gen_ai.input.messages`` (the conversation a provider call answers),
``gen_ai.output.messages`` (its answer), ``gen_ai.tool.call.arguments`` and
``gen_ai.tool.call.result``, and a failed tool's error text as the span's
status description. Without it none of these is read.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from agent_core import Message, Outcome, RequestObserver, Usage, thaw

__all__ = ["GEN_AI_PROVIDERS", "SAMPLING", "RequestSpans", "provider_name"]

#: our provider plugin -> the conventions' provider name, where they differ
GEN_AI_PROVIDERS = {"openai_responses": "openai"}
#: config key -> request attribute, for the sampling settings that are numbers
SAMPLING = {
    "temperature": "gen_ai.request.temperature", "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k", "max_tokens": "gen_ai.request.max_tokens",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty", "seed": "gen_ai.request.seed",
}


def provider_name(plugin: str) -> str:
    return GEN_AI_PROVIDERS.get(plugin, plugin)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _json(value: Any) -> str:
    return json.dumps(thaw(value), ensure_ascii=False, default=str)


def _parts(message: Message) -> list[dict[str, Any]]:
    """A message's content as the conventions' parts: text, tool calls, a tool's answer."""
    parts: list[dict[str, Any]] = []
    if message.role == "tool":
        parts.append({"type": "tool_call_response", "id": message.metadata.get("tool_call_id"),
                      "response": thaw(message.content)})
        return parts
    if message.content:
        text = message.content if isinstance(message.content, str) else _json(message.content)
        parts.append({"type": "text", "content": text})
    for call in message.metadata.get("tool_calls") or ():
        if isinstance(call, Mapping):
            function = call.get("function") if isinstance(call.get("function"), Mapping) else {}
            parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"),
                          "arguments": thaw(function.get("arguments"))})
    return parts


def _finish_reason(message: Message) -> str | None:
    reason = message.metadata.get("finish_reason") or message.metadata.get("stop_reason")
    return str(reason) if reason else None


class RequestSpans(RequestObserver):
    """One request's spans. Built by ``OtelFeature.observe_request`` in the caller's context."""

    def __init__(self, tracer: Any, config: Mapping[str, Any], context: Mapping[str, Any]) -> None:
        from opentelemetry import context as otel_context
        from opentelemetry import trace

        self._trace = trace
        self.tracer = tracer
        self.capture = bool(config.get("otel_capture_content"))
        self.stream = bool(context.get("stream"))
        model = config.get("model")
        self.model = model if isinstance(model, str) and model else None
        self.provider = provider_name(str(context.get("provider") or ""))
        self.sampling = {attr: config[key] for key, attr in SAMPLING.items() if _number(config.get(key))}
        stop = config.get("stop")
        if isinstance(stop, str) or (isinstance(stop, Sequence) and all(isinstance(s, str) for s in stop)):
            self.sampling["gen_ai.request.stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
        agent = config.get("otel_agent_name")
        attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": self.provider,
                                      "agent_core.request_id": str(context.get("request_id") or "")}
        if agent:
            attributes["gen_ai.agent.name"] = str(agent)
        if self.model:
            attributes["gen_ai.request.model"] = self.model
        if context.get("session_id"):
            attributes["gen_ai.conversation.id"] = str(context["session_id"])
        parent = otel_context.get_current()
        self.request = tracer.start_span(f"invoke_agent {agent}" if agent else "invoke_agent", context=parent,
                                         kind=trace.SpanKind.INTERNAL, attributes=attributes,
                                         start_time=context.get("started_ns"))
        self.parent = trace.set_span_in_context(self.request, parent)
        self.call: Any = None  # the open provider call's span
        self.call_started = 0.0
        self.tools: dict[str, Any] = {}  # call id -> the open tool span
        self.calls = 0

    # -- provider calls ------------------------------------------------------------

    def provider_call_started(self, iteration: int, messages: Sequence[Message]) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": self.provider, "gen_ai.system": self.provider,
            "gen_ai.request.stream": self.stream, "agent_core.iteration": iteration, **self.sampling,
        }
        if self.model:
            attributes["gen_ai.request.model"] = self.model
        if self.capture:
            attributes["gen_ai.input.messages"] = _json([{"role": m.role, "parts": _parts(m)} for m in messages])
        self.calls += 1
        self.call_started = time.perf_counter()
        self.call = self.tracer.start_span(f"chat {self.model}" if self.model else "chat", context=self.parent,
                                           kind=self._trace.SpanKind.CLIENT, attributes=attributes)

    def first_chunk(self, iteration: int) -> None:
        if self.call is not None:
            self.call.set_attribute("gen_ai.response.time_to_first_chunk", time.perf_counter() - self.call_started)

    def provider_call_ended(self, iteration: int, messages: Sequence[Message]) -> None:
        span, self.call = self.call, None
        if span is None:
            return
        answers = [m for m in messages if m.role == "assistant"]
        reasons = [r for r in map(_finish_reason, answers) if r]
        if reasons:
            span.set_attribute("gen_ai.response.finish_reasons", reasons)
        tokens = [0, 0]
        for m in answers:
            usage = m.metadata.get("usage")
            for i, key in enumerate(("input_tokens", "output_tokens")):
                if isinstance(usage, Mapping) and _number(usage.get(key)):
                    tokens[i] += int(usage[key])
        span.set_attribute("gen_ai.usage.input_tokens", tokens[0])
        span.set_attribute("gen_ai.usage.output_tokens", tokens[1])
        for key, attr in (("response_id", "gen_ai.response.id"), ("model", "gen_ai.response.model")):
            found = next((m.metadata[key] for m in answers if isinstance(m.metadata.get(key), str)), None)
            if found:
                span.set_attribute(attr, found)
        if self.capture:
            span.set_attribute("gen_ai.output.messages", _json(
                [{"role": m.role, "parts": _parts(m), "finish_reason": _finish_reason(m) or ""} for m in answers]))
        span.end()

    # -- tool calls ------------------------------------------------------------------

    def tool_started(self, iteration: int, call_id: str, tool_name: str, payload: Any) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool_name, "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function", "agent_core.iteration": iteration,
        }
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = payload if isinstance(payload, str) else _json(payload)
        self.tools[call_id] = self.tracer.start_span(f"execute_tool {tool_name}", context=self.parent,
                                                     kind=self._trace.SpanKind.INTERNAL, attributes=attributes)

    def tool_ended(self, call_id: str, message: Message) -> None:
        span = self.tools.pop(call_id, None)
        if span is None:
            return
        result = message.tool_result if isinstance(message.tool_result, Mapping) else {}
        success = bool(result.get("success"))
        span.set_attribute("agent_core.tool.success", success)
        if self.capture and success:
            span.set_attribute("gen_ai.tool.call.result", _json(result.get("result")))
        if not success:
            span.set_attribute("error.type", "tool_error")
            detail = str(result.get("error")) if self.capture and result.get("error") is not None else None
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, detail))
        span.end()

    # -- the end -----------------------------------------------------------------------

    def request_ended(self, outcome: Outcome, usage: Usage, error: BaseException | None) -> None:
        open_spans = [s for s in (self.call, *self.tools.values()) if s is not None]
        self.call, self.tools = None, {}
        for span in open_spans:  # what was running when the request failed failed with it
            self._failed(span, error, outcome)
            span.end()
        span = self.request
        span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
        span.set_attribute("agent_core.provider_calls", self.calls)
        span.set_attribute("agent_core.outcome.status", outcome.status)
        if outcome.reason:
            span.set_attribute("agent_core.outcome.reason", outcome.reason)
        if error is not None or outcome.reason == "cancelled":  # failed, cancelled, or abandoned by its reader
            self._failed(span, error, outcome)
        span.end()

    def _failed(self, span: Any, error: BaseException | None, outcome: Outcome) -> None:
        """Mark ``span`` as ended by ``error`` (its class is ``error.type``), or by ``outcome`` without one."""
        if error is None:
            span.set_attribute("error.type", outcome.reason or "_OTHER")
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, outcome.detail or None))
            return
        span.set_attribute("error.type", type(error).__name__)
        span.record_exception(error)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, str(error)))
