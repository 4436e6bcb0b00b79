"""OpenAI Responses API provider (``POST {base_url}/responses``).

The Responses API is OpenAI's newer interface beside Chat Completions: the
request sends ``input`` items instead of messages, the answer is a list of
``output`` items (text messages, reasoning, function calls), and the stream
is made of semantic events (``response.output_text.delta``,
``response.function_call_arguments.delta``, ``response.completed``...).
Reasoning models keep their reasoning between turns only through it: with
``store: false`` (the default here, since the engine keeps the history) the
API returns each reasoning item with ``encrypted_content``, and the next
request must send that item back.

Unlike ``openai``, this provider carries tools and reasoning itself, through
the provider hooks of the contract (``accepted_tool_schema_formats``,
``emitted_tool_call_formats``): both are part of what an answer *is* in this
API (items of one list, in order), and splitting them over extensions would
make each one rebuild that list. Transport, retries (mid-stream ones
included), cancellation, secrets and typed errors are
:class:`~._base.HTTPProvider`'s, exactly as for ``openai``.

Native history (see :mod:`._responses_wire`): one entry per core message.

* user / system / developer: ``{"role", "content"}`` (an input message);
* tool result: ``{"role": "tool", "tool_call_id", "content"}``, sent as a
  ``function_call_output`` item (kept with ``content`` so extensions that
  trim tool results, ``tool_output_budget``, see it like any other);
* answer: ``{"role": "assistant", "items": [<output items as received>]}``
  plus our ``_`` keys (``_status``, ``_finish_reason``, ``_incomplete_reason``,
  ``_usage``, ``_response_id``, ``_service_tier``), which are never sent.

Shared state while a request runs::

    state["config"]   the effective config, without the API key
    state["request"]  {"url", "payload", "headers"} for the next call
    state["openai_responses"]       the stream buffer (:func:`._responses_stream.fresh_buffer`); None outside a streamed call
    state["openai_responses_text"]  {output_index: Pieces}: streamed text, a key of its own since it
                                    changes on every chunk and the engine freezes only what changed
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agent_core.errors import LLMError
from agent_core.plugin_kit import OPENAI_CHAT, push

from ._base import HTTPProvider
from ._errors import error_from_event, scrub_error
from ._metadata import noted, present
from ._responses_stream import (
    HANDLERS,
    answer_events,
    fresh_buffer,
    is_preamble,
    native_answer,
    streamed_items,
)
from ._responses_wire import (
    CLIENT_ITEM_TYPES,
    answer_fault,
    assistant_items,
    core_calls,
    event_fault,
    failure,
    input_content,
    input_items,
    items_text,
    normalize_usage,
    reasoning_text,
    responses_tools,
)
from ._responses_fields import (
    TEXT_FIELDS,
    instructions_of,
    responses_reasoning,
    responses_text,
    responses_tool_choice,
)
from ._sampling import EXTRA_BODY, OPENAI_FIELDS, checked, optional_fields
from ._sse import JSONEventReader
from .openai import message_text
from .shapes import malformed

__all__ = ["RESPONSES_FIELDS", "OpenAIResponsesProvider", "normalize_usage"]

Dict = dict[str, Any]

#: Optional body fields, sent as they are when set (the engine checks the types, :func:`checked` the bounds).
#: Those the two OpenAI APIs share mean the same in both, so they are Chat Completions' own entries.
RESPONSES_FIELDS: Dict = {
    "max_output_tokens": {"type": "integer", "minimum": 1,
                          "description": "upper bound on generated tokens, reasoning included (wins over max_tokens)"},
    **{key: OPENAI_FIELDS[key] for key in ("top_p", "parallel_tool_calls")},
    "max_tool_calls": {"type": "integer", "minimum": 1, "description": "most tool calls the answer may make"},
    "text": {"type": "object", "description": 'output format and verbosity: {"format": {...}, "verbosity": ...}'},
    "truncation": {"type": "string", "enum": ["auto", "disabled"],
                   "description": '"auto" lets the API drop the middle of an over-long input'},
    "top_logprobs": {"type": "integer", "description": "how many alternatives per token to return"},
    **{key: OPENAI_FIELDS[key] for key in ("user", "safety_identifier", "prompt_cache_key", "service_tier")},
    "metadata": {"type": "object", "description": "up to 16 string pairs stored with the response"},
}

#: Model ids that reason whether asked to or not: without ``store`` their reasoning must come back encrypted.
_REASONING_MODEL = re.compile(r"(?:o[134]|gpt-5|gpt-oss|codex)(?!\d)", re.IGNORECASE)
_ENCRYPTED = "reasoning.encrypted_content"
_TERMINAL = frozenset({"response.completed", "response.incomplete"})
_TEXT_KEY = "openai_responses_text"


# -- the provider ------------------------------------------------------------------------------------


class OpenAIResponsesProvider(HTTPProvider):
    """The Responses API over httpx: streaming (SSE) and non-streaming, sync and async, tools and reasoning.

    Config keys: :meth:`get_config_schema`; ``base_url`` and ``api_key`` fall
    back to ``$OPENAI_BASE_URL`` / ``$OPENAI_API_KEY`` like ``openai``'s.
    Inject clients with ``OpenAIResponsesProvider.using(client=..., async_client=...)``.
    """

    name = "openai_responses"
    version = "0.1.0"
    env_prefix = "OPENAI"
    default_base_url = "https://api.openai.com/v1"
    default_model = "gpt-5-mini"

    def get_config_schema(self) -> Dict:
        """Common keys, ``max_tokens`` (sent as ``max_output_tokens``), reasoning, ``store``, the body fields."""
        return {
            **self._common_schema(),
            "max_tokens": {"type": "integer", "description": "upper bound on generated tokens, sent as "
                           "max_output_tokens (API default when unset)"},
            "instructions": {"type": "string", "description": "the request's top-level instructions (a system "
                             "message for this call; system messages of the session are sent as input items)"},
            "reasoning_effort": {"type": "string", "description": 'reasoning models: "minimal", "low", '
                                 '"medium", "high" (newer models know more); sent as reasoning.effort'},
            "reasoning_summary": {"type": "string", "enum": ["auto", "concise", "detailed", "none"],
                                  "description": 'reasoning.summary; "auto" when reasoning_effort is set, '
                                  '"none" sends no summary request'},
            "store": {"type": "boolean", "default": False, "description": "let the API keep the response; off "
                      "by default: the session holds the history, and reasoning comes back encrypted"},
            "include": {"type": "array", "description": "extra output to include; default "
                        "[\"reasoning.encrypted_content\"] without store for reasoning requests and models"},
            "tool_choice": {"type": ["string", "object"], "description": '"auto", "none", "required", or '
                            '{"type": "function", "name": ...} (the Chat Completions object form is accepted)'},
            **RESPONSES_FIELDS,
            **TEXT_FIELDS,
            **EXTRA_BODY,
        }

    def get_tags(self, config: Dict, models: list[Dict]) -> list[str]:
        return ["provider:openai_responses", "streaming", "tools"]

    def accepted_tool_schema_formats(self, config: Dict, state: Dict | None = None) -> list[str]:
        """Chat Completions functions: the engine adapts every tool to them, the payload flattens them."""
        return [OPENAI_CHAT]

    def emitted_tool_call_formats(self, config: Dict, state: Dict | None = None) -> list[str]:
        """Calls surface as Chat Completions tool calls in ``metadata["tool_calls"]``, as ``openai``'s do."""
        return [OPENAI_CHAT]

    # -- messages ---------------------------------------------------------------------------------

    def to_native_messages(self, messages: list[Dict], state: Dict, *, context: Dict | None = None) -> list[Dict]:
        """One native entry per core message (see the module docstring for the shapes)."""
        out: list[Dict] = []
        for m in messages:
            role = m.get("role") or "user"
            if role == "tool":
                call_id = (m.get("metadata") or {}).get("tool_call_id")
                out.append({"role": "tool", "tool_call_id": call_id, "content": message_text(m.get("content"))})
            elif role == "assistant":
                out.append({"role": "assistant", "items": assistant_items(m)})
            elif role == "system" and (m.get("metadata") or {}).get("instructions") is True:
                out.append({"role": role, "content": input_content(m), "_instructions": True})
            else:
                out.append({"role": role, "content": input_content(m)})
        return out

    def from_native_messages(
        self, native_messages: list[Dict], state: Dict, *, context: Dict | None = None
    ) -> list[Dict]:
        """Core messages: an answer's text as content; calls, reasoning, end and usage in metadata."""
        return [self._core_message(m) for m in native_messages]

    def _core_message(self, native: Mapping[str, Any]) -> Dict:
        role = native.get("role") or "user"
        items = native.get("items")
        if role != "assistant" or not isinstance(items, (list, tuple)):
            metadata: Dict = {}
            if role == "tool":
                metadata["tool_call_id"] = native.get("tool_call_id")
            return {"role": role, "content": _plain_text(native.get("content")), "metadata": metadata}
        metadata = self._api_metadata(native)
        if native.get("_usage"):
            metadata["usage"] = normalize_usage(native["_usage"])
        if native.get("_rate_limits"):
            metadata["rate_limits"] = dict(native["_rate_limits"])
        return {"role": "assistant", "content": items_text(items), "metadata": metadata}

    def _api_metadata(self, message: Mapping[str, Any]) -> Dict:
        """How the answer ended, its calls, reasoning (and the encrypted items), refusal and server-side tools."""
        items = message.get("items") or ()
        metadata = noted(message, ("finish_reason", "status", "incomplete_reason", "response_id", "service_tier"))
        metadata.update(present(
            tool_calls=core_calls(items),
            reasoning=reasoning_text(items),
            # as the API gave them: a history rebuilt from core messages hands the encrypted ones back
            reasoning_items=[dict(i) for i in items if i.get("type") == "reasoning"],
            refusal=items_text(items, "refusal"),
            server_tools=[dict(i) for i in items if i.get("type") not in CLIENT_ITEM_TYPES],
        ))
        return metadata

    # -- the hot path -------------------------------------------------------------------------------

    def process_chunk(
        self, native_chunk: Dict, native_messages: list[Dict], state: Dict
    ) -> tuple[list, list, list, Dict]:
        """Hot path: a text delta becomes a partial; the other events fill the buffer (``HANDLERS``)."""
        kind = native_chunk.get("type")
        if kind == "response.output_text.delta":
            text = native_chunk["delta"]
            if not text:
                return [], [], native_messages, state
            texts = state.get(_TEXT_KEY) or {}
            index = native_chunk.get("output_index") or 0
            state = {**state, _TEXT_KEY: {**texts, index: push(texts.get(index), text)}}
            return [{"role": "assistant", "content": text}], [], native_messages, state
        handler = HANDLERS.get(kind)  # type: ignore[arg-type]
        if handler is None:
            return [], [], native_messages, state
        partials, buffer = handler(state["openai_responses"], native_chunk)
        return partials, [], native_messages, {**state, "openai_responses": buffer}

    def finalize(
        self, native_messages: list[Dict], state: Dict, *, context: Dict | None = None
    ) -> tuple[list, list, Dict]:
        """The streamed answer as one native assistant entry (nothing after ``call_api``)."""
        buffer = state.get("openai_responses")
        if buffer is None:
            return [], native_messages, state
        items = streamed_items(buffer, state.get(_TEXT_KEY) or {})
        message = native_answer(items, buffer.get("response"))
        return [message], [*native_messages, message], {**state, "openai_responses": None, _TEXT_KEY: None}

    # -- API specifics for HTTPProvider -----------------------------------------------------------

    def _api_url(self, base_url: str) -> str:
        return f"{base_url}/responses"

    def _api_payload(self, native_messages: list[Dict], config: Mapping[str, Any]) -> Dict:
        """The body: input items, then what the config asks for.

        Raises:
            ConfigError: a field outside what the schema allows (``truncation``, ``max_output_tokens``...).
        """
        config = checked(config, {**RESPONSES_FIELDS, **self._enum_fields()}, self.name)
        store = bool(config.get("store", False))
        model = str(config.get("model") or self.default_model)
        instructions, native_messages = instructions_of(native_messages, config.get("instructions"))
        payload: Dict = {"model": model, "input": input_items(native_messages, store), "store": store}
        if instructions:
            payload["instructions"] = instructions
        if config.get("temperature") is not None:
            payload["temperature"] = config["temperature"]
        if config.get("max_tokens") and config.get("max_output_tokens") is None:
            payload["max_output_tokens"] = config["max_tokens"]
        reasoning = responses_reasoning(config)
        if reasoning:
            payload["reasoning"] = reasoning
        include = config.get("include")
        if include is None and not store and (reasoning or _REASONING_MODEL.match(model)):
            include = [_ENCRYPTED]
        if include:
            payload["include"] = list(include)
        if config.get("tools"):
            payload["tools"] = responses_tools(config["tools"])
            if config.get("tool_choice") is not None:
                payload["tool_choice"] = responses_tool_choice(config["tool_choice"])
        payload.update(optional_fields(config, RESPONSES_FIELDS))
        text = responses_text(config)
        if text is not None:
            payload["text"] = text
        return payload

    def _enum_fields(self) -> Dict:
        schema = self.get_config_schema()
        return {"reasoning_summary": schema["reasoning_summary"]}

    def _api_fresh_buffer(self) -> Dict:
        return {"openai_responses": fresh_buffer(), _TEXT_KEY: None}

    def _api_native_message(self, message: Mapping[str, Any]) -> Dict:  # to_native_messages is overridden
        return self.to_native_messages([dict(message)], {})[0]

    def _api_text(self, content: Any) -> str:
        return _plain_text(content)

    def _api_usage(self, usage: Mapping[str, Any]) -> Dict:
        return normalize_usage(usage)

    def _api_auth_headers(self, api_key: str) -> Dict:
        return {"authorization": f"Bearer {api_key}"}

    def _api_models_url(self, base_url: str) -> str:
        return f"{base_url}/models"

    def _api_reader(self, secrets: tuple[str, ...]) -> JSONEventReader:
        name = self.name

        def classify(event: str, value: Dict) -> Any:
            kind = value.get("type")
            if kind == "response.output_text.delta" and type(value.get("delta")) is str:
                return None  # most of the stream: nothing else to check
            if kind == "error" or (kind is None and "error" in value):
                return error_from_event(name, value, secrets)
            fault = event_fault(value)
            if fault is not None:
                return malformed(name, value, fault, secrets)
            if kind in _TERMINAL or kind == "response.failed":
                response = value.get("response") or {}
                if response.get("usage"):
                    reader.usage = response["usage"]  # noted for a retry that throws this attempt away
                if kind == "response.failed":
                    return failure(name, response.get("error"), secrets)
                return "last"
            if kind == "response.output_item.added" and value["item"]["type"] not in CLIENT_ITEM_TYPES:
                reader.repeatable = False  # the API runs this tool itself: a repeat would run it (and bill it) again
            return None

        reader = JSONEventReader(name, classify, done_data=b"[DONE]", is_preamble=is_preamble,
                                 normalize_usage=normalize_usage)
        return reader

    def _api_native_from_answer(self, answer: Any) -> Dict:
        """A response object (``stream: false``) as the native answer; a failed one raises its typed error."""
        if isinstance(answer, Mapping) and answer.get("error"):
            err = answer["error"]
            if answer.get("object") == "response" or answer.get("status") == "failed":
                raise failure(self.name, err, self._secrets())
            raise error_from_event(self.name, answer, self._secrets())
        fault = answer_fault(answer)
        if fault is None and type(answer.get("output")) is not list:
            fault = "the response has no output list"
        if fault is not None:
            raise malformed(self.name, answer, fault, self._secrets())
        if answer.get("status") == "failed":
            raise failure(self.name, None, self._secrets())
        return native_answer([dict(i) for i in answer["output"]], answer)

    def _api_events_from_answer(self, answer: Any) -> list[Dict]:
        """A JSON answer to a streaming request, replayed as its stream (checked, and raised when failed, first)."""
        try:
            self._api_native_from_answer(answer)
        except LLMError as exc:
            raise scrub_error(exc, self._secrets()) from exc.__cause__
        return answer_events(answer)


def _plain_text(content: Any) -> str:
    """The text of an input message's content: a string, or its text parts (any ``*text`` part type)."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        return "".join(
            p.get("text") or "" for p in content
            if isinstance(p, Mapping) and str(p.get("type", "")).endswith("text")
        )
    return message_text(content)
