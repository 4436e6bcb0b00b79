"""Anthropic Messages API provider.

This provider carries transport and text only. Tool use and extended
thinking are provider extensions (:mod:`agent_core_plugins.anthropic_tools`,
:mod:`agent_core_plugins.anthropic_thinking`), enabled by default through the
``provider:anthropic`` tag; without them this is a plain chat provider.

Native history: one native message per core message, in order (system
messages included, as ``{"role": "system"}``). The API's own rules are
applied only when the payload is built: system text moves to the top-level
``system`` field, and consecutive messages of the same role (several tool
results, or a tool result followed by the user's next words) merge into one
message whose content is the concatenated blocks.

Streaming is block-based: ``content_block_start`` opens a block at an
``index``, deltas fill it, ``content_block_stop`` closes it. The blocks live
in one table shared with the extensions, ``state["anthropic"]["blocks"]``
(index -> block); each plugin fills the block types it understands (this
provider: ``text``, with its citations) using :func:`block_at` /
:func:`with_block`; blocks of types the client does not handle (server
tools, MCP calls, anything newer than this code) are entered as received
and never run (:data:`CLIENT_BLOCK_TYPES`), and
``finalize`` emits the whole table, in index order, as the assistant's
content. So thinking blocks, with their signatures, stay in the native
history in the place the API needs them on the next turn. Keys starting
with ``_`` (work in progress, our own notes) are never sent. Every event is
checked against the shapes in :mod:`.shapes` before any hook sees it.

Shared state while a request runs::

    state["config"]     the effective config, without the API key
    state["request"]    {"url", "payload", "headers"} for the next call
    state["anthropic"]  {"blocks": {index: block}, "usage", "stop_reason"};
                        None outside a streamed call
    state["anthropic_text"], state["anthropic_text_at"]
                        the text of the block being streamed (Pieces) and its
                        index: keys of their own, since they change on every
                        chunk and the engine freezes only what changed. The
                        text is written into its block (``_text``) when the
                        block stops, another block starts, or the call ends.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec
from agent_core.plugin_kit import drive_sync, push, pushed, replace_final, text_of

from ._anthropic_content import (
    CLIENT_BLOCK_TYPES,
    anthropic_content,
    citations,
    content_blocks,
    image_block,
    merge_turns,
    normalize_usage,
    server_tool_blocks,
    stop_notes,
    system_field,
)
from ._base import HTTPProvider
from ._errors import error_from_event
from ._metadata import noted, present
from ._oneshot import answer_flow
from ._sampling import ANTHROPIC_FIELDS, EXTRA_BODY, optional_fields
from ._sse import JSONEventReader
from ._text import message_text
from .shapes import anthropic_answer_fault, anthropic_event_fault, malformed

__all__ = [
    "AnthropicProvider",
    "CLIENT_BLOCK_TYPES",
    "anthropic_content",
    "block_at",
    "blocks_of",
    "content_blocks",
    "image_block",
    "merge_turns",
    "message_text",
    "normalize_usage",
    "replace_final",
    "server_tool_blocks",
    "with_block",
]

Dict = dict[str, Any]
# Models announced before extended thinking existed.
_NO_THINKING = re.compile(r"claude-(?:instant|2|3-(?:opus|sonnet|haiku)|3-5)", re.IGNORECASE)


# -- helpers shared with the anthropic_* extensions ----------------------------------


def blocks_of(state: Mapping[str, Any]) -> Mapping[int, Mapping[str, Any]]:
    """The shared block table of the answer being streamed: stream index -> block."""
    return state["anthropic"]["blocks"]  # type: ignore[no-any-return]


def block_at(state: Mapping[str, Any], index: int) -> Mapping[str, Any] | None:
    """The block at stream ``index`` in the shared table (None when absent)."""
    return state["anthropic"]["blocks"].get(index)


def with_block(state: Mapping[str, Any], index: int, block: Mapping[str, Any]) -> Dict:
    """A new state whose block table has ``block`` at ``index``."""
    buffer = state["anthropic"]
    return {**state, "anthropic": {**buffer, "blocks": {**buffer["blocks"], index: block}}}


def _is_preamble(event: Mapping[str, Any]) -> bool:
    """``message_start`` carries no output yet (safe to see again after a retry)."""
    return event.get("type") == "message_start"


def _note(reader: JSONEventReader, kind: Any, event: Mapping[str, Any]) -> None:
    """What a retry after output must know of an event: the usage so far, and a tool the API ran itself.

    A block of a type the client does not handle (``server_tool_use``, a web
    search's results, an MCP call) means the API did work of its own during
    this answer; repeating the request would do it again, so the attempt is
    no longer repeatable.
    """
    if kind == "message_start":
        reader.usage = (event.get("message") or {}).get("usage") or reader.usage
    elif kind == "message_delta" and event.get("usage"):
        reader.usage = {**(reader.usage or {}), **event["usage"]}
    elif kind == "content_block_start" and (event.get("content_block") or {}).get("type") not in CLIENT_BLOCK_TYPES:
        reader.repeatable = False


def _fold_text(state: Mapping[str, Any]) -> Mapping[str, Any]:
    """``state`` with the streaming text written into its block, and no block streaming."""
    at = state.get("anthropic_text_at")
    if at is None:
        return state
    block = block_at(state, at) or {"type": "text"}
    folded = with_block(state, at, {**block, "_text": state.get("anthropic_text")})
    return {**folded, "anthropic_text": None, "anthropic_text_at": None}


def _streaming(state: Mapping[str, Any], index: int) -> Dict:
    """``state`` with the text block at ``index`` taking the deltas that follow."""
    state = _fold_text(state)
    block = block_at(state, index)
    if block is None:
        block = {"type": "text"}
        state = with_block(state, index, block)
    pieces = block["_text"] if "_text" in block else push(None, block.get("text") or "")
    return {**state, "anthropic_text": pieces, "anthropic_text_at": index}


def _finished(block: Mapping[str, Any]) -> Dict:
    """A block as stored in history: text joined, work-in-progress keys dropped."""
    out = {k: v for k, v in block.items() if k[0] != "_"}
    if block.get("type") == "text" and "_text" in block:
        out["text"] = text_of(block["_text"])
    return out


# -- the provider --------------------------------------------------------------------


class AnthropicProvider(HTTPProvider):
    """Messages API over httpx: streaming (SSE) and non-streaming, sync and async.

    Config keys: see :meth:`get_config_schema` (``base_url`` and ``api_key``
    fall back to ``$ANTHROPIC_BASE_URL`` / ``$ANTHROPIC_API_KEY``; config
    wins). Inject clients with ``AnthropicProvider.using(client=..., async_client=...)``.
    """

    name = "anthropic"
    version = "0.1.0"
    env_prefix = "ANTHROPIC"
    default_base_url = "https://api.anthropic.com"
    default_model = "claude-sonnet-4-5"
    default_max_tokens = 4096

    def get_config_schema(self) -> Dict:
        """Common keys, ``max_tokens``, ``anthropic_version``, the optional body fields and ``extra_body``."""
        return {
            **self._common_schema(),
            "max_tokens": {
                "type": "integer",
                "default": self.default_max_tokens,
                "description": "upper bound on generated tokens (the API requires one)",
            },
            "anthropic_version": {
                "type": "string",
                "default": "2023-06-01",
                "description": "value of the anthropic-version header",
            },
            **ANTHROPIC_FIELDS,
            **EXTRA_BODY,
        }

    def get_tags(self, config: Dict, models: list[Dict]) -> list[str]:
        tags = ["provider:anthropic", "streaming", "tools"]
        if not _NO_THINKING.search(str(config.get("model") or self.default_model)):
            tags.append("thinking")
        return tags

    def process_chunk(
        self, native_chunk: Dict, native_messages: list[Dict], state: Dict
    ) -> tuple[list, list, list, Dict]:
        """Hot path: text deltas become partials; usage and stop reason are noted.

        A block of a type the client does not handle (server tool calls and
        results, future types) is entered in the table as received when it
        starts, so it reaches the native history unchanged; text is
        assembled here, the other client types by their extensions. Citations streamed into a
        text block (``citations_delta``) are kept on it.
        """
        kind = native_chunk.get("type")
        if kind == "content_block_delta":
            delta = native_chunk.get("delta") or {}
            dtype = delta.get("type")
            if dtype != "text_delta" or not delta.get("text"):
                if dtype == "citations_delta" and delta.get("citation") is not None:
                    index = native_chunk["index"]
                    block = block_at(state, index) or {"type": "text"}
                    cited = {**block, "citations": [*(block.get("citations") or ()), delta["citation"]]}
                    return [], [], native_messages, with_block(state, index, cited)
                return [], [], native_messages, state
            index = native_chunk.get("index", 0)
            text = delta["text"]
            if state.get("anthropic_text_at") != index:
                state = _streaming(state, index)
            # the usual chunk: only the text key changes, not the block table
            return [{"role": "assistant", "content": text}], [], native_messages, pushed(state, "anthropic_text", text)
        if kind == "content_block_start":
            block = native_chunk.get("content_block") or {}
            if block.get("type") == "text":
                index = native_chunk.get("index", 0)
                return [], [], native_messages, _streaming(with_block(_fold_text(state), index, block), index)
            if block.get("type") not in CLIENT_BLOCK_TYPES:
                return [], [], native_messages, with_block(state, native_chunk["index"], block)
        elif kind == "content_block_stop":
            index = native_chunk.get("index", 0)
            if state.get("anthropic_text_at") == index:
                state = _fold_text(state)
            block = block_at(state, index)
            if block is not None and block.get("type") == "text":
                return [], [], native_messages, with_block(state, index, _finished(block))
        elif kind == "message_start":
            message = native_chunk.get("message") or {}
            buffer = {**state["anthropic"], "usage": message.get("usage") or {}}
            return [], [], native_messages, {**state, "anthropic": buffer}
        elif kind == "message_delta":
            buffer = dict(state["anthropic"])
            delta = native_chunk.get("delta") or {}
            buffer.update({key: delta[key] for key in ("stop_reason", "stop_sequence") if delta.get(key)})
            if native_chunk.get("usage"):
                buffer["usage"] = {**(buffer.get("usage") or {}), **native_chunk["usage"]}
            return [], [], native_messages, {**state, "anthropic": buffer}
        return [], [], native_messages, state

    def finalize(
        self, native_messages: list[Dict], state: Dict, *, context: Dict | None = None
    ) -> tuple[list, list, Dict]:
        """The block table, in index order, as one native assistant message."""
        state = _fold_text(state)
        buffer = state.get("anthropic")
        if buffer is None:
            return [], native_messages, state
        blocks = buffer["blocks"]
        message: Dict = {"role": "assistant", "content": [_finished(blocks[i]) for i in sorted(blocks)]}
        message.update(stop_notes(buffer))
        if buffer.get("usage"):
            message["_usage"] = buffer["usage"]
        return [message], [*native_messages, message], {**state, "anthropic": None}

    # -- API specifics for HTTPProvider ------------------------------------------------

    def _api_url(self, base_url: str) -> str:
        return f"{base_url}/v1/messages"

    def _api_payload(self, native_messages: list[Dict], config: Mapping[str, Any]) -> Dict:
        """System text on top, the other turns merged (see :func:`merge_turns`)."""
        payload: Dict = {
            "model": config.get("model") or self.default_model,
            "max_tokens": config.get("max_tokens") or self.default_max_tokens,
            "messages": merge_turns([m for m in native_messages if m.get("role") != "system"]),
        }
        system = system_field(native_messages)
        if system:
            payload["system"] = system
        if config.get("temperature") is not None:
            payload["temperature"] = config["temperature"]
        payload.update(optional_fields(config, ANTHROPIC_FIELDS))
        return payload

    def _api_fresh_buffer(self) -> Dict:
        return {"anthropic": {"blocks": {}}, "anthropic_text": None, "anthropic_text_at": None}

    def _api_native_message(self, message: Mapping[str, Any]) -> Dict:
        """A Messages API message; ``anthropic_tools`` turns tool results into ``tool_result`` blocks.

        System messages stay in place (the payload moves their text to the
        top). An assistant answer's ``metadata["server_tools"]`` go back in
        front of its text, so a history rebuilt from core messages still
        shows the API its own server tool calls and results.
        """
        role, content = message.get("role", "user"), message.get("content")
        if role == "system":  # blocks stay blocks: a cache_control on one must reach the API
            return {"role": role, "content": content_blocks(content) if isinstance(content, list) else message_text(content)}
        server = (message.get("metadata") or {}).get("server_tools") if role == "assistant" else None
        if server:
            return {"role": role, "content": [*server, *content_blocks(anthropic_content(message))]}
        return {"role": role, "content": anthropic_content(message)}

    def _api_text(self, content: Any) -> str:
        return message_text(content)

    def _api_usage(self, usage: Mapping[str, Any]) -> Dict:
        return normalize_usage(usage)

    def _api_metadata(self, message: Mapping[str, Any]) -> Dict:
        """The stop reason and stop sequence; the blocks the API handled itself, as received, in ``server_tools``;
        the citations of the text blocks in ``citations``."""
        content = message.get("content")
        metadata: Dict = {}
        if isinstance(content, list):
            metadata = present(server_tools=server_tool_blocks(content), citations=citations(content))
        metadata.update(noted(message, ("stop_reason", "stop_sequence")))
        return metadata

    def _api_auth_headers(self, api_key: str) -> Dict:
        return {"x-api-key": api_key}

    def _api_base_headers(self, config: Mapping[str, Any]) -> Dict:
        return {
            "content-type": "application/json",
            "anthropic-version": config.get("anthropic_version") or "2023-06-01",
        }

    def _api_models_url(self, base_url: str) -> str:
        return f"{base_url}/v1/models"

    def count_tokens(self, config: Dict, body: Mapping[str, Any]) -> int:
        """The API's own count of the input tokens of ``body`` (Messages fields; the config's model).

        Raises what a request to the API would: an upstream 4xx as its typed error, no key, a bad answer.
        """
        payload = msgspec.json.encode({**body, "model": config.get("model") or self.default_model})
        headers = self._request_headers(config, self._api_base_headers(config))
        url = f"{self.base_url(config)}/v1/messages/count_tokens"
        credentials = self._make_credentials(config)
        with self._exchange(self._call(config, url, payload, headers, credentials), None,
                            self._sync_client(config)) as exchange:
            [answer] = drive_sync(answer_flow(exchange))
        count = answer.get("input_tokens") if isinstance(answer, Mapping) else None
        if type(count) is not int:
            raise malformed(self.name, answer, "the count has no input_tokens", credentials.secrets)
        return count

    def _api_reader(self, secrets: tuple[str, ...]) -> JSONEventReader:
        name = self.name

        def classify(event: str, value: Dict) -> Any:
            kind = value.get("type")
            if kind == "ping":
                return "skip"
            if kind == "message_stop":
                return "last"
            if kind == "error":
                return error_from_event(name, value, secrets)
            fault = anthropic_event_fault(value)
            if fault is not None:
                return malformed(name, value, fault, secrets)
            if kind != "content_block_delta":  # the common event needs none of this
                _note(reader, kind, value)
            return None

        reader = JSONEventReader(name, classify, is_preamble=_is_preamble, normalize_usage=normalize_usage)
        return reader

    def _api_native_from_answer(self, answer: Any) -> Dict:
        if isinstance(answer, Mapping) and answer.get("type") == "error":
            raise error_from_event(self.name, answer, self._secrets())
        fault = anthropic_answer_fault(answer)
        if fault is not None:
            raise malformed(self.name, answer, fault, self._secrets())
        message: Dict = {"role": answer.get("role") or "assistant", "content": list(answer["content"])}
        message.update(stop_notes(answer))
        if answer.get("usage"):
            message["_usage"] = answer["usage"]
        return message
