"""Secrets in the model's output masked before any partial reaches the application.

Why an extension: a model that has seen a key (in a file a tool read, in the
prompt) may repeat it, and the partials stream straight to a UI or a log.
This opt-in extension replaces by ``[REDACTED]``, in streamed and final text
(the answer, its reasoning, and the arguments of its tool calls):

* the keys of :data:`KEY_FORMATS`: a fixed prefix and a run of key characters
  (``sk-``, ``AKIA``/``ASIA``, ``ghp_``/``ghs_``/``github_pat_``, ``AIza``,
  ``sk_live_``, ``xoxb-``, ``glpat-``, JWTs, ...), and the token after
  ``Bearer`` in any case and after any whitespace;
* matches of the regexes in config ``redact_patterns``.

Where the formats come from. The prefixes, key characters and lengths are
those of gitleaks' rule set (``config/gitleaks.toml`` in gitleaks/gitleaks,
v8.30.0), restated here as prefix rules; each row of :data:`KEY_FORMATS`
names its gitleaks rule ids. We take the rules whose key starts with a fixed
prefix of its own, for the services an agent's user is likely to hold keys
of. Rules that need a keyword before the key (``"twitter": ...``), and
prefixes starting with a letter that ends many words (``hf_``, ``npm_``,
``dop_v1_``), are left out: the scan holds back a chunk's last characters
when they could start a prefix (below), and such a letter would hold back
many chunks. For the same reason a JWT is found at the ``J`` of ``eyJ`` and
a Stripe ``rk_`` key at its ``k_``: they show as ``ey[REDACTED]`` and
``r[REDACTED]``, and a chunk ending in ``e`` or ``r`` goes out at once. Add
other formats with ``redact_patterns``. The bearer rule follows RFC 6750's
``b64token``.

Theory of operation. A key may arrive cut anywhere (``"s"`` + ``"k-pro"`` +
``"j-abc..."``). The built-in shapes are a fixed prefix plus a run of key
characters, so one regex search finds the next prefix, or holds back the end
of the text when it could still become one (the rule of
:class:`agent_core.streaming.MarkerScanner`, written so that a hundred
prefixes cost a search about as cheap as a few, see :func:`_finder`); after
a prefix the run is held until it is long enough to be a key (then
``[REDACTED]`` goes out once and the rest of the run is dropped as it
arrives) or it ends short (then it was ordinary text and goes out as it was). A key must also look random (a
digit, or both upper and lower case), so prose such as
``task-force-and-the-rest`` or ``bearer authentication`` stays readable;
except an AWS key id (upper case letters and digits, often no digit) and a
JWT, recognised by its shape (``eyJ<header>.ey<payload>.``). A run that is
not a key by 4096 characters is ordinary text. Every test on a run only ever
turns from false to true as the run grows, so where the stream is cut never
changes the outcome. No rule looks at the text before a prefix: that keeps
the result the same for every cut of the stream without carrying the
previous character in the state. The configured patterns run on the text the
first stage releases; each holds back its longest possible match less one
character (patterns without an upper bound, 256 characters), and a match that
touches the end of what has arrived waits for more. At the end of the stream
everything held is released, masked.

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

import json
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from agent_core.errors import ConfigError
from agent_core_providers.accumulate import replace_final

__all__ = ["KEY_FORMATS", "MASK", "KeyFormat", "RedactExtension", "Redactor"]

Dict = dict[str, Any]
MASK = "[REDACTED]"
_KEY = "redact"
_UNBOUNDED_HOLD = 256
#: a run this long that is not a key yet is ordinary text (else hostile text after a prefix, a
#: long base64 blob after a J, say, would be held whole and cost time quadratic in its length)
_LONGEST_RUN = 4096

_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_DIGITS = "0123456789"
_ALNUM = _UPPER + _UPPER.lower() + _DIGITS
_HEX = _DIGITS + "abcdefABCDEF"
#: every character Python counts as whitespace (none lies above U+3000)
_SPACES = "".join(c for c in map(chr, range(0x3001)) if c.isspace())
_JWT_REST = re.compile(r"[\w-]{16,}\.ey[\w-]{17,}\.", re.ASCII)


def _looks_random(run: str) -> bool:
    return any(c.isdigit() for c in run) or (run.lower() != run and run.upper() != run)


def _jwt_shaped(run: str) -> bool:
    """After the ``J`` of ``eyJ``: the rest of a header, a dot, a payload (``ey...``), the dot before the signature."""
    return _JWT_REST.match(run) is not None


class KeyFormat(NamedTuple):
    """One row of :data:`KEY_FORMATS`: the keys that start with one of ``prefixes``.

    A key is a prefix, then (with ``lead``) one or more of those characters,
    then a run of ``chars`` at least ``need`` long that passes ``check``.
    ``keep``: the prefix (and lead) stays visible before ``[REDACTED]``.
    """

    what: str
    source: str  # the gitleaks rule ids (or the RFC) this row restates
    prefixes: tuple[str, ...]
    chars: str
    need: int
    check: Callable[[str], bool] | None = _looks_random
    keep: bool = False
    lead: str = ""


_CASES = tuple(
    "".join(c.upper() if i >> k & 1 else c for k, c in enumerate("bearer")) for i in range(64)
)

#: The key formats masked without configuration (see the module docstring for their source).
KEY_FORMATS: tuple[KeyFormat, ...] = (
    KeyFormat("OpenAI and Anthropic API keys (sk-proj-, sk-svcacct-, sk-admin-, sk-ant-...)",
              "openai-api-key, anthropic-api-key, anthropic-admin-api-key (loosened to any sk- key)",
              ("sk-",), _ALNUM + "_-", 16),
    KeyFormat("AWS access key ids (long-term, STS temporary, bearer, context)", "aws-access-token",
              ("AKIA", "ASIA", "ABIA", "ACCA"), _UPPER + _DIGITS, 16, None),
    KeyFormat("Amazon Bedrock long-lived API keys", "aws-amazon-bedrock-api-key-long-lived",
              ("ABSK",), _ALNUM + "+/=", 109),
    KeyFormat("GitHub tokens (personal, OAuth, user-to-server, server-to-server, refresh)",
              "github-pat, github-oauth, github-app-token, github-refresh-token",
              ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _ALNUM, 30),
    KeyFormat("GitHub fine-grained personal access tokens", "github-fine-grained-pat",
              ("github_pat_",), _ALNUM + "_", 82),
    KeyFormat("GitLab tokens", "gitlab-pat, gitlab-deploy-token, gitlab-runner-authentication-token, "
              "gitlab-feed-token, gitlab-scim-token, gitlab-feature-flag-client-token, gitlab-cicd-job-token",
              ("glpat-", "gldt-", "glrt-", "glft-", "glsoat-", "glffct-", "glcbt-"), _ALNUM + "_-", 20),
    KeyFormat("GitLab incoming mail, agent, OAuth app and pipeline trigger tokens",
              "gitlab-incoming-mail-token, gitlab-kubernetes-agent-token, gitlab-oauth-app-secret, gitlab-ptt",
              ("glimt-", "glagent-", "gloas-", "glptt-"), _ALNUM + "_-", 25),
    KeyFormat("Slack tokens", "slack-bot-token, slack-user-token, slack-app-token, slack-legacy-*, "
              "slack-config-access-token, slack-config-refresh-token",
              ("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxo-", "xoxs-", "xoxe-", "xoxe.xoxb-", "xoxe.xoxp-", "xapp-"),
              _ALNUM + "-", 10),
    # rk_ keys are found at their k: a chunk ending in "r" (most words) is not held back for them,
    # and the r stays visible (r[REDACTED]); "s" is held anyway, so sk_ keys are masked whole
    KeyFormat("Stripe secret and restricted keys", "stripe-access-token",
              ("sk_live_", "sk_test_", "sk_prod_", "k_live_", "k_test_", "k_prod_"), _ALNUM, 10),
    KeyFormat("Google API keys", "gcp-api-key", ("AIza",), _ALNUM + "_-", 35),
    # found at the J of eyJ, for the same reason as rk_ above: they show as ey[REDACTED]
    KeyFormat("JSON Web Tokens, bare", "jwt", ("J",), _ALNUM + "_-.=", 37, _jwt_shaped),
    KeyFormat("SendGrid API keys", "sendgrid-api-token", ("SG.",), _ALNUM + "_-.=", 66),
    KeyFormat("Brevo (Sendinblue) API keys", "sendinblue-api-token", ("xkeysib-",), _ALNUM + "-", 81),
    KeyFormat("Shopify tokens", "shopify-access-token, shopify-custom-access-token, "
              "shopify-private-app-access-token, shopify-shared-secret",
              ("shpat_", "shpca_", "shppa_", "shpss_"), _HEX, 32),
    KeyFormat("Sentry user tokens", "sentry-user-token", ("sntryu_",), _HEX, 64),
    KeyFormat("Square access tokens", "square-access-token", ("sq0atp-",), _ALNUM + "_-", 22),
    KeyFormat("Heroku API keys (v2)", "heroku-api-key-v2", ("HRKU-AA",), _ALNUM + "_-", 58),
    KeyFormat("Alibaba Cloud access key ids", "alibaba-access-key-id", ("LTAI",), _ALNUM, 20),
    KeyFormat("age secret keys", "age-secret-key", ("AGE-SECRET-KEY-1",), "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
    KeyFormat("the token after Bearer (any case, any whitespace)", "RFC 6750 b64token",
              _CASES, _ALNUM + "-._~+/=", 8, keep=True, lead=_SPACES),
)


class _Rule(NamedTuple):
    chars: frozenset[str]
    need: int
    check: Callable[[str], bool] | None
    keep: bool
    lead: frozenset[str]


#: prefix -> how the key after it is read
_RULES: dict[str, _Rule] = {
    p: _Rule(frozenset(f.chars), f.need, f.check, f.keep, frozenset(f.lead))
    for f in KEY_FORMATS for p in f.prefixes
}


def _finder(words: list[str]) -> str:
    """A regex finding any of ``words``, or the start of one at the very end of the text.

    One alternation per first character, each of plain literals: the search
    skips a position whose character starts no word, and at the others the
    regex engine rejects an alternative on its first character without
    entering it, so a hundred prefixes cost about what a handful did. (A
    trie of nested groups is twice as slow in ``re``, a single flat
    alternation five times.) No word here is the start of another.
    """
    by_first: dict[str, list[str]] = {}
    for w in words:
        by_first.setdefault(w[0], []).append(w[1:])
    alts = []
    for first, rests in sorted(by_first.items()):
        starts = {r[:i] for r in rests for i in range(len(r))}
        inner = [re.escape(r) for r in sorted(rests, key=len, reverse=True)]
        inner += [re.escape(r) + r"\Z" for r in sorted(starts, key=len, reverse=True)]
        alts.append(re.escape(first) + "(?:" + "|".join(inner) + ")")
    return "|".join(alts)


#: a key prefix, or the start of one at the very end: only then is there work to do
_MAYBE = re.compile(_finder(sorted(_RULES)))
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


def _lead(rule: _Rule, body: str) -> int:
    """How many characters of ``body`` (what followed the prefix) are the rule's lead."""
    i = 0
    while i < len(body) and body[i] in rule.lead:
        i += 1
    return i


