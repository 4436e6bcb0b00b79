"""Usage details and answer notes as each dialect writes them, from what the providers kept.

A provider keeps its API's usage on each answer (``metadata["usage"]``), normalized:
``cache_read_tokens``, ``cache_write_tokens`` and ``reasoning_tokens`` whatever the API,
and the API's own extra keys as it sent them (Chat Completions' ``prompt_tokens_details``).
The engine's :class:`~agent_core.Usage` sums only the totals, so the facades read the
details here, summed over the turn's answers (a server-run tool loop makes several):

* a Messages client gets ``cache_creation_input_tokens`` and ``cache_read_input_tokens``
  (from an Anthropic upstream as it counted them; from OpenAI, its cached prompt tokens);
* a Chat client gets ``prompt_tokens_details`` and ``completion_tokens_details``: an OpenAI
  upstream's as it sent them, others' cache and reasoning counts under OpenAI's names;
  and the answer's ``system_fingerprint`` and ``service_tier``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...types import Message

__all__ = ["anthropic_usage", "chat_details", "chat_notes"]


def _usages(replies: Iterable[Message | None]) -> list[Mapping[str, Any]]:
    out = []
    for reply in replies:
        usage = reply.metadata.get("usage") if reply is not None and reply.role == "assistant" else None
        if isinstance(usage, Mapping):
            out.append(usage)
    return out


def _count(usages: Iterable[Mapping[str, Any]], key: str) -> int:
    return sum(int(u[key]) for u in usages if type(u.get(key)) is int)


def anthropic_usage(usage: Any, replies: Iterable[Message | None]) -> dict[str, int]:
    """The Messages API's ``usage``: the totals, and the prompt cache's writes and reads."""
    usages = _usages(replies)
    return {"input_tokens": usage.input_tokens if usage is not None else 0,
            "output_tokens": usage.output_tokens if usage is not None else 0,
            "cache_creation_input_tokens": _count(usages, "cache_write_tokens"),
            "cache_read_input_tokens": _count(usages, "cache_read_tokens")}


def _summed(usages: Iterable[Mapping[str, Any]], key: str) -> dict[str, int]:
    """The upstream's own ``key`` details (a dict of counts), summed key by key."""
    out: dict[str, int] = {}
    for usage in usages:
        details = usage.get(key)
        if isinstance(details, Mapping):
            for name, value in details.items():
                if type(value) is int:
                    out[name] = out.get(name, 0) + value
    return out


def chat_details(replies: Iterable[Message | None]) -> dict[str, dict[str, int]]:
    """Chat Completions' usage details, when the upstream counted any."""
    usages = _usages(replies)
    prompt = _summed(usages, "prompt_tokens_details")
    completion = _summed(usages, "completion_tokens_details")
    if "cached_tokens" not in prompt and any("cache_read_tokens" in u for u in usages):
        prompt["cached_tokens"] = _count(usages, "cache_read_tokens")
    if "reasoning_tokens" not in completion and any("reasoning_tokens" in u for u in usages):
        completion["reasoning_tokens"] = _count(usages, "reasoning_tokens")
    out = {}
    if prompt:
        out["prompt_tokens_details"] = prompt
    if completion:
        out["completion_tokens_details"] = completion
    return out


def chat_notes(reply: Message | None) -> dict[str, Any]:
    """The answer's ``system_fingerprint`` and ``service_tier`` as the upstream gave them (null when it gave none)."""
    meta = reply.metadata if reply is not None else {}
    return {"service_tier": meta.get("service_tier"), "system_fingerprint": meta.get("system_fingerprint")}
