"""Secrets in the model's output masked before any partial reaches the application.

Why an extension: a model that has seen a key (in a file a tool read, in the
prompt) may repeat it, and the partials stream straight to a UI or a log.
This opt-in extension replaces, in streamed and final text (the answer and
its reasoning):

* API-key shapes: ``sk-...`` (OpenAI, and ``sk-ant-...`` Anthropic),
  ``AKIA...`` (AWS access key ids), ``ghp_...`` (GitHub), ``xoxb-``/``xoxp-``
  (Slack), and the token after ``Bearer ``, by ``[REDACTED]``;
* matches of the regexes in config ``redact_patterns``.

Theory of operation. A key may arrive cut anywhere (``"s"`` + ``"k-pro"`` +
``"j-abc..."``). The built-in shapes are a fixed prefix plus a run of key
characters, so :class:`agent_core.streaming.MarkerScanner` finds the prefixes
(holding back only a suffix that could still become one); after a prefix the
run is held until it is long enough to be a key (then ``[REDACTED]`` goes out
once and the rest of the run is dropped as it arrives) or it ends short (then
it was ordinary text and goes out as it was). A prefix glued to a word
(``task-...``) is not a key. The configured patterns run on the text the
first stage releases; each holds back its longest possible match less one
character (patterns without an upper bound, 256 characters), and a match that
touches the end of what has arrived waits for more. At the end of the stream
everything held is released, masked.

Partials and finals go through the same machine, so the joined partials equal
the final text for any cut of the stream.

State: ``state["redact"]`` maps ``content`` / ``reasoning`` to the carry of
that stream (a tuple of strings, numbers and flags).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from agent_core.errors import ConfigError
from agent_core.streaming import Hit, MarkerScanner
from agent_core_providers.accumulate import replace_final

__all__ = ["MASK", "RedactExtension", "Redactor"]

Dict = dict[str, Any]
MASK = "[REDACTED]"
_KEY = "redact"
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_UNBOUNDED_HOLD = 256

_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#: prefix -> (characters of the key after it, how many make a key, whether the prefix stays visible)
_RULES: dict[str, tuple[frozenset[str], int, bool]] = {
    "sk-": (frozenset(_ALNUM + "_-"), 16, False),
    "AKIA": (frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"), 16, False),
    "ghp_": (frozenset(_ALNUM), 30, False),
    "xoxb-": (frozenset(_ALNUM + "-"), 10, False),
    "xoxp-": (frozenset(_ALNUM + "-"), 10, False),
    "Bearer ": (frozenset(_ALNUM + "-._~+/="), 8, True),
    "bearer ": (frozenset(_ALNUM + "-._~+/="), 8, True),
}
_SCANNER = MarkerScanner(_RULES)
#: a carry with nothing held: (held, prefix, pending, masked, after_word, held2)
_EMPTY = ("", "", "", False, False, "")


def _max_hold(pattern: re.Pattern[str]) -> int:
    """Characters a match may still need once it has started: the longest match less one."""
    try:
        from re import _parser  # the width of a regex is not public API; fall back when it moves

        high = _parser.parse(pattern.pattern, pattern.flags).getwidth()[1]
    except Exception:  # pragma: no cover - depends on the Python version
        return _UNBOUNDED_HOLD
    return max(0, min(high, _UNBOUNDED_HOLD + 1) - 1)


@lru_cache(maxsize=32)
def _compile(patterns: tuple[str, ...]) -> tuple[re.Pattern[str] | None, int]:
    if not patterns:
        return None, 0
    compiled = []
    for i, p in enumerate(patterns):
        try:
            compiled.append(re.compile(p))
        except re.error as exc:
            raise ConfigError(
                f"plugin 'redact': config key 'redact_patterns' item {i} is not a valid regex ({exc})",
                key="redact_patterns",
                plugins=("redact",),
            ) from None
    joined = re.compile("|".join(f"(?:{c.pattern})" for c in compiled))
    return joined, max(_max_hold(c) for c in compiled)


class Redactor:
    """The masking machine for one configuration; ``step`` is pure (the carry is passed in and out)."""

    __slots__ = ("pattern", "hold")

    def __init__(self, patterns: tuple[str, ...] = ()) -> None:
        self.pattern, self.hold = _compile(tuple(patterns))

    def text(self, text: str) -> str:
        """A whole text, masked (what the streamed pieces of it join to)."""
        return self.step(text, _EMPTY, final=True)[0]

    def step(self, text: str, carry: tuple = _EMPTY, final: bool = False) -> tuple[str, tuple]:
        """Mask one chunk: returns ``(text to release, carry)``; ``final`` releases everything held."""
        out, carry1 = _keys(text, carry, final)
        if self.pattern is None:
            return out, carry1
        buf = carry[5] + out if carry[5] else out
        released, held2 = self._patterns(buf, final)
        return released, (*carry1[:5], held2)

    def _patterns(self, buf: str, final: bool) -> tuple[str, str]:
        cut = len(buf) if final else max(0, len(buf) - self.hold)
        spans = []
        for m in self.pattern.finditer(buf):
            if m.end() == m.start():
                continue
            if not final and (m.end() > cut or m.end() == len(buf)):
                cut = min(cut, m.start())  # it may still grow or change: wait
                break
            spans.append(m.span())
        parts, at = [], 0
        for a, b in spans:
            if b > cut:
                break
            parts.append(buf[at:a])
            parts.append(MASK)
            at = b
        parts.append(buf[at:cut])
        return "".join(parts), buf[cut:]


def _keys(text: str, carry: tuple, final: bool) -> tuple[str, tuple]:
    """The built-in key shapes: prefix found by the scanner, then the key's run of characters."""
    held, prefix, pending, masked, after_word, held2 = carry
    out: list[str] = []
    while True:
        if prefix:
            chars, need, keep = _RULES[prefix]
            j, n = 0, len(text)
            while j < n and text[j] in chars:
                j += 1
            if j:
                after_word = text[j - 1] in _WORD
                if not masked:
                    pending += text[:j]
                    if len(pending) - len(prefix) >= need:
                        out.append(prefix + MASK if keep else MASK)
                        masked, pending = True, ""
            text = text[j:]
            if not text and not final:
                return "".join(out), ("", prefix, pending, masked, after_word, held2)
            if not masked:
                out.append(pending)  # the run ended short: it was ordinary text
            prefix, pending, masked = "", "", False
            if not text:
                return "".join(out), ("", "", "", False, after_word, held2)
        pieces, held = _SCANNER.scan(text, held)
        if final:
            pieces += _SCANNER.flush(held)
            held = ""
        for k, piece in enumerate(pieces):
            if piece.__class__ is Hit and not after_word:
                prefix, pending, masked = str(piece), str(piece), False
                after_word = piece[-1] in _WORD
                text = "".join(pieces[k + 1 :]) + held
                held = ""
                break
            out.append(piece)
            after_word = piece[-1] in _WORD
        else:
            if held and after_word:
                # glued to a word it cannot start a key (and a key prefix's own letters start none)
                out.append(held)
                held = ""
            return "".join(out), (held, "", "", False, after_word, held2)