def _take(rule: _Rule, body: str, text: str) -> int:
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
    """The built-in key shapes: a prefix found by :data:`_MAYBE`, then the key's run of characters."""
    held, prefix, pending, masked, held2 = carry
    out: list[str] = []
    if held:
        text = held + text
    while True:
        if prefix:
            rule = _RULES[prefix]
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
        m = _MAYBE.search(text)
        if m is None or (final and m.group() not in _RULES):
            out.append(text)  # no prefix; or only the start of one, and the stream is over
            return "".join(out), ("", "", "", False, held2)
        out.append(text[: m.start()])
        if m.group() not in _RULES:  # the start of a prefix at the very end: hold it
            return "".join(out), (text[m.start() :], "", "", False, held2)
        prefix = pending = m.group()
        text = text[m.end() :]


def _fresh(carry: tuple) -> bool:
    return not (carry[0] or carry[1] or carry[4])


class RedactExtension:
    """Masks API keys, bearer tokens and configured patterns in streamed and final output (opt-in)."""

    name = "redact"
    version = "0.2.0"
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
        """Hot path: mask the answer, reasoning and tool-call text of each partial, holding back what may be a key."""
        carries = state.get(_KEY)
        patterns = state["config"].get("redact_patterns")
        if (carries is None and not patterns and native_chunk is not None and not final_messages
                and len(partial_messages) == 1):
            # The commonest chunks of all: one partial, its text free of any key prefix, or with
            # only the start of one at its very end (held, as _quick would, without a second search).
            p = partial_messages[0]
            c = p.get("content")
            if c.__class__ is str and not p.get("metadata"):
                m = _MAYBE.search(c)
                if m is None:
                    return partial_messages, final_messages, native_messages, state
                start = m.start()
                if m.end() == len(c) and m.group() not in _RULES:
                    released = [{**p, "content": c[:start]}] if start else []
                    return released, final_messages, native_messages, {**state, _KEY: c[start:]}
        if carries is None and not patterns and native_chunk is not None and not final_messages:
            # Fast path: nothing held and no key can start in this chunk: pass it on as it is.
            search = _MAYBE.search
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
            final_messages, native_messages = _mask_finals(machine, final_messages, native_messages)
        if new != state.get(_KEY):
            state = {**state, _KEY: new}
        return out, final_messages, native_messages, state


