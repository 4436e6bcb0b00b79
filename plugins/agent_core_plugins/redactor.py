"""The masking machine of :mod:`agent_core_plugins.redact`: text in, masked text out, a carry between chunks.

Theory of operation. A key may arrive cut anywhere (``"s"`` + ``"k-pro"`` +
``"j-abc..."``). The built-in shapes (:mod:`agent_core_plugins.key_formats`)
are a fixed prefix plus a run of key characters, so one regex search finds
the next prefix, or holds back the end of the text when it could still become
one (the rule of :class:`agent_core.plugin_kit.MarkerScanner`, written so that
a hundred prefixes cost a search about as cheap as a few); after a prefix the
run is held until it is long enough to be a key (then ``[REDACTED]`` goes out
once and the rest of the run is dropped as it arrives) or it ends short (then
it was ordinary text and goes out as it was). A run that is not a key by 4096
characters is ordinary text. Every test on a run only ever turns from false
to true as the run grows, so where the stream is cut never changes the
outcome. No rule looks at the text before a prefix: that keeps the result the
same for every cut of the stream without carrying the previous character in
the carry. The configured patterns run on the text the first stage releases;
each holds back its longest possible match less one character (patterns
without an upper bound, 256 characters), and a match that touches the end of
what has arrived waits for more. At the end of the stream everything held is
released, masked.

A carry is ``(held, prefix, pending, masked, held2)``: the start of a prefix
held back, the prefix being read and the run after it so far, whether that
run was masked already, and what the configured patterns hold back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from agent_core.errors import ConfigError

from agent_core_plugins.key_formats import RULES, KeyRule, find_prefix

__all__ = ["EMPTY", "MASK", "Redactor", "fresh", "mask_arguments", "mask_deep"]

MASK = "[REDACTED]"
_UNBOUNDED_HOLD = 256
#: a run this long that is not a key yet is ordinary text (else hostile text after a prefix, a
#: long base64 blob after a J, say, would be held whole and cost time quadratic in its length)
_LONGEST_RUN = 4096
#: a carry with nothing held: (held, prefix, pending, masked, held2)
EMPTY = ("", "", "", False, "")


def _max_hold(pattern: re.Pattern[str]) -> int:
    """Characters a match may still need once it has started: the longest match less one."""
    try:
        from re import (
            _parser,  # the width of a regex is not public API; fall back when it moves
        )

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
        """A whole text, masked (what the streamed pieces of it join to).

        Fed through ``step`` in slices, which gives the same result (that is
        what the split tests check) while keeping the work linear in the text's
        length however many keys it holds.
        """
        if self.pattern is None and not find_prefix(text):
            return text  # no key prefix anywhere: nothing to do
        out, carry = [], EMPTY
        for i in range(0, len(text), 512):
            piece, carry = self.step(text[i : i + 512], carry)
            out.append(piece)
        out.append(self.step("", carry, final=True)[0])
        return "".join(out)

    def step(self, text: str, carry: tuple = EMPTY, final: bool = False) -> tuple[str, tuple]:
        """Mask one chunk: returns ``(text to release, carry)``; ``final`` releases everything held."""
        out, carry1 = _keys(text, carry, final)
        if self.pattern is None:
            return out, carry1
        buf = carry[4] + out if carry[4] else out
        released, held2 = self._patterns(buf, final)
        return released, (*carry1[:4], held2)

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


def _lead(rule: KeyRule, body: str) -> int:
    """How many characters of ``body`` (what followed the prefix) are the rule's lead."""
    i = 0
    while i < len(body) and body[i] in rule.lead:
        i += 1
    return i


def _take(rule: KeyRule, body: str, text: str) -> int:
    """How many characters at the start of ``text`` continue a candidate key whose body so far is ``body``."""
    j, n = 0, len(text)
    if rule.lead and (not body or body[-1] in rule.lead):
        while j < n and text[j] in rule.lead:
            j += 1
        if not body and not j:
            return 0  # the prefix is not followed by its lead: not a key
    chars = rule.chars
    while j < n and text[j] in chars:
        j += 1
    return j


def _keys(text: str, carry: tuple, final: bool) -> tuple[str, tuple]:
    """The built-in key shapes: a prefix found by :func:`find_prefix`, then the key's run of characters."""
    held, prefix, pending, masked, held2 = carry
    out: list[str] = []
    if held:
        text = held + text
    while True:
        if prefix:
            rule = RULES[prefix]
            if masked:
                j, n, chars = 0, len(text), rule.chars
                while j < n and text[j] in chars:
                    j += 1
            else:
                j = min(_take(rule, pending[len(prefix) :], text), _LONGEST_RUN + len(prefix) - len(pending))
                if j:
                    pending += text[:j]
                    body = pending[len(prefix) :]
                    key = body[_lead(rule, body) :] if rule.lead else body
                    if len(key) >= rule.need and (rule.check is None or rule.check(key)):
                        out.append(pending[: len(pending) - len(key)] + MASK if rule.keep else MASK)
                        masked, pending = True, ""
            text = text[j:]
            given_up = not masked and len(pending) - len(prefix) >= _LONGEST_RUN
            if not text and not final and not given_up:
                return "".join(out), ("", prefix, pending, masked, held2)
            if not masked:
                out.append(pending)  # the run ended without looking like a key: ordinary text
            prefix, pending, masked = "", "", False
        m = find_prefix(text)
        if m is None or (final and m.group() not in RULES):
            out.append(text)  # no prefix; or only the start of one, and the stream is over
            return "".join(out), ("", "", "", False, held2)
        out.append(text[: m.start()])
        if m.group() not in RULES:  # the start of a prefix at the very end: hold it
            return "".join(out), (text[m.start() :], "", "", False, held2)
        prefix = pending = m.group()
        text = text[m.end() :]


def fresh(carry: tuple) -> bool:
    """Whether a carry holds nothing back."""
    return not (carry[0] or carry[1] or carry[4])


def mask_arguments(machine: Redactor, value: Any) -> Any:
    """Argument text (JSON, or raw text that did not parse) or parsed arguments, masked.

    JSON text is masked as text first, which keeps it valid JSON (no key
    character is a quote or a backslash); when it holds an escape, which can
    hide a key from that scan (``Bearer\\t...``, ``\\u0073k-...``), its
    decoded strings are masked too and the text is written again.
    """
    if not isinstance(value, str):
        return mask_deep(machine, value)
    masked = machine.text(value)
    if "\\" in masked:
        try:
            decoded = json.loads(masked)
        except ValueError:
            pass
        else:
            again = mask_deep(machine, decoded)
            if again is not decoded:
                return json.dumps(again, ensure_ascii=False)
    return masked if masked != value else value


def mask_deep(machine: Redactor, value: Any) -> Any:
    """Every string in a JSON-like value masked (keys are names, left alone); the same object when nothing changed."""
    if isinstance(value, str):
        masked = machine.text(value)
        return masked if masked != value else value
    if isinstance(value, Mapping):
        items = {k: mask_deep(machine, v) for k, v in value.items()}
        return items if any(items[k] is not v for k, v in value.items()) else value
    if isinstance(value, (list, tuple)):
        seq = [mask_deep(machine, v) for v in value]
        return seq if any(a is not b for a, b in zip(seq, value)) else value
    return value
