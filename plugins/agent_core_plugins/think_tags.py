"""Reasoning that a model writes inline, between ``<think>`` tags, moved to ``metadata["reasoning"]``.

Why an extension: DeepSeek-R1 distills, Qwen3 and llama.cpp without a
reasoning parser put the model's reasoning into the answer text itself,
wrapped in ``<think>...</think>``. An application would show it as the answer
and send it back on the next turn. This extension, for any provider:

* on the hot path, splits each streamed text delta with
  :class:`agent_core.plugin_kit.MarkerScanner`, so a tag cut anywhere across
  chunks is found and a partial never shows half a tag; text inside a tag
  becomes a partial with empty ``content`` and ``metadata["reasoning"]`` (the
  shape ``openai_reasoning`` uses), text outside stays ``content``;
* when the stream ends, releases what it held back (a tag left unclosed
  counts as reasoning up to the end);
* splits each final answer the same way: the tags leave its ``content``, the
  reasoning goes to the native message's ``reasoning_content`` (which the
  providers never send back) and from there to ``metadata["reasoning"]``.

On by default, but off with the ``thinking`` tag (a provider that already
separates reasoning, such as ``anthropic`` on a thinking model).

State: ``state["think_tags"]`` is ``(held, open_tag)``: the text held back and
the tag name we are inside (``""`` outside).
"""

from __future__ import annotations

from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any

from agent_core.plugin_kit import (
    Extension,
    Hit,
    MarkerScanner,
    reasoning_partial,
    rewrite_finals,
)

if TYPE_CHECKING:
    from agent_core.plugin_kit import ChunkOutput, Dict, Msgs

__all__ = ["ThinkTagsExtension", "split_reasoning"]

_KEY = "think_tags"
_OUTSIDE = ("", "")


@lru_cache(maxsize=32)
def _scanner(names: tuple[str, ...]) -> tuple[MarkerScanner, dict[str, tuple[str, bool]]]:
    """The scanner for these tag names, and each marker's (tag name, opens?)."""
    roles: dict[str, tuple[str, bool]] = {}
    for name in names:
        roles[f"<{name}>"] = (name, True)
        roles[f"</{name}>"] = (name, False)
    return MarkerScanner(roles), roles


def _names(config: Any) -> tuple[str, ...]:
    names = config.get("think_tags") if config else None
    return tuple(names) if names else ("think",)


def _route(
    pieces: list[str], open_tag: str, roles: dict[str, tuple[str, bool]]
) -> tuple[list[tuple[bool, str]], str]:
    """Sort scanned pieces, in order, into ``(is_reasoning, text)`` runs; returns the tag open at the end.

    Inside a tag only its own closing tag counts; any other marker there is
    reasoning text. Outside, a stray closing tag is left in the text.
    """
    runs: list[tuple[bool, str]] = []
    for piece in pieces:
        if piece.__class__ is Hit:
            name, opens = roles[piece]
            if open_tag:
                if not opens and name == open_tag:
                    open_tag = ""
                    continue
            elif opens:
                open_tag = name
                continue
        inside = bool(open_tag)
        if runs and runs[-1][0] is inside:
            runs[-1] = (inside, runs[-1][1] + piece)
        elif piece:
            runs.append((inside, str(piece)))
    return runs, open_tag


def split_reasoning(content: str, names: tuple[str, ...] = ("think",)) -> tuple[str, str]:
    """A whole text split into ``(answer, reasoning)``; an unclosed tag runs to the end."""
    scanner, roles = _scanner(tuple(names))
    runs, _ = _route(scanner.split(content), "", roles)
    return "".join(t for r, t in runs if not r), "".join(t for r, t in runs if r)


