"""``compact_native_history``: a long conversation made short enough to send again.

Why an action on the native history: what the model is sent on the next
request is the provider-native history stored in the session, not the core
messages. Shortening that record (and only that) lets a conversation go on
past the model's context window while the application keeps every core
message for its user. The engine stores the returned history with the
digest of the current core messages, so the next request reuses it and
appends only what is new.

Two ways, one rule. The history is cut into turns: each turn starts at a
user message that is not a tool result, so a tool call and its result
(OpenAI ``tool`` messages, Anthropic ``tool_result`` blocks) always stay in
the same turn and are never separated. Leading system messages are always
kept. The newest turns are kept while the estimate (about 4 bytes of JSON
per token) stays within ``max_context_tokens``; the newest turn is kept
even if it alone is over. The older turns are then either dropped, or,
with the input ``instructions`` (or ``mode: "summarize"``), replaced by one
user message holding a summary that the model writes in a temporary session
(``context["core"].side_request``: the same provider, endpoint and key as the
call that asked, tools off, one provider call).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from agent_core.errors import ConfigError
from agent_core.plugin_kit import Extension

if TYPE_CHECKING:
    from agent_core.plugin_kit import Dict

__all__ = ["CompactHistoryExtension", "estimate_tokens", "split_turns"]

DEFAULT_MAX_TOKENS = 32000
DEFAULT_INSTRUCTIONS = (
    "Summarize the conversation below for the assistant who will continue it: the user's goals, the facts, "
    "decisions and tool results that still matter, and any open questions. Be concise; write the summary only."
)
SUMMARY_PREFIX = "Summary of the earlier conversation:\n"
_SYSTEM_ROLES = ("system", "developer")
_encode = msgspec.json.Encoder().encode


def estimate_tokens(native: Any) -> int:
    """A rough token count of one native message: a token per 4 bytes of its JSON (no tokenizer needed).

    Keys starting with ``_`` are the provider's own bookkeeping (finish
    reason, usage), never sent, so they are not counted.
    """
    if isinstance(native, Mapping):
        native = {k: v for k, v in native.items() if not (isinstance(k, str) and k.startswith("_"))}
    try:
        return len(_encode(native)) // 4 + 1
    except (TypeError, msgspec.EncodeError):
        return len(repr(native)) // 4 + 1


def _answers_a_call(native: Any) -> bool:
    """A tool result: OpenAI's ``role: "tool"``, or an Anthropic user message carrying ``tool_result`` blocks."""
    if not isinstance(native, Mapping):
        return False
    if native.get("role") == "tool":
        return True
    content = native.get("content")
    return (native.get("role") == "user" and isinstance(content, (list, tuple))
            and any(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content))


def split_turns(native: Sequence[Any]) -> tuple[list[Any], list[list[Any]]]:
    """``(leading system messages, turns)``; a turn starts at each user message that is not a tool result."""
    i = 0
    while i < len(native) and isinstance(native[i], Mapping) and native[i].get("role") in _SYSTEM_ROLES:
        i += 1
    prefix, turns = list(native[:i]), []
    for message in native[i:]:
        starts = isinstance(message, Mapping) and message.get("role") == "user" and not _answers_a_call(message)
        if starts or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return prefix, turns


def _kept_from(turns: list[list[Any]], budget: int) -> int:
    """Index of the first turn kept: the newest turns that fit ``budget`` tokens (at least one)."""
    used, first = 0, len(turns)
    for index in range(len(turns) - 1, -1, -1):
        cost = sum(estimate_tokens(m) for m in turns[index])
        if used + cost > budget and first < len(turns):
            break
        used += cost
        first = index
    return first


def _text_of(native: Mapping[str, Any]) -> str:
    """What a native message said, as plain text for the summary prompt."""
    parts: list[str] = []
    content = native.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, (list, tuple)):
        for block in content:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind == "tool_use":
                parts.append(f"[called {block.get('name')}({_encode(block.get('input', {})).decode()})]")
            elif kind == "tool_result":
                body = block.get("content")
                if isinstance(body, (list, tuple)):
                    body = " ".join(str(b.get("text", "")) for b in body if isinstance(b, Mapping))
                parts.append(f"[tool result: {body}]")
    for call in native.get("tool_calls") or ():
        fn = call.get("function", {}) if isinstance(call, Mapping) else {}
        parts.append(f"[called {fn.get('name')}({fn.get('arguments', '')})]")
    return " ".join(p for p in parts if p)


