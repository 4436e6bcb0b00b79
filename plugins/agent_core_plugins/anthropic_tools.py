"""Tool use for the ``anthropic`` provider (Messages API ``tool_use`` / ``tool_result`` blocks).

Why an extension: the provider only moves text. The Messages API puts tool
calls and their results in content blocks, while the rest of agent-core
speaks the OpenAI shape (``metadata["tool_calls"]`` with JSON-text
arguments). This extension is the border between the two:

* ``initialize_request`` offers ``config["tools"]`` (already adapted to
  ``anthropic.messages``; other built-in formats are adapted here too), and
  puts the engine's ``tool_choice`` (OpenAI's shapes) and
  ``parallel_tool_calls`` into the API's one ``tool_choice`` object
  (:func:`anthropic_tool_choice`);
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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent_core.plugin_kit import (
    ANTHROPIC,
    OPENAI_CHAT,
    Extension,
    adapt_schema,
    annotate,
    rewrite_last_assistant,
    tool_turns,
)
from agent_core_providers.anthropic import (
    content_blocks,
    image_block,
    merge_turns,
    message_text,
)

from agent_core_plugins.anthropic_tool_blocks import (
    NOTES,
    close_open_blocks,
    fill_block,
    input_text,
    open_block,
    settle,
    stop_block,
)

if TYPE_CHECKING:
    from agent_core.plugin_kit import ChunkOutput, Dict, Msgs

__all__ = ["AnthropicToolsExtension", "anthropic_tool_choice"]

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


_NAMED_KINDS = {"auto": "auto", "none": "none", "any": "any", "required": "any"}


def _tool_use(call: Mapping[str, Any]) -> Dict:
    """A core tool call (Chat Completions shape) as a ``tool_use`` block."""
    fn = call.get("function") or {}
    return {"type": "tool_use", "id": call.get("id"), "name": fn.get("name"), "input": _input_of(fn.get("arguments"))}


def _tool_result(message: Mapping[str, Any]) -> Dict:
    """A core tool message as a ``tool_result`` block, with the error flag and a client's cache breakpoint."""
    metadata = message.get("metadata") or {}
    result: Dict = {"type": "tool_result", "tool_use_id": metadata.get("tool_call_id")}
    body = _result_content(message.get("content"))
    if body:
        result["content"] = body
    if metadata.get("is_error") is True:
        result["is_error"] = True
    if isinstance(metadata.get("cache_control"), Mapping):  # a client's cache breakpoint, as it wrote it
        result["cache_control"] = metadata["cache_control"]
    return result


def anthropic_tool_choice(choice: Any, parallel: Any = None) -> Dict | None:
    """The engine's tool choice (OpenAI's shapes, or Anthropic's) as the Messages API's object.

    ``"required"`` is Anthropic's ``any``; OpenAI's named function is a ``tool`` choice;
    an Anthropic object passes as it is. ``parallel`` False adds
    ``disable_parallel_tool_use`` (with ``auto`` when nothing else was chosen; never on
    ``none``, which takes no other key). None: send no ``tool_choice`` (the API default).
    """
    out: Dict | None
    if isinstance(choice, str) and choice:
        out = {"type": _NAMED_KINDS[choice]} if choice in _NAMED_KINDS else {"type": "tool", "name": choice}
    elif isinstance(choice, Mapping) and choice.get("type") == "function":
        out = {"type": "tool", "name": (choice.get("function") or {}).get("name")}
    elif isinstance(choice, Mapping) and choice:
        out = dict(choice)
    else:
        out = None
    if parallel is False and (out is None or out.get("type") != "none"):
        out = {**(out or {"type": "auto"}), "disable_parallel_tool_use": True}
    return out


