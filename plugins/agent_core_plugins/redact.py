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
it was ordinary text and goes out as it was). Except after ``AKIA``, a key
must also look random (a digit, or both upper and lower case), so prose such
as ``task-force-and-the-rest`` or ``bearer authentication`` stays readable.
No rule looks at the text before a prefix: that keeps the result the same for
every cut of the stream without carrying the previous character in the state. The configured patterns run on the text the
first stage releases; each holds back its longest possible match less one
character (patterns without an upper bound, 256 characters), and a match that
touches the end of what has arrived waits for more. At the end of the stream
everything held is released, masked.

Partials and finals go through the same machine, so the joined partials equal
the final text for any cut of the stream.

State: ``state["redact"]`` is ``None`` while nothing is held (the common
chunk then costs one regex search and no state change); a string while only
the start of a key prefix is held at the end of the answer (a chunk ending in
``s`` or ``gh``: the next common case, kept to one search and a scalar); else
the pair of carries of the ``content`` and the ``reasoning`` stream (tuples of
strings and flags).
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
_UNBOUNDED_HOLD = 256

_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#: prefix -> (characters of the key after it, how many make a key, whether the prefix stays visible,
#: whether the key must also look random: a digit, or upper and lower case letters)
_RULES: dict[str, tuple[frozenset[str], int, bool, bool]] = {
    "sk-": (frozenset(_ALNUM + "_-"), 16, False, True),
    "AKIA": (frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"), 16, False, False),
    "ghp_": (frozenset(_ALNUM), 30, False, True),
    "xoxb-": (frozenset(_ALNUM + "-"), 10, False, True),
    "xoxp-": (frozenset(_ALNUM + "-"), 10, False, True),
    "Bearer ": (frozenset(_ALNUM + "-._~+/="), 8, True, True),
    "bearer ": (frozenset(_ALNUM + "-._~+/="), 8, True, True),
}
_SCANNER = MarkerScanner(_RULES)
#: a key prefix, or the start of one at the very end: only then is there work to do
_MAYBE = re.compile(
    "|".join(re.escape(k) for k in _RULES)
    + "|"
    + "|".join(sorted({re.escape(k[:i]) + r"\Z" for k in _RULES for i in range(1, len(k))}))
)
#: a carry with nothing held: (held, prefix, pending, masked, held2)
_EMPTY = ("", "", "", False, "")


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
        """A whole text, masked (what the streamed pieces of it join to).

        Fed through ``step`` in slices, which gives the same result (that is
        what the split tests check) while keeping the work linear in the text's
        length however many keys it holds.
        """
        if self.pattern is None and not _MAYBE.search(text):
            return text  # no key prefix anywhere: nothing to do
        out, carry = [], _EMPTY
        for i in range(0, len(text), 512):
            piece, carry = self.step(text[i : i + 512], carry)
            out.append(piece)
        out.append(self.step("", carry, final=True)[0])
        return "".join(out)

    def step(self, text: str, carry: tuple = _EMPTY, final: bool = False) -> tuple[str, tuple]:
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


def _looks_random(run: str) -> bool:
    return any(c.isdigit() for c in run) or (run.lower() != run and run.upper() != run)


def _keys(text: str, carry: tuple, final: bool) -> tuple[str, tuple]:
    """The built-in key shapes: prefix found by the scanner, then the key's run of characters."""
    held, prefix, pending, masked, held2 = carry
    out: list[str] = []
    while True:
        if prefix:
            chars, need, keep, random = _RULES[prefix]
            j, n = 0, len(text)
            while j < n and text[j] in chars:
                j += 1
            if j and not masked:
                pending += text[:j]
                run = pending[len(prefix) :]
                if len(run) >= need and (not random or _looks_random(run)):
                    out.append(prefix + MASK if keep else MASK)
                    masked, pending = True, ""
            text = text[j:]
            if not text and not final:
                return "".join(out), ("", prefix, pending, masked, held2)
            if not masked:
                out.append(pending)  # the run ended without looking like a key: ordinary text
            prefix, pending, masked = "", "", False
            if not text:
                return "".join(out), ("", "", "", False, held2)
        pieces, held = _SCANNER.scan(text, held)
        if final:
            pieces += _SCANNER.flush(held)
            held = ""
        for k, piece in enumerate(pieces):
            if piece.__class__ is Hit:
                prefix, pending, masked = str(piece), str(piece), False
                text = "".join(pieces[k + 1 :]) + held
                held = ""
                break
            out.append(piece)
        else:
            return "".join(out), (held, "", "", False, held2)


def _fresh(carry: tuple) -> bool:
    return not (carry[0] or carry[1] or carry[4])


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
        carries = state.get(_KEY)
        patterns = state["config"].get("redact_patterns")
        if (carries is None and not patterns and native_chunk is not None and not final_messages
                and len(partial_messages) == 1):
            # The commonest chunk of all: one partial, its text free of any key prefix.
            p = partial_messages[0]
            c = p.get("content")
            if c.__class__ is str and not p.get("metadata") and _MAYBE.search(c) is None:
                return partial_messages, final_messages, native_messages, state
        if carries is None and not patterns and native_chunk is not None and not final_messages:
            # Fast path: nothing held and no key can start in this chunk: pass it on as it is.
            search = _MAYBE.search
            for p in partial_messages:
                c = p.get("content")
                if c and c.__class__ is str and search(c):
                    break
                meta = p.get("metadata")
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
        if carries is None:
            carries = (_EMPTY, _EMPTY)
        elif carries.__class__ is str:  # only the start of a prefix held (see _quick)
            carries = ((carries, "", "", False, ""), _EMPTY)
        machine = Redactor(tuple(patterns or ()))
        content_carry, reasoning_carry = carries
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
        new: Any = None if _fresh(content_carry) and _fresh(reasoning_carry) else (content_carry, reasoning_carry)
        if new is not None and _fresh(reasoning_carry) and not (content_carry[1] or content_carry[4]):
            new = content_carry[0]  # the start of a prefix is all that is held: the cheap form
        if new != state.get(_KEY):
            state = {**state, _KEY: new}
        return out, final_messages, native_messages, state


def _quick(p: Dict, carries: Any) -> tuple[list[Dict], Any] | None:
    """The common chunk without the full machine: no key prefix in it, at most the start of one at its end.

    Only for a single partial with answer text and no reasoning, while at most
    the start of a prefix is held. Then the machine would release everything
    before a trailing prefix start and hold that start (the scanner's rule),
    which is what this does with one regex search; anything else (a whole
    prefix, a key being read) returns None and goes to the machine.
    """
    content = p.get("content")
    if content.__class__ is not str:
        return None
    meta = p.get("metadata")
    if meta and meta.get("reasoning"):
        return None
    if carries is None:
        held = ""
    elif carries.__class__ is str:
        held = carries
    else:
        return None
    text = held + content if held else content
    m = _MAYBE.search(text)
    if m is None:
        cut = len(text)
    elif m.end() == len(text) and m.group() not in _RULES:
        cut = m.start()
    else:
        return None
    new = None if cut == len(text) else text[cut:]
    if cut == len(text) and not held:
        return [p], new
    released = text[:cut]
    return ([{**p, "content": released}] if released else []), new


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