def transcript(messages: Sequence[Any], limit: int) -> str:
    """The messages as ``role: text`` lines, the newest ``limit`` bytes of it at most."""
    lines = [f"{m.get('role', '?')}: {_text_of(m)}" for m in messages if isinstance(m, Mapping)]
    text = "\n".join(lines)
    data = text.encode("utf-8")
    return data[-limit:].decode("utf-8", "ignore") if len(data) > limit else text


class CompactHistoryExtension(Extension):
    """The ``compact_native_history`` action: older turns of the native history dropped or summarized.

    Enabled by default: it only acts when an application runs its action.
    """

    name = "compact_history"
    version = "0.1.0"
    priority = 97
    config_schema = {
        "max_context_tokens": {
            "type": "integer", "minimum": 1, "default": DEFAULT_MAX_TOKENS,
            "description": "token estimate (4 bytes of JSON a token) the compacted native history fits in",
        },
    }
    actions = ({
        "id": "compact_native_history",
        "label": "Compact the history sent to the model",
        "description": "drop (or summarize, with instructions) the oldest turns beyond max_context_tokens",
        "inputs": {
            "max_context_tokens": {"type": "integer", "description": "overrides the config value"},
            "instructions": {"type": "string",
                             "description": "summarize the dropped turns following these instructions"},
            "mode": {"type": "string", "default": "", "description": "'drop' or 'summarize'"},
        },
    },)

    def execute_action(self, action_id: str, session: Any, native_messages: Any, params: Any, context: Any,
                       state: Any = None) -> Dict:
        context = context or {}
        config = context.get("config") or {}
        limit = params.get("max_context_tokens") or config.get("max_context_tokens") or DEFAULT_MAX_TOKENS
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"max_context_tokens must be a whole number >= 1, got {limit!r}", key="max_context_tokens")
        mode = params.get("mode") or ("summarize" if params.get("instructions") else "drop")
        if mode not in ("drop", "summarize"):
            raise ConfigError(f"compact_native_history: mode must be 'drop' or 'summarize', got {mode!r}", key="mode")
        native = list(native_messages)
        prefix, turns = split_turns(native)
        before = sum(estimate_tokens(m) for m in native)
        first = _kept_from(turns, limit - sum(estimate_tokens(m) for m in prefix))
        dropped = [m for turn in turns[:first] for m in turn]
        kept = [m for turn in turns[first:] for m in turn]
        report = {"mode": mode, "dropped_messages": len(dropped), "kept_messages": len(prefix) + len(kept),
                  "estimated_tokens_before": before}
        if not dropped:
            return {"compact_history": {**report, "estimated_tokens_after": before}}
        middle: list[Any] = []
        if mode == "summarize":
            summary = self._summarize(context.get("core"), dropped, params.get("instructions") or DEFAULT_INSTRUCTIONS,
                                      limit, config)
            middle = [{"role": "user", "content": SUMMARY_PREFIX + summary}]
        out = [*prefix, *middle, *kept]
        report["estimated_tokens_after"] = sum(estimate_tokens(m) for m in out)
        return {"native_messages": out, "session_metadata": {"compact_history": report}, "compact_history": report}

    @staticmethod
    def _summarize(core: Any, dropped: list[Any], instructions: str, limit: int, config: Mapping[str, Any]) -> str:
        if core is None:
            raise RuntimeError("compact_native_history: summarizing needs context['core'] to ask the model")
        asked = core.add_message(core.create_session("compact-history"), "user",
                                 f"{instructions}\n\n<conversation>\n{transcript(dropped, limit * 4)}\n</conversation>")
        overrides = {"enabled_plugins": [], "max_iterations": 1, "stream": False,
                     "disabled_plugins": [*(config.get("disabled_plugins") or ()), "compact_history"]}
        result = core.side_request(asked, overrides)
        answers = [m.content for m in result.final_messages if m.role == "assistant" and isinstance(m.content, str)]
        summary = answers[-1].strip() if answers else ""
        if not summary:
            raise RuntimeError(f"compact_native_history: the model wrote no summary ({result.outcome})")
        return summary
