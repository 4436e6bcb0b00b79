"""``tool_use`` blocks for :mod:`agent_core_plugins.anthropic_tools`: assembled from the stream, settled on the answer.

Assembling (the hot path). A tool call streams as a ``content_block_start``
with its id and name, ``input_json_delta`` fragments of its input, and a
``content_block_stop``. :func:`open_block`, :func:`fill_block` and
:func:`stop_block` keep the block in the provider's shared block table
(``state["blocks"]``, see :mod:`agent_core_providers.anthropic`), so it lands
in the answer at its stream position; the input text is pushed piece by piece
and parsed once, at the stop. Server-side calls (``server_tool_use``,
``mcp_tool_use``) are assembled the same way but never noted: they are not
the client's to run.

Notes. Input that does not parse, or a block still open at ``message_stop``
(:func:`close_open_blocks`), is noted in ``state["anthropic_tools"]``:
tool_use id -> ``{"arguments": raw text, "cut": bool}``. :func:`settle`
applies the notes to the final answer in the closing call.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent_core.plugin_kit import push, text_of
from agent_core_providers.anthropic import block_at, blocks_of, with_block

if TYPE_CHECKING:
    from agent_core.plugin_kit import Dict

__all__ = ["NOTES", "close_open_blocks", "fill_block", "input_text", "new_id", "open_block", "settle", "stop_block"]

#: the state key of the notes
NOTES = "anthropic_tools"
# Stop reasons that mean the output was cut by a limit, not finished by the model.
_CUT_STOPS = frozenset({"max_tokens", "model_context_window_exceeded"})


def new_id() -> str:
    """A tool_use id for a block that came without one."""
    return f"toolu_{uuid.uuid4().hex[:24]}"


def input_text(block: Mapping[str, Any]) -> str:
    """A block's parsed ``input`` as compact JSON text (the call's arguments)."""
    return json.dumps(block.get("input") or {}, separators=(",", ":"))


def open_block(state: Dict, index: int, block: Dict) -> Dict:
    """A ``content_block_start``: a tool call block enters the block table (a missing id is made here, once).

    Made here so the block and its later ``tool_result`` agree on it.
    """
    kind = block.get("type")
    if not (isinstance(kind, str) and kind.endswith("tool_use")):
        return state  # not a client or server tool call: not ours
    if kind == "tool_use":
        opened = {"type": "tool_use", "id": block.get("id") or new_id(), "name": block.get("name"),
                  "input": block.get("input") or {}}
    else:
        opened = dict(block)
    opened["_json"] = None
    new_state = with_block(state, index, opened)
    if new_state.get(NOTES) is None:
        new_state[NOTES] = {}  # notes of a streamed answer (none yet)
    return new_state


def fill_block(state: Dict, index: int, fragment: str) -> Dict:
    """An ``input_json_delta``: the fragment pushed onto its block's input text."""
    block = block_at(state, index)
    if block is None or "_json" not in block:
        return state  # input for a block no tool call opened: nothing to run
    return with_block(state, index, {**block, "_json": push(block["_json"], fragment)})


def stop_block(state: Dict, index: int) -> Dict:
    """A ``content_block_stop``: the block's input is parsed; input that did not parse is noted."""
    block = block_at(state, index)
    if block is None or "_json" not in block:
        return state
    done, note = _finish(block, cut=False)
    new_state = with_block(state, index, done)
    return new_state if note is None else _note(new_state, done["id"], note)


def close_open_blocks(state: Dict) -> Dict:
    """``message_stop``: a tool block that never got its ``content_block_stop`` was cut short."""
    blocks = blocks_of(state)
    for index in sorted(blocks):
        block = blocks[index]
        if "_json" in block:
            done, note = _finish(block, cut=True)
            state = with_block(state, index, done)
            if note is not None:
                state = _note(state, done["id"], note)
    return state


def _parse_object(raw: str) -> Mapping[str, Any] | None:
    """``raw`` as a JSON object, or None when it is not one."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, Mapping) else None


def _finish(block: Mapping[str, Any], cut: bool) -> tuple[Dict, Dict | None]:
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


def _note(state: Dict, call_id: Any, note: Dict) -> Dict:
    return {**state, NOTES: {**(state.get(NOTES) or {}), call_id: note}}


def settle(message: Dict, notes: Mapping[Any, Any] | None) -> Dict:
    """The final answer with the notes applied; the same object when it has no ``tool_use`` or nothing changes.

    Cut calls leave the content for ``_cut_tool_uses``; input that did not
    parse goes to ``_tool_arguments``; a ``tool_use`` without an id (a
    non-streamed answer) gets one. ``notes`` is None for a non-streamed
    answer: it has only the input the API parsed, so under a cut stop reason
    a ``tool_use`` ending it is taken as cut whatever it holds.
    """
    content = message.get("content")
    if not isinstance(content, list) or not any(isinstance(b, Mapping) and b.get("type") == "tool_use"
                                                 for b in content):
        return message
    max_tokens = message.get("_stop_reason") in _CUT_STOPS
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
            block = {**block, "id": new_id()}
            changed = True
        note = notes.get(block["id"])
        if (note is not None and (note["cut"] or max_tokens)) or (max_tokens and not streamed and position == last):
            arguments = note["arguments"] if note is not None else input_text(block)
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