def _fresh(carry: tuple) -> bool:
    return not (carry[0] or carry[1] or carry[5])


class RedactExtension:
    """Masks API keys, bearer tokens and configured patterns in streamed and final output (opt-in)."""

    name = "redact"
    version = "0.1.0"
    priority = 90  # after the extensions that shape the text (think_tags 40, openai_reasoning 60)
    default_enabled = False

    def get_config_schema(self) -> Dict:
        return {
            "redact_patterns": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "extra regexes whose matches are replaced by [REDACTED] (besides the key shapes)",
            },
        }

    def init(self, config: Dict, state: Dict) -> Dict:
        _compile(tuple(config.get("redact_patterns") or ()))  # a bad regex fails here, naming the key
        return state

    def process_chunk(
        self,
        native_chunk: Dict | None,
        partial_messages: list[Dict],
        final_messages: list[Dict],
        native_messages: list[Dict],
        state: Dict,
    ) -> tuple[list[Dict], list[Dict], list[Dict], Dict]:
        """Hot path: mask the answer and reasoning text of each partial, holding back what may be a key."""
        carries = state.get(_KEY) or {}
        machine = Redactor(tuple(state["config"].get("redact_patterns") or ()))
        content_carry = carries.get("content", _EMPTY)
        reasoning_carry = carries.get("reasoning", _EMPTY)
        out: list[Dict] = []
        for p in partial_messages:
            meta = p.get("metadata")
            reasoning = meta.get("reasoning") if meta else None
            content = p.get("content")
            if isinstance(content, str) and content:
                content, content_carry = machine.step(content, content_carry)
            if isinstance(reasoning, str) and reasoning:
                reasoning, reasoning_carry = machine.step(reasoning, reasoning_carry)
                meta = {**meta, "reasoning": reasoning}
            if content or reasoning or not (p.get("content") or (meta and meta.get("reasoning") is not None)):
                out.append({**p, "content": content or "", **({"metadata": meta} if meta is not None else {})})
        if native_chunk is None or final_messages:
            tail, content_carry = machine.step("", content_carry, final=True)
            rtail, reasoning_carry = machine.step("", reasoning_carry, final=True)
            if rtail:
                out.append({"role": "assistant", "content": "", "metadata": {"reasoning": rtail}})
            if tail:
                out.append({"role": "assistant", "content": tail})
            final_messages, native_messages = _mask_finals(machine, final_messages, native_messages)
        new = {"content": content_carry, "reasoning": reasoning_carry}
        if new != carries:
            state = {**state, _KEY: new}
        return out, final_messages, native_messages, state


def _mask_finals(machine: Redactor, finals: list[Dict], native: list[Dict]) -> tuple[list[Dict], list[Dict]]:
    new_finals = []
    for m in finals:
        new = _mask_message(machine, m)
        if new is not m:
            native = replace_final(native, m, new)
        new_finals.append(new)
    return new_finals, native


def _mask_message(machine: Redactor, m: Dict) -> Dict:
    """A native final with its text fields masked (string content, text/thinking blocks, reasoning)."""
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
    return {**m, **changes} if changes else m


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
    return {**block, **changes} if changes else block