class ThinkTagsExtension(Extension):
    """Moves ``<think>...</think>`` out of streamed and final content into ``metadata["reasoning"]``."""

    name = "think_tags"
    version = "0.1.0"
    priority = 40  # before redact (90), which then masks both the answer and the reasoning

    forbids = ("thinking",)
    config_schema = {
        "think_tags": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "default": ["think"],
            "description": 'tag names whose content is reasoning: ["think"] matches <think>...</think>',
        },
    }

    #: this request's tag names, read in init: a provider's state is its own (only the bundled
    #: providers keep the config there), so the hot path must not look for it there
    _tags: tuple[str, ...] = ("think",)

    def init(self, config: Dict, state: Dict) -> Dict:
        self._tags = _names(config)
        return state

    def finalize(self, final_messages: Msgs, native_messages: Msgs, state: Dict, *,
                 context: Dict | None = None) -> tuple[Msgs, Msgs, Dict]:
        """Finals a provider makes only now (after the stream's closing step) lose their tags here."""
        finals, native = rewrite_finals(final_messages, native_messages, partial(_without_tags, names=self._tags))
        return finals, native, state

    def process_chunk(self, native_chunk: Dict | None, partial_messages: Msgs, final_messages: Msgs,
                      native_messages: Msgs, state: Dict) -> ChunkOutput:
        """Hot path: route each partial's new text to content or reasoning."""
        carry = state.get(_KEY) or _OUTSIDE
        if native_chunk is not None and not final_messages and not carry[0] and not carry[1]:
            # Fast path: no tag open, nothing held, and no '<' in this chunk's text.
            for p in partial_messages:
                c = p.get("content")
                if c and "<" in c:
                    break
            else:
                return partial_messages, final_messages, native_messages, state
        scanner, roles = _scanner(self._tags)
        held, open_tag = carry
        out: Msgs = []
        for p in partial_messages:
            content = p.get("content")
            if not content or not isinstance(content, str):
                out.append(p)
                continue
            pieces, held = scanner.scan(content, held)
            runs, open_tag = _route(pieces, open_tag, roles)
            _emit(out, p, runs)
        if native_chunk is None or final_messages:
            # the stream (or this message) is over: release what was held back
            runs, open_tag = _route(scanner.flush(held), open_tag, roles)
            held, open_tag = "", ""
            _emit(out, {"role": "assistant"}, runs)
            # partial, not a lambda: a closure would make a cell of its variable on every chunk
            final_messages, native_messages = rewrite_finals(
                final_messages, native_messages, partial(_without_tags, names=self._tags))
        new_carry = (held, open_tag) if held or open_tag else _OUTSIDE
        if new_carry != carry:
            state = {**state, _KEY: new_carry}
        return out, final_messages, native_messages, state

    def from_native_messages(self, native_messages: Msgs, messages: Msgs, state: Dict | None = None, *,
                             context: Dict | None = None) -> Msgs:
        """The reasoning moved to ``reasoning_content`` becomes ``metadata["reasoning"]`` (unless one is set).

        Pairs by position and passes any messages past the shorter list
        through: this extension runs with any provider, whose conversion need
        not be one to one.
        """
        out: list[Dict] = []
        for native, core in zip(native_messages, messages):
            text = native.get("reasoning_content") if isinstance(native, dict) else None
            meta = core.get("metadata") or {}
            if isinstance(text, str) and text and not meta.get("reasoning"):
                core = {**core, "metadata": {**meta, "reasoning": text}}
            out.append(core)
        out.extend(messages[len(out):])
        # A provider whose native shape this extension cannot read: its tags still leave the core messages.
        return [_core_without_tags(m, self._tags) for m in out]


def _core_without_tags(message: Dict, names: tuple[str, ...]) -> Dict:
    """A core message with tagged reasoning moved from ``content`` to ``metadata["reasoning"]``."""
    moved = _without_tags(message, names)
    if moved is message:
        return message
    meta = dict(message.get("metadata") or {})
    reasoning = moved.pop("reasoning_content", "")
    if reasoning and not meta.get("reasoning"):
        meta["reasoning"] = reasoning
    return {**moved, "metadata": meta}


def _emit(out: Msgs, source: Dict, runs: list[tuple[bool, str]]) -> None:
    """Append the partials for routed runs of stream, keeping the source's other fields on answer text."""
    for reasoning, text in runs:
        out.append(reasoning_partial(text) if reasoning else {**source, "content": text})


def _without_tags(message: Dict, names: tuple[str, ...]) -> Dict:
    """A final with the tagged reasoning moved from ``content`` to ``reasoning_content`` (the same object if none)."""
    content = message.get("content")
    if not (isinstance(content, str) and "<" in content):
        return message
    answer, reasoning = split_reasoning(content, names)
    if not reasoning and answer == content:
        return message
    before = message.get("reasoning_content")
    joined = f"{before}{reasoning}" if isinstance(before, str) and before else reasoning
    return {**message, "content": answer, **({"reasoning_content": joined} if joined else {})}
