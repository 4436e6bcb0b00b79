"""``usage``: tokens and estimated cost per message and per session.

Providers put ``metadata["usage"]`` (``input_tokens``, ``output_tokens``,
``cache_read_tokens``, ...) on their answers. This feature adds the estimated
``cost`` to each message's usage from config ``prices`` and keeps the running
total in ``session.metadata["usage"]``, so a UI can show both without adding
anything up itself.

``prices`` maps a model id (or ``"*"`` for any other) to dollars per million
tokens: ``{"gpt-4o-mini": {"input": 0.15, "output": 0.6, "cached": 0.075}}``.
Cached input tokens (``cache_read_tokens``) are charged at ``cached`` (at
``input`` when absent) and the rest of ``input_tokens`` at ``input``. Without a
price for the model there is no ``cost`` (rather than a made-up zero).

The total is kept by a ``response_finalize`` action (``usage_total``), which
sees each provider call's finals and the session before them, so a tool loop
of several calls adds up exactly once per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["UsageFeature", "cost_of"]

_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


def _price_for(prices: Any, model: Any) -> Mapping[str, Any] | None:
    if not isinstance(prices, Mapping):
        return None
    found = prices.get(str(model)) if model is not None else None
    found = found if found is not None else prices.get("*")
    return found if isinstance(found, Mapping) else None


def cost_of(usage: Mapping[str, Any], prices: Any, model: Any) -> float | None:
    """Dollars for ``usage`` at ``prices[model]`` (or ``prices["*"]``); None without a price."""
    price = _price_for(prices, model)
    if price is None:
        return None
    inp = float(price.get("input") or 0)
    out = float(price.get("output") or 0)
    cached_price = float(price.get("cached", inp) or 0)
    total_in = int(usage.get("input_tokens") or 0)
    cached = min(int(usage.get("cache_read_tokens") or 0), total_in)
    dollars = ((total_in - cached) * inp + cached * cached_price + int(usage.get("output_tokens") or 0) * out) / 1e6
    return round(dollars, 8)


def _model(config: Any, message: Mapping[str, Any]) -> Any:
    meta = message.get("metadata") or {}
    return meta.get("model") or config.get("model")


class UsageFeature:
    name = "usage"
    version = "1.0.0"
    priority = 110  # after features that rewrite finals

    def is_enabled(self, config: Any, tags: Any, models: Any, context: Any) -> bool:
        """On with ``prices``, or when ``enabled_plugins`` names it (token totals without costs)."""
        return bool(config.get("prices")) or "usage" in (config.get("enabled_plugins") or ())

    def get_config_schema(self) -> dict[str, Any]:
        return {"prices": {"type": "object", "default": {},
                           "description": "Per model (or '*'): dollars per million input/output/cached tokens."}}

    def get_ui_elements(self, config: Any) -> list[dict[str, Any]]:
        return [
            {"ui_type": "status_bar", "data": "session.metadata.usage",
             "template": "{{data.input_tokens}} in / {{data.output_tokens}} out, ${{data.cost}}", "label": "Usage"},
            {"ui_type": "message_footer", "data": "metadata.usage",
             "template": "{{data.input_tokens}} in / {{data.output_tokens}} out, ${{data.cost}}", "label": "Tokens"},
        ]

    def get_actions(self, state: Any) -> list[dict[str, Any]]:
        return [{"id": "usage_total", "label": "Add up usage", "trigger": "response_finalize"}]

    def execute_action(self, action_id: str, session: Any, native_messages: Any, params: Any, context: Any,
                       state: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"native_messages": list(native_messages)}
        if action_id != "usage_total" or context is None or "final_messages" not in context:
            return out
        config = context.get("config") or {}
        prices = config.get("prices")
        previous = (context.get("session") or {}).get("metadata", {}).get("usage") or {}
        total: dict[str, Any] = {k: v for k, v in previous.items() if k in (*_COUNTS, "cost", "messages")}
        finals = []
        counted = False
        for m in context["final_messages"]:
            meta = m.get("metadata") or {}
            usage = meta.get("usage")
            if not isinstance(usage, Mapping):
                finals.append(m)
                continue
            usage = dict(usage)
            cost = cost_of(usage, prices, _model(config, m))
            if cost is not None:
                usage["cost"] = cost
            finals.append({**m, "metadata": {**meta, "usage": usage}})
            for key in _COUNTS:
                if isinstance(usage.get(key), int):
                    total[key] = int(total.get(key) or 0) + usage[key]
            if cost is not None:
                total["cost"] = round(float(total.get("cost") or 0) + cost, 8)
            total["messages"] = int(total.get("messages") or 0) + 1
            counted = True
        if counted:
            out["final_messages"] = finals
            out["session_metadata"] = {"usage": total}
        return out