def _stream(machine: Redactor, partials: list[Dict], carries: Any, end: bool) -> tuple[list[Dict], Any]:
    """The full machine over a chunk's partials; with ``end``, everything held is released too.

    Returns the partials to pass on and the new ``state["redact"]``.
    """
    if carries is None:
        content_carry, reasoning_carry, tools = _EMPTY, _EMPTY, {}
    elif carries.__class__ is str:  # only the start of a prefix held (see _quick)
        content_carry, reasoning_carry, tools = (carries, "", "", False, ""), _EMPTY, {}
    else:
        content_carry, reasoning_carry, *rest = carries
        tools = {k: tuple(c) for k, c in rest[0]} if rest else {}
    out: list[Dict] = []
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
            out.append({"role": "assistant", "content": "", "metadata": {"reasoning": rtail}})
        if tail:
            out.append({"role": "assistant", "content": tail})
        ends = [{"index": k, "function": {"arguments": machine.step("", c, final=True)[0]}}
                for k, c in sorted(tools.items(), key=lambda kc: str(kc[0]))]
        ends = [e for e in ends if e["function"]["arguments"]]
        if ends:
            out.append({"role": "assistant", "content": "", "metadata": {"tool_calls": ends}})
        tools = {}
    tools = {k: c for k, c in tools.items() if not _fresh(c)}
    if tools:
        return out, (content_carry, reasoning_carry, tuple(sorted(tools.items(), key=lambda kc: str(kc[0]))))
    if _fresh(content_carry) and _fresh(reasoning_carry):
        return out, None
    if _fresh(reasoning_carry) and not (content_carry[1] or content_carry[4]):
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
    masked, tools[key] = machine.step(args, tools.get(key, _EMPTY))
    return {**call, "function": {**fn, "arguments": masked}}


