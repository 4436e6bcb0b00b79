"""OpenAI Chat Completions provider: OpenAI and the servers that speak its API.

vLLM, Ollama (``/v1``), llama.cpp's server, LM Studio, LiteLLM and
OpenRouter all accept this wire format, so pointing ``base_url`` at them is
all it takes (``api_key`` may stay unset for local servers).

This provider carries transport and text only. Tool calling and reasoning
are provider extensions (:mod:`agent_core_plugins.openai_tools`,
:mod:`agent_core_plugins.openai_reasoning`), enabled by default through the
``provider:openai`` tag; without them this is a plain chat provider.

Shared state while a request runs::

    state["config"]   the effective config, without the API key
    state["request"]  {"url", "payload", "headers"} for the next call
    state["openai"]   the stream buffer: {"refusal": Pieces, "finish_reason",
                      "usage"}; None outside a streamed call
    state["openai_text"]  the streamed text so far (Pieces), a key of its own:
                      it changes on every chunk, and the engine freezes only
                      what changed, so the rest of the buffer is not copied

Native messages are Chat Completions messages. Keys starting with ``_`` are
ours and never sent: ``_finish_reason``, ``_usage`` and ``_logprobs`` on an assistant
answer, so they survive in the native history and reach the core message's
metadata (extensions add their own, e.g. ``openai_tools``'s
``_incomplete_tool_calls``). The payload's messages are 1:1 with the native
history, in order, so an extension may drop one by position.

Every event is checked against the shapes in :mod:`.shapes` before any hook
sees it: valid JSON in a shape the API never uses is a
:class:`~agent_core.errors.MalformedResponseError`, not a crash in a plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_core.plugin_kit import push, pushed, replace_final, text_of

from ._base import HTTPProvider
from ._errors import error_from_event
from ._metadata import noted
from ._openai_answer import NOTES, answer_notes, normalize_usage
from ._openai_parts import multipart_parts
from ._sampling import (
    EXTRA_BODY,
    OPENAI_FIELDS,
    TOKEN_LIMIT_FIELD,
    checked,
    optional_fields,
    token_limit,
)
from ._sse import JSONEventReader
from ._text import json_text, message_text
from .shapes import malformed, openai_answer_fault, openai_chunk_fault

__all__ = [
    "OpenAIProvider",
    "message_text",
    "normalize_usage",
    "openai_content",
    "replace_final",
    "thinking_text",
]

Dict = dict[str, Any]

# Fields an API answer carries that a request message must not (DeepSeek and
# others reject their own reasoning_content when it is sent back).
RESPONSE_ONLY_KEYS = frozenset({"reasoning_content", "reasoning", "reasoning_details", "refusal", "annotations"})


def _chained(link: Any) -> list[Any]:
    """The items of a ``(previous link, items)`` chain in order: built per chunk without copying what came before."""
    parts = []
    while link is not None:
        link, items = link
        parts.append(items)
    return [item for items in reversed(parts) for item in items]


# -- message conversion helpers (also used by the openai_* extensions) -----------------


def _text_part(text: str) -> Dict:
    return {"type": "text", "text": text}


def _image_part(url: str, detail: Any) -> Dict:
    return {"type": "image_url", "image_url": {"url": url, "detail": detail} if detail else {"url": url}}


def openai_content(message: Mapping[str, Any]) -> Any:
    """A core message's ``content`` (+ ``multipartContent``) as Chat Completions content.

    Text stays a string; with multipart items it becomes a list of parts
    (the text first, then text and ``image_url`` parts). Items of other
    types are left out: the API has no part for them.
    """
    content = message.get("content")
    multipart = message.get("multipartContent")
    if not multipart:
        if content is None or isinstance(content, (str, list)):
            return content if content is not None else ""
        return json_text(content)
    parts: list[Any] = []
    if isinstance(content, str):
        if content:
            parts.append({"type": "text", "text": content})
    elif isinstance(content, list):
        parts.extend(content)
    parts.extend(multipart_parts(multipart, _text_part, _image_part))
    return parts


def thinking_text(content: Any) -> str:
    """The thinking in a list of typed content parts (Mistral's Magistral models), else ``""``.

    Such a part is ``{"type": "thinking", "thinking": [<text parts>]}`` (a
    plain string is accepted too); text parts are what :func:`message_text`
    reads, so the two never overlap.
    """
    if not isinstance(content, list):
        return ""
    out: list[str] = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "thinking":
            inner = part.get("thinking")
            out.append(inner if isinstance(inner, str) else message_text(inner))
    return "".join(out)


def _is_preamble(chunk: Mapping[str, Any]) -> bool:
    """A chunk with nothing in it yet but the role (safe to see again after a retry)."""
    if chunk.get("usage"):
        return False
    choices = chunk.get("choices")
    if not choices:
        return True
    if choices[0].get("finish_reason"):
        return False
    delta = choices[0].get("delta") or {}
    return not any(value for key, value in delta.items() if key != "role")


def _wire(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """A native message as sent: without our ``_`` keys, answer-only fields and thinking parts.

    Thinking parts of an assistant's content list (Mistral) are reasoning
    too, so, like ``reasoning_content``, they are not sent back.
    """
    content = message.get("content")
    if isinstance(content, list) and message.get("role") == "assistant":
        kept = [p for p in content if not (isinstance(p, Mapping) and p.get("type") == "thinking")]
        if len(kept) != len(content):
            message = {**message, "content": kept}
    for key in message:
        if key[0] == "_" or key in RESPONSE_ONLY_KEYS:
            return {k: v for k, v in message.items() if k[0] != "_" and k not in RESPONSE_ONLY_KEYS}
    return message


# -- the provider -------------------------------------------------------------------


class OpenAIProvider(HTTPProvider):
    """Chat Completions over httpx: streaming (SSE) and non-streaming, sync and async.

    Config keys: see :meth:`get_config_schema` (``base_url`` and ``api_key``
    fall back to ``$OPENAI_BASE_URL`` / ``$OPENAI_API_KEY``; config wins).
    Inject clients with ``OpenAIProvider.using(client=..., async_client=...)``.
    """

    name = "openai"
    version = "0.1.0"
    env_prefix = "OPENAI"
    default_base_url = "https://api.openai.com/v1"
    default_model = "gpt-4o-mini"

    def get_config_schema(self) -> Dict:
        """Common keys, ``max_tokens`` and the field that carries it, the optional body fields, ``extra_body``."""
        return {
            **self._common_schema(),
            "max_tokens": {
                "type": "integer",
                "description": "upper bound on generated tokens (API default when unset)",
            },
            **TOKEN_LIMIT_FIELD,
            **OPENAI_FIELDS,
            **EXTRA_BODY,
        }

    def get_tags(self, config: Dict, models: list[Dict]) -> list[str]:
        return ["provider:openai", "streaming", "tools"]

    def process_chunk(
        self, native_chunk: Dict, native_messages: list[Dict], state: Dict
    ) -> tuple[list, list, list, Dict]:
        """Hot path: a text delta becomes a partial; finish reason and usage are noted.

        ``content`` may also be a list of typed parts (Mistral): its text
        parts count as text here; ``openai_reasoning`` takes the thinking
        parts. A ``refusal`` delta is collected apart from the text.
        """
        changes: Dict = {}
        partials: list[Dict] = []
        text = None
        choices = native_chunk.get("choices")
        if choices:
            choice = choices[0]
            delta = choice.get("delta")
            if delta:
                text = delta.get("content")
                if text and text.__class__ is not str:
                    text = message_text(text)
                if text:
                    partials = [{"role": "assistant", "content": text}]
                refusal = delta.get("refusal")
                if refusal and refusal.__class__ is str:
                    changes["refusal"] = push(state["openai"].get("refusal"), refusal)
            if choice.get("finish_reason"):
                changes["finish_reason"] = choice["finish_reason"]
                changes.update(answer_notes(native_chunk))
            logprobs = choice.get("logprobs")  # null unless the request asked for them
            if logprobs and logprobs.get("content"):  # a link of a chain, flattened once in finalize
                changes["logprobs"] = (state["openai"].get("logprobs"), logprobs["content"])
        usage = native_chunk.get("usage")
        if not usage and "x_groq" in native_chunk:  # Groq puts it there; a membership test costs no call
            usage = (native_chunk["x_groq"] or {}).get("usage")
        if usage:
            changes["usage"] = usage
            changes.update(answer_notes(native_chunk))
        if changes:
            state = {**state, "openai": {**state["openai"], **changes}}
        if text:  # the usual chunk: only this key changes
            state = pushed(state, "openai_text", text)
        return partials, [], native_messages, state

    def finalize(
        self, native_messages: list[Dict], state: Dict, *, context: Dict | None = None
    ) -> tuple[list, list, Dict]:
        """The streamed answer as one native assistant message (none after ``call_api``)."""
        buffer = state.get("openai")
        if buffer is None:
            return [], native_messages, state
        message: Dict = {"role": "assistant", "content": text_of(state.get("openai_text"))}
        if buffer.get("refusal"):
            message["refusal"] = text_of(buffer["refusal"])
        if buffer.get("finish_reason"):
            message["_finish_reason"] = buffer["finish_reason"]
        if buffer.get("usage"):
            message["_usage"] = buffer["usage"]
        message.update({f"_{key}": value for key, value in answer_notes(buffer).items()})
        if buffer.get("logprobs"):
            message["_logprobs"] = {"content": _chained(buffer["logprobs"])}
        return [message], [*native_messages, message], {**state, "openai": None, "openai_text": None}

    # -- API specifics for HTTPProvider ------------------------------------------------

    def _api_url(self, base_url: str) -> str:
        return f"{base_url}/chat/completions"

    def _api_payload(self, native_messages: list[Dict], config: Mapping[str, Any]) -> Dict:
        """The body; ``max_tokens`` goes under the name the model takes (:func:`._sampling.token_limit`).

        Raises:
            ConfigError: ``token_limit_field`` or ``n`` outside what the schema allows.
        """
        config = checked(checked(config, TOKEN_LIMIT_FIELD, self.name), OPENAI_FIELDS, self.name)
        payload: Dict = {
            "model": config.get("model") or self.default_model,
            "messages": [_wire(m) for m in native_messages],
        }
        if config.get("temperature") is not None:
            payload["temperature"] = config["temperature"]
        payload.update(token_limit(config, str(payload["model"])))
        payload.update(optional_fields(config, OPENAI_FIELDS))
        return payload

    def _api_fresh_buffer(self) -> Dict:
        return {"openai": {}, "openai_text": None}

    def _api_native_message(self, message: Mapping[str, Any]) -> Dict:
        """A Chat Completions message (with the participant ``name`` its metadata keeps); ``openai_tools``
        turns tool results into ``tool`` messages."""
        native = {"role": message.get("role", "user"), "content": openai_content(message)}
        name = (message.get("metadata") or {}).get("name")
        return {**native, "name": name} if isinstance(name, str) and native["role"] != "tool" else native

    def _api_text(self, content: Any) -> str:
        return message_text(content)

    def _api_usage(self, usage: Mapping[str, Any]) -> Dict:
        return normalize_usage(usage)

    def _api_metadata(self, message: Mapping[str, Any]) -> Dict:
        """The finish reason, any refusal, the token log-probabilities when asked for, the answer's notes."""
        metadata: Dict = {}
        if message.get("refusal") and isinstance(message["refusal"], str):
            metadata["refusal"] = message["refusal"]
        metadata.update(noted(message, ("finish_reason", "logprobs", *NOTES)))
        return metadata

    def _api_auth_headers(self, api_key: str) -> Dict:
        return {"authorization": f"Bearer {api_key}"}

    def _api_models_url(self, base_url: str) -> str:
        return f"{base_url}/models"

    def _api_payload_mode(self, payload: Mapping[str, Any], stream: bool) -> Mapping[str, Any]:
        if stream:
            if payload.get("stream") is True and "stream_options" in payload:
                return payload
            return {**payload, "stream": True, "stream_options": {"include_usage": True}}
        if payload.get("stream") is False:
            return payload
        return {**{k: v for k, v in payload.items() if k != "stream_options"}, "stream": False}

    def _api_reader(self, secrets: tuple[str, ...]) -> JSONEventReader:
        name = self.name

        def classify(event: str, value: Dict) -> Any:
            if "error" in value:
                return error_from_event(name, value, secrets)
            fault = openai_chunk_fault(value)
            if fault is not None:
                return malformed(name, value, fault, secrets)
            if "usage" in value or "x_groq" in value:  # noted for a retry that throws this attempt away
                usage = value.get("usage") or (value.get("x_groq") or {}).get("usage")
                if usage:
                    reader.usage = usage
            return None

        # Chat Completions runs no tool on the server's side, so an attempt is always repeatable.
        reader = JSONEventReader(name, classify, done_data=b"[DONE]", is_preamble=_is_preamble,
                                 normalize_usage=normalize_usage)
        return reader

    def _api_native_from_answer(self, answer: Any) -> Dict:
        if isinstance(answer, Mapping) and "error" in answer:
            raise error_from_event(self.name, answer, self._secrets())
        fault = openai_answer_fault(answer)
        if fault is not None:
            raise malformed(self.name, answer, fault, self._secrets())
        choices = answer["choices"]
        message: Dict = {k: v for k, v in choices[0]["message"].items() if v is not None}
        message.setdefault("role", "assistant")
        message.setdefault("content", "")
        if choices[0].get("finish_reason"):
            message["_finish_reason"] = choices[0]["finish_reason"]
        if choices[0].get("logprobs"):
            message["_logprobs"] = choices[0]["logprobs"]
        if answer.get("usage"):
            message["_usage"] = answer["usage"]
        message.update({f"_{key}": value for key, value in answer_notes(answer).items()})
        return message
