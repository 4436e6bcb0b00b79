"""Tool use for the ``anthropic`` provider (Messages API ``tool_use`` / ``tool_result`` blocks).

Why an extension: the provider only moves text. The Messages API puts tool
calls and their results in content blocks, while the rest of agent-core
speaks the OpenAI shape (``metadata["tool_calls"]`` with JSON-text
arguments). This extension is the border between the two:

* ``initialize_request`` offers ``config["tools"]`` (already adapted to
  ``anthropic.messages``; other built-in formats are adapted here too);
* ``process_chunk`` assembles each ``tool_use`` block: the id and name come
  in ``content_block_start`` (a missing id is generated here, once, so the
  block and its later ``tool_result`` agree), the input as
  ``input_json_delta`` fragments, parsed once at ``content_block_stop``. The
  finished block goes into the provider's shared block table, so it lands in
  the assistant message at its stream position. The input of server-side
  calls (``server_tool_use``, ``mcp_tool_use``) is assembled the same way,
  but those blocks are never client tool calls: the provider keeps them as
  received and lists them in ``metadata["server_tools"]``;
* ``from_native_messages`` turns ``tool_use`` blocks into OpenAI-shaped
  ``metadata["tool_calls"]``; ``to_native_messages`` turns them back, and
  turns ``role: "tool"`` results into ``tool_result`` blocks in a user
  message (the provider merges adjacent user messages when sending).

Input that was cut off or is not a JSON object
----------------------------------------------
The raw input text is never replaced by ``{}``. A ``tool_use`` whose input
does not parse keeps its raw text as the call's ``arguments``. When the text
was cut short (``stop_reason: "max_tokens"`` or
``"model_context_window_exceeded"``, or the block never got its
``content_block_stop``), the call also carries ``"incomplete": true`` and
its block leaves the native content: the API must never see it again as a
call that was made. The native assistant message keeps both facts in keys
of its own, which are never sent::

    "_tool_arguments": {tool_use_id: raw text}    input that did not parse
    "_cut_tool_uses":  [{"id", "name", "arguments"}]   calls cut short

``to_native_messages`` leaves an incomplete call and any result for it out
of what is sent.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from agent_core.plugins.tool_interop import ANTHROPIC, OPENAI_CHAT, ToolInteropRegistry, detect_schema_format
from agent_core_providers.accumulate import push, replace_final, text_of
from agent_core_providers.anthropic import (
    block_at,
    blocks_of,
    content_blocks,
    image_block,
    merge_turns,
    message_text,
    with_block,
)

__all__ = ["AnthropicToolsExtension"]

Dict = dict[str, Any]
_interop = ToolInteropRegistry()
# Stop reasons that mean the output was cut by a limit, not finished by the model.
_CUT_STOPS = frozenset({"max_tokens", "model_context_window_exceeded"})


def _new_id() -> str:
    return f"toolu_{uuid.uuid4().hex[:24]}"


def _assembles(block: Mapping[str, Any]) -> bool:
    """Whether this extension collects the block's streamed input: client and server tool calls."""
    kind = block.get("type")
    return isinstance(kind, str) and kind.endswith("tool_use")


