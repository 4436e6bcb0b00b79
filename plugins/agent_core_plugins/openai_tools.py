"""Tool calling for the ``openai`` provider (Chat Completions function tools).

Why an extension: the provider only moves text. Everything about tools sits
here, in the four places a capability touches a request:

* ``initialize_request`` offers the tool schemas (``config["tools"]``, which
  the engine has already adapted to ``openai.chat_completions``);
* ``process_chunk`` assembles the streamed ``tool_calls`` deltas: calls
  arrive interleaved, keyed by ``index``, with the id and name in the first
  fragment and the JSON arguments spread over many;
* the closing ``process_chunk(None, ...)`` attaches the assembled calls to
  the final assistant message (and its copy in the native history), so a
  streamed answer ends up exactly like a non-streamed one;
* ``to_native_messages`` / ``from_native_messages`` convert between the core
  shape (``metadata["tool_calls"]``, ``role: "tool"`` results) and the wire
  shape (``tool_calls`` on the assistant message, ``role: "tool"`` messages
  with ``tool_call_id``).

Which fragment belongs to which call: by ``index``, unless the fragment
brings an ``id`` other than the one the call at that index already has
(some servers number every call 0); a fragment without ``index`` joins the
call with its ``id``, or, with neither, the latest call (unless it names a
function while that call already has a name: then it starts a new call).

Arguments cut short: when the answer stopped on the token limit
(``finish_reason: "length"``), a call whose arguments do not parse as a
JSON object is kept with its raw text and ``"incomplete": true``. On the
native message it sits under ``_incomplete_tool_calls`` (never sent), not
``tool_calls``; ``to_native_messages`` leaves it, and a result for it, out
of what is sent.

State: ``state["openai_tools"]`` is ``{"calls": {position: {"id", "name",
"arguments": Pieces}}, "at": {index: position}, "last": position}`` while
streaming; ``{}`` or ``None`` otherwise.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec
from agent_core.plugin_kit import (
    OPENAI_CHAT,
    Extension,
    annotate,
    push,
    rewrite_last_assistant,
    text_of,
    tool_turns,
)
from agent_core_providers.openai import message_text

if TYPE_CHECKING:
    from agent_core.plugin_kit import ChunkOutput, Dict, Msgs

__all__ = ["OpenAIToolsExtension"]

_json = msgspec.json.Encoder()


def _wire_call(call: Mapping[str, Any]) -> Dict:
    """A core tool call in the exact wire shape (arguments always JSON text)."""
    fn = call.get("function") or {}
    args = fn.get("arguments")
    if not isinstance(args, str):
        args = _json.encode(args if args is not None else {}).decode()
    return {"id": call.get("id"), "type": "function", "function": {"name": fn.get("name"), "arguments": args}}


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _is_object(arguments: str) -> bool:
    try:
        return isinstance(json.loads(arguments), dict)
    except ValueError:
        return False


def _split_cut(calls: list[Dict], finish_reason: Any) -> tuple[list[Dict], list[Dict]]:
    """``(complete, cut)``: with ``finish_reason == "length"``, calls whose arguments do not parse were cut."""
    if finish_reason != "length":
        return calls, []
    complete: list[Dict] = []
    cut: list[Dict] = []
    for call in calls:
        (complete if _is_object(call["function"]["arguments"]) else cut).append(call)
    return complete, cut


def _tool_result_content(content: Any) -> Any:
    """A tool result as ``tool`` message content: text, or the parts of an OpenAI envelope."""
    if isinstance(content, Mapping) and content.get("type") == "provider_native_tool_result":
        if content.get("format") == OPENAI_CHAT and isinstance(content.get("content"), list):
            return content["content"]
    return message_text(content)


class OpenAIToolsExtension(Extension):
    """Function tools for Chat Completions; on whenever the provider is ``openai``."""

    name = "openai_tools"
    version = "0.1.0"
    priority = 50
    requires = ("provider:openai",)
    config_schema = {
        "tool_choice": {
            "type": ["string", "object"],
            "description": '"auto", "none", "required" or {"type": "function", "function": {"name": ...}}',
        },
    }

    def accepted_tool_schema_formats(self, config: Dict, state: Dict | None = None) -> list[str]:
        return [OPENAI_CHAT]

    def emitted_tool_call_formats(self, config: Dict, state: Dict | None = None) -> list[str]:
        return [OPENAI_CHAT]

    def to_native_messages(self, messages: Msgs, native_messages: Msgs, state: Dict | None = None, *,
                           context: Dict | None = None) -> Msgs:
        """Put tool calls and tool results into their wire shape (messages and natives align 1:1).

        A call marked ``incomplete`` was never made: it is left out, and a
        result for it becomes a placeholder marked ``_omit`` that
        :meth:`initialize_request` drops from the payload.
        """
        out: Msgs = []
        for turn in tool_turns(messages, native_messages):
            native = turn.native
            if turn.calls:
                native = {**native, "tool_calls": [_wire_call(c) for c in turn.calls]}
            elif turn.is_result:
                native = {
                    "role": "tool",
                    "tool_call_id": (turn.message.get("metadata") or {}).get("tool_call_id"),
                    "content": _tool_result_content(turn.message.get("content")),
                }
                if turn.cut:
                    native["_omit"] = True
            out.append(native)
        return out

    def initialize_request(self, native_messages: Msgs, state: Dict, *,
                           context: Dict | None = None) -> tuple[Msgs, Dict]:
        """Offer the request's tools; start an empty call buffer; never send a result for a cut call.

        The payload's messages are 1:1 with the native history (the
        provider's rule), so ``_omit`` placeholders, and results answering a
        call that history marks as cut, are dropped by position.
        """
        config = state["config"]
        request = state["request"]
        payload = request["payload"]
        sent = payload.get("messages")
        if isinstance(sent, list) and len(sent) == len(native_messages):
            cut = {c.get("id") for n in native_messages for c in n.get("_incomplete_tool_calls") or ()}
            if cut or any(n.get("_omit") for n in native_messages):
                kept = [
                    m
                    for m, n in zip(sent, native_messages, strict=True)
                    if not (n.get("_omit") or (n.get("role") == "tool" and n.get("tool_call_id") in cut))
                ]
                payload = {**payload, "messages": kept}
        if config.get("tools"):
            payload = {**payload, "tools": list(config["tools"])}
            if config.get("tool_choice") is not None:
                payload = {**payload, "tool_choice": config["tool_choice"]}
        return native_messages, {**state, "request": {**request, "payload": payload}, "openai_tools": {}}

    def process_chunk(self, native_chunk: Dict | None, partial_messages: Msgs, final_messages: Msgs,
                      native_messages: Msgs, state: Dict) -> ChunkOutput:
        """Hot path: merge this chunk's ``tool_calls`` fragments into their calls.

        Most chunks carry text only and return at once. The closing call
        (``native_chunk is None``) hands the assembled calls to the final.
        """
        if native_chunk is None:
            return self._attach(state.get("openai_tools"), partial_messages, final_messages, native_messages, state)
        choices = native_chunk.get("choices")
        deltas = choices and (choices[0].get("delta") or {}).get("tool_calls")
        if not deltas:
            return partial_messages, final_messages, native_messages, state
        new_buffer = _merged(state.get("openai_tools") or {}, deltas)
        return partial_messages, final_messages, native_messages, {**state, "openai_tools": new_buffer}

    @staticmethod
    def _attach(buffer: Any, partials: Msgs, finals: Msgs, native: Msgs, state: Dict) -> ChunkOutput:
        """Closing call: give the streamed calls to the final assistant message.

        The calls of a non-streamed answer are already on it; they get the
        same treatment (ids for calls without one, cut calls set apart).
        """
        streamed = [
            {
                "id": c["id"] or _new_id(),
                "type": "function",
                "function": {"name": c["name"], "arguments": text_of(c["arguments"])},
            }
            for _, c in sorted(((buffer or {}).get("calls") or {}).items())
        ]
        finals, native = rewrite_last_assistant(finals, native, lambda old: _with_calls(old, streamed))
        if buffer:
            state = {**state, "openai_tools": None}
        return partials, finals, native, state

    def from_native_messages(self, native_messages: Msgs, messages: Msgs, state: Dict | None = None, *,
                             context: Dict | None = None) -> Msgs:
        """Copy wire ``tool_calls`` into ``metadata["tool_calls"]`` (OpenAI shape, JSON text arguments).

        Calls cut short follow, marked ``"incomplete": true``.
        """
        return annotate(native_messages, messages, _calls_of)


def _with_calls(old: Dict, streamed: Msgs) -> Dict:
    """The final answer with its calls (``streamed``, else its own) in wire shape; cut calls set apart."""
    if streamed:
        calls = streamed
    elif old.get("tool_calls"):
        calls = [_wire_call(c) for c in old["tool_calls"]]
        for c in calls:
            c["id"] = c["id"] or _new_id()
    else:
        return old
    complete, cut = _split_cut(calls, old.get("_finish_reason"))
    new = {k: v for k, v in old.items() if k != "tool_calls"}
    if complete:
        new["tool_calls"] = complete
    if cut:
        new["_incomplete_tool_calls"] = cut
    return new if new != old else old


def _calls_of(native: Dict) -> Dict | None:
    if not (native.get("tool_calls") or native.get("_incomplete_tool_calls")):
        return None
    calls = [_wire_call(c) for c in native.get("tool_calls") or ()]
    calls.extend({**_wire_call(c), "incomplete": True} for c in native.get("_incomplete_tool_calls") or ())
    return {"tool_calls": calls}


def _merged(buffer: Dict, deltas: Msgs) -> Dict:
    """The call buffer with one chunk's ``tool_calls`` fragments merged in (see the module docstring for the rule).

    A function of its own, so that the per-chunk ``process_chunk`` keeps no
    closure cell (the search by id below needs one) on the text-only path.
    """
    calls = dict(buffer.get("calls") or {})
    at = dict(buffer.get("at") or {})
    last = buffer.get("last")
    for delta in deltas:
        index = delta.get("index")
        call_id = delta.get("id") or None
        fn = delta.get("function") or {}
        position = None
        if index is not None:
            position = at.get(index)
            if position is not None and call_id and calls[position]["id"] not in (None, call_id):
                position = None  # another call at the same index
        elif call_id:
            position = next((p for p, c in calls.items() if c["id"] == call_id), None)
        elif not (fn.get("name") and last is not None and calls[last]["name"]):
            position = last  # a bare fragment continues the latest call; a new name starts one
        if position is None:
            position = len(calls)
            entry = {"id": None, "name": None, "arguments": None}
        else:
            entry = calls[position]
        # Some servers repeat the id and name in every fragment: keep the first.
        calls[position] = {
            "id": entry["id"] or call_id,
            "name": entry["name"] or fn.get("name") or None,
            "arguments": push(entry["arguments"], fn.get("arguments") or ""),
        }
        if index is not None:
            at[index] = position
        last = position
    return {"calls": calls, "at": at, "last": last}
