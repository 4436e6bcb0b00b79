"""Secrets in the model's output masked before any partial reaches the application.

Why an extension: a model that has seen a key (in a file a tool read, in the
prompt) may repeat it, and the partials stream straight to a UI or a log.
This opt-in extension replaces by ``[REDACTED]``, in streamed and final text
(the answer, its reasoning, and the arguments of its tool calls):

* the keys of :data:`KEY_FORMATS`: a fixed prefix and a run of key characters
  (``sk-``, ``AKIA``/``ASIA``, ``ghp_``/``ghs_``/``github_pat_``, ``AIza``,
  ``sk_live_``, ``xoxb-``, ``glpat-``, JWTs, ...), and the token after
  ``Bearer`` in any case and after any whitespace;
* matches of the regexes in config ``redact_patterns`` (how to add other formats).

Which keys, and where the formats come from: :mod:`agent_core_plugins.key_formats`.
How a key cut anywhere across chunks is still found, and what is held back
meanwhile: :mod:`agent_core_plugins.redactor` (:class:`Redactor`). This module
is the extension around it.

Partials and finals go through the same machine, so the joined partials equal
the final text for any cut of the stream. Tool calls: a final's calls
(``tool_calls``, the bundled tools extensions' notes of cut or unparsed calls,
``tool_use`` inputs, ``metadata["tool_calls"]``) have their argument text
masked, JSON-escaped strings included; argument deltas streamed in a
partial's ``metadata["tool_calls"]`` are masked per call as they arrive.

State: ``state["redact"]`` is ``None`` while nothing is held (the common
chunk then costs one regex search and no state change); a string while only
the start of a key prefix is held at the end of the answer (a chunk ending in
``s`` or ``gh``: the next common case, kept to one search and a scalar); else
the carries of the ``content`` stream, the ``reasoning`` stream and each
streamed tool call's arguments (tuples of strings and flags).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from agent_core.plugin_kit import Extension, reasoning_partial, rewrite_finals

from agent_core_plugins.key_formats import KEY_FORMATS, RULES, KeyFormat, find_prefix
from agent_core_plugins.redactor import (
    EMPTY,
    MASK,
    Redactor,
    fresh,
    mask_arguments,
    mask_deep,
)

if TYPE_CHECKING:
    from agent_core.plugin_kit import ChunkOutput, Dict, Msgs

__all__ = ["KEY_FORMATS", "MASK", "KeyFormat", "RedactExtension", "Redactor"]

_KEY = "redact"


class RedactExtension(Extension):
    """Masks API keys, bearer tokens and configured patterns in streamed and final output (opt-in)."""

    name = "redact"
    version = "0.2.0"
    priority = 90  # after the extensions that shape the text (think_tags 40, openai_reasoning 60)
    default_enabled = False

    config_schema = {
        "redact_patterns": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "extra regexes whose matches are replaced by [REDACTED] (besides the key shapes)",
        },
    }

    #: this request's redact_patterns, read in init: a provider's state is its own (only the
    #: bundled providers keep the config there), so the hot path must not look for it there
    _patterns: tuple[str, ...] = ()

    def init(self, config: Dict, state: Dict) -> Dict:
        self._patterns = tuple(config.get("redact_patterns") or ())
        Redactor(self._patterns)  # a bad regex fails here, naming the key
        return state

    def finalize(self, final_messages: Msgs, native_messages: Msgs, state: Dict, *,
                 context: Dict | None = None) -> tuple[Msgs, Msgs, Dict]:
        """Finals a provider makes only now (after the stream's closing step) are masked here."""
        finals, native = rewrite_finals(final_messages, native_messages, partial(_mask_message, Redactor(self._patterns)))
        return finals, native, state

    def from_native_messages(self, native_messages: Msgs, messages: Msgs, state: Dict | None = None, *,
                             context: Dict | None = None) -> Msgs:
        """The core messages masked too, whatever the provider made of them from its own native shape."""
        machine = Redactor(self._patterns)
        out = []
        for m in messages:
            masked = _mask_message(machine, m)
            meta = m.get("metadata")
            if isinstance(meta, Mapping) and isinstance(meta.get("reasoning"), str):
                reasoning = machine.text(meta["reasoning"])
                if reasoning != meta["reasoning"]:
                    masked = {**masked, "metadata": {**meta, "reasoning": reasoning}}
            out.append(masked)
        return out

    def process_chunk(self, native_chunk: Dict | None, partial_messages: Msgs, final_messages: Msgs,
                      native_messages: Msgs, state: Dict) -> ChunkOutput:
        """Hot path: mask the answer, reasoning and tool-call text of each partial, holding back what may be a key."""
        carries = state.get(_KEY)
        patterns = self._patterns
        if (carries is None and not patterns and native_chunk is not None and not final_messages
                and len(partial_messages) == 1):
            # The commonest chunks of all: one partial, its text free of any key prefix, or with
            # only the start of one at its very end (held, as _quick would, without a second search).
            p = partial_messages[0]
            c = p.get("content")
            if c.__class__ is str and not p.get("metadata"):
                m = find_prefix(c)
                if m is None:
                    return partial_messages, final_messages, native_messages, state
                start = m.start()
                if m.end() == len(c) and m.group() not in RULES:
                    released = [{**p, "content": c[:start]}] if start else []
                    return released, final_messages, native_messages, {**state, _KEY: c[start:]}
        if carries is None and not patterns and native_chunk is not None and not final_messages:
            # Fast path: nothing held and no key can start in this chunk: pass it on as it is.
            search = find_prefix
            for p in partial_messages:
                c = p.get("content")
                if c and c.__class__ is str and search(c):
                    break
                meta = p.get("metadata")
                if meta and meta.get("tool_calls"):
                    break
                r = meta.get("reasoning") if meta else None
                if r and r.__class__ is str and search(r):
                    break
            else:
                return partial_messages, final_messages, native_messages, state
        if not patterns and native_chunk is not None and not final_messages and len(partial_messages) == 1:
            quick = _quick(partial_messages[0], carries)
            if quick is not None:
                out, new = quick
                if new is not None or carries is not None:
                    state = {**state, _KEY: new}
                return out, final_messages, native_messages, state
        machine = Redactor(tuple(patterns or ()))
        end = native_chunk is None or bool(final_messages)  # the stream (or this message) is over
        out, new = _stream(machine, partial_messages, carries, end)
        if end:
            # partial, not a lambda: a closure would make ``machine`` a cell, built on every chunk
            final_messages, native_messages = rewrite_finals(final_messages, native_messages,
                                                             partial(_mask_message, machine))
        if new != state.get(_KEY):
            state = {**state, _KEY: new}
        return out, final_messages, native_messages, state


def _stream(machine: Redactor, partials: Msgs, carries: Any, end: bool) -> tuple[Msgs, Any]:
    """The full machine over a chunk's partials; with ``end``, everything held is released too.

    Returns the partials to pass on and the new ``state["redact"]``.
    """
    if carries is None:
        content_carry, reasoning_carry, tools = EMPTY, EMPTY, {}
    elif carries.__class__ is str:  # only the start of a prefix held (see _quick)
        content_carry, reasoning_carry, tools = (carries, "", "", False, ""), EMPTY, {}
    else:
        content_carry, reasoning_carry, *rest = carries
        tools = {k: tuple(c) for k, c in rest[0]} if rest else {}
    out: Msgs = []
    for p in partials:
        meta = p.get("metadata")
        reasoning = meta.get("reasoning") if meta else None
        content = p.get("content")
        if isinstance(content, str) and content:
            content, content_carry = machine.step(content, content_carry)
        if isinstance(reasoning, str) and reasoning:
            reasoning, reasoning_carry = machine.step(reasoning, reasoning_carry)
            meta = {**meta, "reasoning": reasoning}
        calls = meta.get("tool_calls") if meta else None
        if calls and isinstance(calls, (list, tuple)):
            meta = {**meta, "tool_calls": [_step_call(machine, i, c, tools) for i, c in enumerate(calls)]}
        if content or reasoning or calls or not (p.get("content") or (meta and meta.get("reasoning") is not None)):
            out.append({**p, "content": content or "", **({"metadata": meta} if meta is not None else {})})
    if end:
        tail, content_carry = machine.step("", content_carry, final=True)
        rtail, reasoning_carry = machine.step("", reasoning_carry, final=True)
        if rtail:
            out.append(reasoning_partial(rtail))
        if tail:
            out.append({"role": "assistant", "content": tail})
        ends = [{"index": k, "function": {"arguments": machine.step("", c, final=True)[0]}}
                for k, c in sorted(tools.items(), key=lambda kc: str(kc[0]))]
        ends = [e for e in ends if e["function"]["arguments"]]
        if ends:
            out.append({"role": "assistant", "content": "", "metadata": {"tool_calls": ends}})
        tools = {}
    tools = {k: c for k, c in tools.items() if not fresh(c)}
    if tools:
        return out, (content_carry, reasoning_carry, tuple(sorted(tools.items(), key=lambda kc: str(kc[0]))))
    if fresh(content_carry) and fresh(reasoning_carry):
        return out, None
    if fresh(reasoning_carry) and not (content_carry[1] or content_carry[4]):
        return out, content_carry[0]  # the start of a prefix is all that is held: the cheap form
    return out, (content_carry, reasoning_carry)


def _step_call(machine: Redactor, position: int, call: Any, tools: dict[Any, tuple]) -> Any:
    """One streamed tool-call delta with its argument text masked (each call's arguments are a stream)."""
    if not isinstance(call, Mapping):
        return call
    fn = call.get("function")
    args = fn.get("arguments") if isinstance(fn, Mapping) else None
    if not isinstance(args, str) or not args:
        return call
    key = call.get("index", position)
    if key.__class__ not in (int, str):
        key = position  # a stream is keyed by a plain index; anything else goes by position
    masked, tools[key] = machine.step(args, tools.get(key, EMPTY))
    return {**call, "function": {**fn, "arguments": masked}}


def _quick(p: Dict, carries: Any) -> tuple[Msgs, Any] | None:
    """The common chunk without the full machine: no key prefix in it, at most the start of one at its end.

    Only for a single partial with answer text and no reasoning or tool
    calls, while at most the start of a prefix is held. Then the machine
    would release everything before a trailing prefix start and hold that
    start (the scanner's rule), which is what this does with one regex
    search; anything else (a whole prefix, a key being read) returns None and
    goes to the machine.
    """
    content = p.get("content")
    if content.__class__ is not str:
        return None
    meta = p.get("metadata")
    if meta and (meta.get("reasoning") or meta.get("tool_calls")):
        return None
    if carries is None:
        held = ""
    elif carries.__class__ is str:
        held = carries
    else:
        return None
    text = held + content if held else content
    m = find_prefix(text)
    if m is None:
        cut = len(text)
    elif m.end() == len(text) and m.group() not in RULES:
        cut = m.start()
    else:
        return None
    new = None if cut == len(text) else text[cut:]
    if cut == len(text) and not held:
        return [p], new
    released = text[:cut]
    return ([{**p, "content": released}] if released else []), new


#: where a native final keeps tool calls: the wire ``tool_calls``, and the notes of the bundled tools
#: extensions on calls cut short or whose input did not parse (never sent, but stored and shown)
_CALL_LISTS = ("tool_calls", "_incomplete_tool_calls", "_cut_tool_uses")


def _mask_message(machine: Redactor, m: Dict) -> Dict:
    """A native final with its text fields and tool-call arguments masked.

    The shapes the bundled providers use (a ``content`` key) are masked field by field,
    leaving ids and signatures alone. A message without ``content`` (the Responses API's
    ``items``, a third-party provider's own shape) has every string masked, since its history
    is stored with the session and sent back on the next request; only the values of
    :data:`_OPAQUE` keys are left as they are, which only the API reads back.
    """
    if isinstance(m, Mapping) and "content" not in m:
        return _mask_shape(machine, m)
    changes: Dict = {}
    for key in ("content", "reasoning_content", "reasoning"):
        value = m.get(key)
        if isinstance(value, str) and value:
            masked = machine.text(value)
            if masked != value:
                changes[key] = masked
        elif key == "content" and isinstance(value, list):
            blocks = [_mask_block(machine, b) for b in value]
            if any(a is not b for a, b in zip(blocks, value)):
                changes[key] = blocks
    for key in _CALL_LISTS:
        calls = m.get(key)
        if isinstance(calls, list) and calls:
            masked_calls = [_mask_call(machine, c) for c in calls]
            if any(a is not b for a, b in zip(masked_calls, calls)):
                changes[key] = masked_calls
    raw = m.get("_tool_arguments")  # anthropic_tools: call id -> input text that did not parse
    if isinstance(raw, Mapping) and raw:
        masked_raw = {k: mask_arguments(machine, v) for k, v in raw.items()}
        if any(masked_raw[k] is not v for k, v in raw.items()):
            changes["_tool_arguments"] = masked_raw
    meta = m.get("metadata")
    if isinstance(meta, Mapping) and isinstance(meta.get("tool_calls"), list):
        masked_calls = [_mask_call(machine, c) for c in meta["tool_calls"]]
        if any(a is not b for a, b in zip(masked_calls, meta["tool_calls"])):
            changes["metadata"] = {**meta, "tool_calls": masked_calls}
    return {**m, **changes} if changes else m


#: values a provider hands back to its API verbatim (ids, signatures, encrypted reasoning): never
#: model text, and a random token in them can look like a key prefix, so masking would break them
_OPAQUE = frozenset({"id", "call_id", "signature", "encrypted_content"})


def _mask_shape(machine: Redactor, value: Any) -> Any:
    """Every string in a native value of a shape this module does not know, but those under :data:`_OPAQUE` keys."""
    if isinstance(value, Mapping):
        items = {k: v if k in _OPAQUE else _mask_shape(machine, v) for k, v in value.items()}
        return items if any(items[k] is not v for k, v in value.items()) else value
    if isinstance(value, (list, tuple)):
        seq = [_mask_shape(machine, v) for v in value]
        return seq if any(a is not b for a, b in zip(seq, value)) else value
    return mask_deep(machine, value)


def _mask_block(machine: Redactor, block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    changes = {}
    for key in ("text", "thinking"):
        value = block.get(key)
        if isinstance(value, str) and value:
            masked = machine.text(value)
            if masked != value:
                changes[key] = masked
    if "input" in block:  # a tool_use block
        masked_input = mask_deep(machine, block["input"])
        if masked_input is not block["input"]:
            changes["input"] = masked_input
    return {**block, **changes} if changes else block


def _mask_call(machine: Redactor, call: Any) -> Any:
    """A tool call (wire, core or note shape) with its arguments masked; the same object when nothing changed."""
    if not isinstance(call, Mapping):
        return call
    changes: Dict = {}
    fn = call.get("function")
    if isinstance(fn, Mapping) and "arguments" in fn:
        args = mask_arguments(machine, fn["arguments"])
        if args is not fn["arguments"]:
            changes["function"] = {**fn, "arguments": args}
    for key in ("arguments", "input"):
        if key in call:
            value = mask_arguments(machine, call[key])
            if value is not call[key]:
                changes[key] = value
    return {**call, **changes} if changes else call