class AnthropicToolsExtension(Extension):
    """Tool use for the Messages API; on whenever the provider is ``anthropic``."""

    name = "anthropic_tools"
    version = "0.1.0"
    priority = 50
    requires = ("provider:anthropic",)
    config_schema = {
        "tool_choice": {
            "type": ["string", "object"],
            "description": '"auto", "any" (or "required"), "none", the name of one tool (it must be called), '
            'OpenAI\'s {"type": "function", "function": {"name": ...}} or Anthropic\'s '
            '{"type": "tool", "name": ...}; API default when unset',
        },
        "parallel_tool_calls": {
            "type": "boolean",
            "description": "false: at most one tool call per answer (sent as tool_choice.disable_parallel_tool_use)",
        },
    }

    def accepted_tool_schema_formats(self, config: Dict, state: Dict | None = None) -> list[str]:
        return [ANTHROPIC]

    def emitted_tool_call_formats(self, config: Dict, state: Dict | None = None) -> list[str]:
        return [OPENAI_CHAT]

    def to_native_messages(self, messages: Msgs, native_messages: Msgs, state: Dict | None = None, *,
                           context: Dict | None = None) -> Msgs:
        """Tool calls become ``tool_use`` blocks; tool results ``tool_result`` blocks (1:1 with messages).

        A call marked ``incomplete`` was never made: it is left out, and so
        is a result for it (an empty user message, which the provider drops).
        """
        out: Msgs = []
        for turn in tool_turns(messages, native_messages):
            native = turn.native
            if turn.calls:
                native = {**native, "content": [*content_blocks(native.get("content")), *map(_tool_use, turn.calls)]}
            elif turn.cut:
                native = {"role": "user", "content": []}
            elif turn.is_result:
                native = {"role": "user", "content": [_tool_result(turn.message)]}
            out.append(native)
        return out

    def initialize_request(self, native_messages: Msgs, state: Dict, *,
                           context: Dict | None = None) -> tuple[Msgs, Dict]:
        """Offer the tools; drop any ``tool_result`` answering a call the history marks as cut."""
        config = state["config"]
        request = state["request"]
        if state.get(NOTES) is not None:
            state = {**state, NOTES: None}  # no notes left from an earlier call
        cut = {c.get("id") for n in native_messages for c in n.get("_cut_tool_uses") or ()}
        if cut and isinstance(request["payload"].get("messages"), list):
            messages = _without_results(request["payload"]["messages"], cut)
            request = {**request, "payload": {**request["payload"], "messages": messages}}
            state = {**state, "request": request}
        if not config.get("tools"):
            return native_messages, state
        payload = {**request["payload"], "tools": [adapt_schema(t, ANTHROPIC) for t in config["tools"]]}
        choice = anthropic_tool_choice(config.get("tool_choice"), config.get("parallel_tool_calls"))
        if choice is not None:
            payload["tool_choice"] = choice
        return native_messages, {**state, "request": {**request, "payload": payload}}

    def process_chunk(self, native_chunk: Dict | None, partial_messages: Msgs, final_messages: Msgs,
                      native_messages: Msgs, state: Dict) -> ChunkOutput:
        """Hot path: open, fill and close ``tool_use`` blocks in the shared block table.

        The input JSON is parsed once, at ``content_block_stop``; input that
        does not parse is noted, and so is a block still open at
        ``message_stop`` (see :mod:`agent_core_plugins.anthropic_tool_blocks`).
        The closing call (``native_chunk is None``) applies the notes to the
        final message (see the module docstring).
        """
        if native_chunk is None:
            return self._settle(partial_messages, final_messages, native_messages, state)
        kind = native_chunk.get("type")
        if kind == "content_block_delta":
            delta = native_chunk.get("delta") or {}
            if delta.get("type") == "input_json_delta":
                state = fill_block(state, native_chunk["index"], delta.get("partial_json") or "")
        elif kind == "content_block_start":
            state = open_block(state, native_chunk["index"], native_chunk.get("content_block") or {})
        elif kind == "content_block_stop":
            state = stop_block(state, native_chunk["index"])
        elif kind == "message_stop":
            state = close_open_blocks(state)
        return partial_messages, final_messages, native_messages, state

    @staticmethod
    def _settle(partials: Msgs, finals: Msgs, native: Msgs, state: Dict) -> ChunkOutput:
        """Closing call: apply the notes to the final assistant message, streamed or not (see ``settle``)."""
        notes = state.get(NOTES)
        finals, native = rewrite_last_assistant(finals, native, lambda old: settle(old, notes))
        if notes is not None:
            state = {**state, NOTES: None}
        return partials, finals, native, state

    def from_native_messages(self, native_messages: Msgs, messages: Msgs, state: Dict | None = None, *,
                             context: Dict | None = None) -> Msgs:
        """``tool_use`` blocks -> ``metadata["tool_calls"]`` in the OpenAI shape (arguments as JSON text).

        Input that did not parse comes back as its raw text; calls cut short
        follow, marked ``"incomplete": true``.
        """
        return annotate(native_messages, messages, _calls_of)


def _calls_of(native: Dict) -> Dict | None:
    content = native.get("content")
    uses = [b for b in content if isinstance(b, Mapping) and b.get("type") == "tool_use"] if isinstance(
        content, list) else []
    cut = native.get("_cut_tool_uses") or ()
    if not (uses or cut):
        return None
    raw = native.get("_tool_arguments") or {}
    calls: Msgs = [
        {"id": b.get("id"), "type": "function",
         "function": {"name": b.get("name"), "arguments": raw.get(b.get("id")) or input_text(b)}}
        for b in uses
    ]
    calls.extend(
        {"id": c.get("id"), "type": "function",
         "function": {"name": c.get("name"), "arguments": c.get("arguments") or ""}, "incomplete": True}
        for c in cut
    )
    return {"tool_calls": calls}