def _quick(p: Dict, carries: Any) -> tuple[list[Dict], Any] | None:
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


#: where a native final keeps tool calls: the wire ``tool_calls``, and the notes of the bundled tools
#: extensions on calls cut short or whose input did not parse (never sent, but stored and shown)
_CALL_LISTS = ("tool_calls", "_incomplete_tool_calls", "_cut_tool_uses")


def _mask_message(machine: Redactor, m: Dict) -> Dict:
    """A native final with its text fields and tool-call arguments masked."""
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
        masked_raw = {k: _mask_arguments(machine, v) for k, v in raw.items()}
        if any(masked_raw[k] is not v for k, v in raw.items()):
            changes["_tool_arguments"] = masked_raw
    meta = m.get("metadata")
    if isinstance(meta, Mapping) and isinstance(meta.get("tool_calls"), list):
        masked_calls = [_mask_call(machine, c) for c in meta["tool_calls"]]
        if any(a is not b for a, b in zip(masked_calls, meta["tool_calls"])):
            changes["metadata"] = {**meta, "tool_calls": masked_calls}
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
    if "input" in block:  # a tool_use block
        masked_input = _deep(machine, block["input"])
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
        args = _mask_arguments(machine, fn["arguments"])
        if args is not fn["arguments"]:
            changes["function"] = {**fn, "arguments": args}
    for key in ("arguments", "input"):
        if key in call:
            value = _mask_arguments(machine, call[key])
            if value is not call[key]:
                changes[key] = value
    return {**call, **changes} if changes else call


def _mask_arguments(machine: Redactor, value: Any) -> Any:
    """Argument text (JSON, or raw text that did not parse) or parsed arguments, masked.

    JSON text is masked as text first, which keeps it valid JSON (no key
    character is a quote or a backslash); when it holds an escape, which can
    hide a key from that scan (``Bearer\\t...``, ``\\u0073k-...``), its
    decoded strings are masked too and the text is written again.
    """
    if not isinstance(value, str):
        return _deep(machine, value)
    masked = machine.text(value)
    if "\\" in masked:
        try:
            decoded = json.loads(masked)
        except ValueError:
            pass
        else:
            again = _deep(machine, decoded)
            if again is not decoded:
                return json.dumps(again, ensure_ascii=False)
    return masked if masked != value else value


def _deep(machine: Redactor, value: Any) -> Any:
    """Every string in a JSON-like value masked (keys are names, left alone); the same object when nothing changed."""
    if isinstance(value, str):
        masked = machine.text(value)
        return masked if masked != value else value
    if isinstance(value, Mapping):
        items = {k: _deep(machine, v) for k, v in value.items()}
        return items if any(items[k] is not v for k, v in value.items()) else value
    if isinstance(value, (list, tuple)):
        seq = [_deep(machine, v) for v in value]
        return seq if any(a is not b for a, b in zip(seq, value)) else value
    return value