def _parse_object(raw: str) -> Mapping[str, Any] | None:
    """``raw`` as a JSON object, or None when it is not one."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, Mapping) else None


def _input_text(block: Mapping[str, Any]) -> str:
    return json.dumps(block.get("input") or {}, separators=(",", ":"))


def _close(block: Mapping[str, Any], cut: bool) -> tuple[Dict, Dict | None]:
    """A block whose input stream ended: ``(finished block, note)``.

    The note is ``{"arguments", "cut"}`` for a client ``tool_use`` whose input
    did not parse or was cut, else None. Server-side blocks keep the input
    they started with when theirs does not parse; they are never run here.
    """
    raw = text_of(block["_json"])
    done = {k: v for k, v in block.items() if k != "_json"}
    value = _parse_object(raw) if raw.strip() else (done.get("input") or {})
    if value is not None:
        done["input"] = value
    if done.get("type") != "tool_use" or (value is not None and not cut):
        return done, None
    return done, {"arguments": raw, "cut": cut}


def _without_results(messages: list[Any], cut: set[Any]) -> list[Any]:
    """Payload messages without the ``tool_result`` blocks for ``cut`` ids (turns merged again)."""
    out: list[Any] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = [
                b
                for b in content
                if not (isinstance(b, Mapping) and b.get("type") == "tool_result" and b.get("tool_use_id") in cut)
            ]
        out.append({**m, "content": content})
    return merge_turns(out)


def _input_of(arguments: Any) -> Any:
    """Tool-call arguments (JSON text) as a tool_use ``input`` object ({} if unreadable)."""
    if isinstance(arguments, Mapping):
        return arguments
    try:
        value = json.loads(arguments) if arguments else {}
    except (TypeError, ValueError):
        return {}  # the engine already told the model these arguments were broken
    return value if isinstance(value, Mapping) else {}


def _result_content(content: Any) -> Any:
    """A core tool result as ``tool_result`` content: text, or blocks from an envelope."""
    if isinstance(content, Mapping) and content.get("type") == "provider_native_tool_result":
        parts = content.get("content")
        if content.get("format") == ANTHROPIC and isinstance(parts, list):
            return parts
        if content.get("format") == OPENAI_CHAT and isinstance(parts, list):
            blocks: list[Dict] = []
            for p in parts:
                if p.get("type") == "text":
                    blocks.append({"type": "text", "text": p.get("text", "")})
                elif p.get("type") == "image_url" and (p.get("image_url") or {}).get("url"):
                    blocks.append(image_block(p["image_url"]["url"]))
            return blocks
    return message_text(content)


def _adapt(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    fmt = detect_schema_format(schema)
    if fmt is None or fmt == ANTHROPIC:
        return schema
    adapted = _interop.adapt_schema(schema, fmt, [ANTHROPIC])
    return adapted[1] if adapted else schema


class AnthropicToolsExtension:
    """Tool use for the Messages API; on whenever the provider is ``anthropic``."""

    name = "anthropic_tools"
    version = "0.1.0"
    priority = 50
    default_enabled = True

    def required_tags(self) -> list[str]:
        return ["provider:anthropic"]

    def get_config_schema(self) -> Dict:
        return {
            "tool_choice": {
                "type": ["string", "object"],
                "description": '"auto", "any", "none", the name of one tool (it must be called), '
                'or the object form {"type": "tool", "name": ...}; API default when unset',
            }
        }

    def accepted_tool_schema_formats(self, config: Dict, state: Dict | None = None) -> list[str]:
        return [ANTHROPIC]

    def emitted_tool_call_formats(self, config: Dict, state: Dict | None = None) -> list[str]:
        return [OPENAI_CHAT]

    def to_native_messages(
        self,
        messages: list[Dict],
        native_messages: list[Dict],
        state: Dict | None = None,
        *,
        context: Dict | None = None,
    ) -> list[Dict]:
        """Tool calls become ``tool_use`` blocks; tool results ``tool_result`` blocks (1:1 with messages).

        A call marked ``incomplete`` was never made: it is left out, and so
        is a result for it (an empty user message, which the provider drops).
        """
        out: list[Dict] = []
        cut_ids: set[Any] = set()
        for core, native in zip(messages, native_messages, strict=True):
            metadata = core.get("metadata") or {}
            if core.get("role") == "assistant" and metadata.get("tool_calls"):
                uses = []
                for call in metadata["tool_calls"]:
                    if call.get("incomplete"):
                        cut_ids.add(call.get("id"))
                        continue
                    uses.append(
                        {
                            "type": "tool_use",
                            "id": call.get("id"),
                            "name": (call.get("function") or {}).get("name"),
                            "input": _input_of((call.get("function") or {}).get("arguments")),
                        }
                    )
                if uses:
                    native = {**native, "content": [*content_blocks(native.get("content")), *uses]}
            elif core.get("role") == "tool":
                if cut_ids and metadata.get("tool_call_id") in cut_ids:
                    out.append({"role": "user", "content": []})
                    continue
                result: Dict = {"type": "tool_result", "tool_use_id": metadata.get("tool_call_id")}
                body = _result_content(core.get("content"))
                if body:
                    result["content"] = body
                if metadata.get("is_error") is True:
                    result["is_error"] = True
                native = {"role": "user", "content": [result]}
            out.append(native)
        return out

    def initialize_request(
        self, native_messages: list[Dict], state: Dict, *, context: Dict | None = None
    ) -> tuple[list[Dict], Dict]:
        """Offer the tools; drop any ``tool_result`` answering a call the history marks as cut."""
        config = state["config"]
        request = state["request"]
        if state.get("anthropic_tools") is not None:
            state = {**state, "anthropic_tools": None}  # no notes left from an earlier call
        cut = {c.get("id") for n in native_messages for c in n.get("_cut_tool_uses") or ()}
        if cut and isinstance(request["payload"].get("messages"), list):
            messages = _without_results(request["payload"]["messages"], cut)
            request = {**request, "payload": {**request["payload"], "messages": messages}}
            state = {**state, "request": request}
        if not config.get("tools"):
            return native_messages, state
        payload = {**request["payload"], "tools": [_adapt(t) for t in config["tools"]]}
        choice = config.get("tool_choice")
        if isinstance(choice, str) and choice:
            named = choice not in ("auto", "any", "none")
            payload["tool_choice"] = {"type": "tool", "name": choice} if named else {"type": choice}
        elif isinstance(choice, Mapping) and choice:
            payload["tool_choice"] = choice
        return native_messages, {**state, "request": {**request, "payload": payload}}

    def process_chunk(
        self,
        native_chunk: Dict | None,
        partial_messages: list[Dict],
        final_messages: list[Dict],
        native_messages: list[Dict],
        state: Dict,
    ) -> tuple[list[Dict], list[Dict], list[Dict], Dict]:
        """Hot path: open, fill and close ``tool_use`` blocks in the shared block table.

        The input JSON is parsed once, at ``content_block_stop``; input that
        does not parse is noted in ``state["anthropic_tools"]`` (tool_use id
        -> ``{"arguments", "cut"}``), and so is a block still open at
        ``message_stop``. The closing call (``native_chunk is None``) applies
        the notes to the final message (see the module docstring).
        """
        unchanged = partial_messages, final_messages, native_messages, state
        if native_chunk is None:
            return self._settle(partial_messages, final_messages, native_messages, state)
        kind = native_chunk.get("type")
        if kind == "content_block_delta":
            delta = native_chunk.get("delta") or {}
            if delta.get("type") != "input_json_delta":
                return unchanged
            index = native_chunk["index"]
            block = block_at(state, index)
            if block is None or "_json" not in block:
                return unchanged  # input for a block no tool call opened: nothing to run
            block = {**block, "_json": push(block["_json"], delta.get("partial_json") or "")}
            return partial_messages, final_messages, native_messages, with_block(state, index, block)
        if kind == "content_block_start":
            block = native_chunk.get("content_block") or {}
            if _assembles(block):
                if block.get("type") == "tool_use":
                    opened = {
                        "type": "tool_use",
                        "id": block.get("id") or _new_id(),
                        "name": block.get("name"),
                        "input": block.get("input") or {},
                    }
                else:
                    opened = dict(block)
                opened["_json"] = None
                new_state = with_block(state, native_chunk["index"], opened)
                if new_state.get("anthropic_tools") is None:
                    new_state["anthropic_tools"] = {}  # notes of a streamed answer (none yet)
                return partial_messages, final_messages, native_messages, new_state
        elif kind == "content_block_stop":
            index = native_chunk["index"]
            block = block_at(state, index)
            if block is not None and "_json" in block:
                done, note = _close(block, cut=False)
                new_state = with_block(state, index, done)
                if note is not None:
                    new_state = self._note(new_state, done["id"], note)
                return partial_messages, final_messages, native_messages, new_state
        elif kind == "message_stop":
            return partial_messages, final_messages, native_messages, self._close_open_blocks(state)
        return unchanged

    @staticmethod
    def _note(state: Dict, call_id: Any, note: Dict) -> Dict:
        return {**state, "anthropic_tools": {**(state.get("anthropic_tools") or {}), call_id: note}}

    def _close_open_blocks(self, state: Dict) -> Dict:
        """``message_stop``: a tool block that never got its ``content_block_stop`` was cut short."""
        blocks = blocks_of(state)
        for index in sorted(blocks):
            block = blocks[index]
            if "_json" in block:
                done, note = _close(block, cut=True)
                state = with_block(state, index, done)
                if note is not None:
                    state = self._note(state, done["id"], note)
        return state

    def _settle(self, partials: list[Dict], finals: list[Dict], native: list[Dict], state: Dict) -> tuple:
        """Closing call: apply the input notes to the final assistant message (streamed or not).

        Cut calls leave the content for ``_cut_tool_uses``; input that did not
        parse goes to ``_tool_arguments``; a ``tool_use`` without an id (a
        non-streamed answer) gets one. With ``stop_reason: "max_tokens"``, a
        streamed call whose input did not parse was cut, and so was a
        ``tool_use`` ending a non-streamed answer.
        """
        notes = state.get("anthropic_tools")
        new_finals = list(finals)
        for i in range(len(new_finals) - 1, -1, -1):
            old = new_finals[i]
            if old.get("role") != "assistant":
                continue
            content = old.get("content")
            if not isinstance(content, list) or not any(
                isinstance(b, Mapping) and b.get("type") == "tool_use" for b in content
            ):
                break
            new = self._settled(old, content, notes)
            if new is not old:
                new_finals[i] = new
                native = replace_final(native, old, new)
            break
        if state.get("anthropic_tools") is not None:
            state = {**state, "anthropic_tools": None}
        return partials, new_finals, native, state

    @staticmethod
    def _settled(message: Mapping[str, Any], content: list[Any], notes: Mapping[Any, Any] | None) -> Mapping[str, Any]:
        max_tokens = message.get("_stop_reason") in _CUT_STOPS
        # A streamed answer has its raw input text; a non-streamed one only the
        # input the API parsed, so there a final tool_use under max_tokens is
        # taken as cut whatever it holds.
        streamed = notes is not None
        notes = notes or {}
        last = len(content) - 1
        kept: list[Any] = []
        cut: list[Dict] = []
        raw: Dict = {}
        changed = False
        for position, block in enumerate(content):
            if not (isinstance(block, Mapping) and block.get("type") == "tool_use"):
                kept.append(block)
                continue
            if not block.get("id"):
                block = {**block, "id": _new_id()}
                changed = True
            note = notes.get(block["id"])
            if (note is not None and (note["cut"] or max_tokens)) or (max_tokens and not streamed and position == last):
                arguments = note["arguments"] if note is not None else _input_text(block)
                cut.append({"id": block["id"], "name": block.get("name"), "arguments": arguments})
                changed = True
                continue
            if note is not None:
                raw[block["id"]] = note["arguments"]
            kept.append(block)
        if not changed and not raw:
            return message
        new = {**message, "content": kept}
        if cut:
            new["_cut_tool_uses"] = cut
        if raw:
            new["_tool_arguments"] = raw
        return new

    def from_native_messages(
        self,
        native_messages: list[Dict],
        messages: list[Dict],
        state: Dict | None = None,
        *,
        context: Dict | None = None,
    ) -> list[Dict]:
        """``tool_use`` blocks -> ``metadata["tool_calls"]`` in the OpenAI shape (arguments as JSON text).

        Input that did not parse comes back as its raw text; calls cut short
        follow, marked ``"incomplete": true``.
        """
        out: list[Dict] = []
        for native, core in zip(native_messages, messages, strict=True):
            content = native.get("content")
            uses = (
                [b for b in content if isinstance(b, Mapping) and b.get("type") == "tool_use"]
                if isinstance(content, list)
                else []
            )
            cut = native.get("_cut_tool_uses") or ()
            if uses or cut:
                raw = native.get("_tool_arguments") or {}
                calls: list[Dict] = [
                    {
                        "id": b.get("id"),
                        "type": "function",
                        "function": {"name": b.get("name"), "arguments": raw.get(b.get("id")) or _input_text(b)},
                    }
                    for b in uses
                ]
                calls.extend(
                    {
                        "id": c.get("id"),
                        "type": "function",
                        "function": {"name": c.get("name"), "arguments": c.get("arguments") or ""},
                        "incomplete": True,
                    }
                    for c in cut
                )
                core = {**core, "metadata": {**(core.get("metadata") or {}), "tool_calls": calls}}
            out.append(core)
        return out
