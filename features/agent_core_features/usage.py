"""``usage``: tokens and estimated cost per message and per session.

Providers put ``metadata["usage"]`` (``input_tokens``, ``output_tokens``,
``cache_read_tokens``, ...) on their answers. This feature adds the estimated
``cost`` to each message's usage from config ``prices`` and keeps the running
total in ``session.metadata["usage"]``, so a UI can show both without adding
anything up itself.

It follows the ordinary enablement rules: on by default, because it only
records what the provider reported and never changes what is sent; off with
``disabled_plugins=["usage"]``. Token totals need no config; ``cost`` needs
``prices``.

``prices`` maps a model id (or ``"*"`` for any other) to dollars per million
tokens: ``{"gpt-4o-mini": {"input": 0.15, "output": 0.6, "cached": 0.075}}``.
The price is looked up under the model the answer's ``metadata["model"]``
names, when its provider reports one (often a dated snapshot such as
``gpt-4o-mini-2024-07-18``), then the configured ``model``, then ``"*"``.
Cached input tokens (``cache_read_tokens``) are charged at ``cached`` (at
``input`` when absent) and the rest of ``input_tokens`` at ``input``. Without a price for the model there is no
``cost`` (rather than a made-up zero). A malformed ``prices`` (not a mapping,
a key other than ``input``/``output``/``cached``, a negative or non-numeric
price, NaN, an infinity or anything above :data:`MAX_PRICE`) is a
``ConfigError`` naming ``prices``, the model and the price key, raised by
``init``, which runs before any provider call.

Why a ceiling: a price is config a client may send, and it is only used after
the paid call, when the answer's tokens are multiplied by it. NaN and the
infinities compare as numbers >= 0 would, and ``1e308`` or a 400-digit integer
overflows once multiplied (a float ``inf``, or an ``OverflowError`` converting
the integer), which would fail the request after the provider was paid. At
most :data:`MAX_PRICE` (1,000 dollars a token) is far above any real price and
keeps every cost finite for any token count below 10**290. The same holds on
the way out: a token count or a stored running total that cannot be read as a
number gives no ``cost`` (or restarts that total) instead of failing the request.

The total is kept by a ``response_finalize`` action (``usage_total``), which
sees each provider call's finals and the session before them, so a tool loop
of several calls adds up exactly once per call.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping
from typing import Any

from agent_core.errors import ConfigError
from agent_core.plugin_kit import Feature

__all__ = ["MAX_PRICE", "PRICE_KEYS", "UsageFeature", "check_prices", "cost_of"]

#: what a price entry may say, in dollars per million tokens
PRICE_KEYS = ("input", "output", "cached")
#: the largest price accepted, in dollars per million tokens (1,000 dollars a token)
MAX_PRICE = 1e9
_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


class _Short(reprlib.Repr):
    """A bounded repr for error messages: ``repr`` of a 5,000-digit integer itself raises ``ValueError``."""

    def repr_int(self, x: int, level: int) -> str:
        return repr(x) if x.bit_length() <= 64 else f"<an integer of {x.bit_length()} bits>"


_show = _Short().repr


def check_prices(prices: Any) -> None:
    """Check ``prices`` as config, before anything is sent.

    Raises:
        ConfigError: with ``key="prices"``, naming the model and price key, when
            ``prices`` is not a mapping of mappings, a key is not one of
            :data:`PRICE_KEYS`, or a price is not a number from 0 to
            :data:`MAX_PRICE` (NaN and the infinities included).
    """
    if prices is None:
        return
    if not isinstance(prices, Mapping):
        raise ConfigError(f"prices must map model ids (or '*') to prices, got {type(prices).__name__}", key="prices")
    for model, price in prices.items():
        if not isinstance(price, Mapping):
            raise ConfigError(f"prices[{model!r}] must be a mapping like {{'input': 0.15, 'output': 0.6}}, "
                              f"got {_show(price)}", key="prices")
        for key, value in price.items():
            if key not in PRICE_KEYS:
                raise ConfigError(f"prices[{model!r}] has {key!r}; expected {', '.join(PRICE_KEYS)} "
                                  "(dollars per million tokens)", key="prices")
            # ``not 0 <= value <= MAX_PRICE`` is also true for NaN, which no comparison holds for
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_PRICE:
                raise ConfigError(f"prices[{model!r}][{key!r}] must be a number >= 0 and at most {MAX_PRICE:,.0f} "
                                  f"(dollars per million tokens), got {_show(value)}", key="prices")


def _price_for(prices: Any, *models: Any) -> Mapping[str, Any] | None:
    if not isinstance(prices, Mapping):
        return None
    for model in models:
        if model is not None and isinstance(prices.get(str(model)), Mapping):
            return prices[str(model)]  # type: ignore[no-any-return]
    found = prices.get("*")
    return found if isinstance(found, Mapping) else None


def cost_of(usage: Mapping[str, Any], prices: Any, *models: Any) -> float | None:
    """Dollars for ``usage`` at the price of the first of ``models`` listed (else ``"*"``).

    Returns:
        The cost rounded to 8 decimals; None without a price for the models,
        or when a count the provider reported is not a number or the cost
        would not be a finite one (never an exception: this runs after the
        paid call).
    """
    price = _price_for(prices, *models)
    if price is None:
        return None
    try:
        inp = float(price.get("input") or 0)
        out = float(price.get("output") or 0)
        cached_price = float(price.get("cached", inp) or 0)
        total_in = int(usage.get("input_tokens") or 0)
        cached = min(int(usage.get("cache_read_tokens") or 0), total_in)
        dollars = ((total_in - cached) * inp + cached * cached_price + int(usage.get("output_tokens") or 0) * out) / 1e6
    except (TypeError, ValueError, OverflowError):
        return None
    return round(dollars, 8) if math.isfinite(dollars) else None


def _carried(previous: Any) -> dict[str, Any]:
    """The session's running total, keeping only the numbers it can add to (session metadata is client data)."""
    if not isinstance(previous, Mapping):
        return {}
    total: dict[str, Any] = {}
    for key, value in previous.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if key == "cost" and (value.bit_length() <= 64 if isinstance(value, int) else math.isfinite(value)):
            total[key] = value  # (math.isfinite of a 400-digit integer raises OverflowError)
        elif key in (*_COUNTS, "messages") and isinstance(value, int):
            total[key] = value
    return total


def _models(config: Any, message: Mapping[str, Any]) -> tuple[Any, Any]:
    """Where to look a price up: the model the answer names, then the configured one."""
    return (message.get("metadata") or {}).get("model"), config.get("model")


class UsageFeature(Feature):
    name = "usage"
    version = "1.0.0"
    priority = 110  # after features that rewrite finals
    config_schema = {"prices": {"type": "object", "default": {},
                                "description": "Per model (or '*'): dollars per million input/output/cached tokens."}}
    ui_elements = (
        {"ui_type": "status_bar", "data": "session.metadata.usage",
         "template": "{{data.input_tokens}} in / {{data.output_tokens}} out tokens, ${{data.cost}}",
         "label": "Session total"},
        {"ui_type": "message_footer", "data": "metadata.usage",
         "template": "{{data.input_tokens}} in / {{data.output_tokens}} out, ${{data.cost}}", "label": "Tokens"},
    )
    actions = ({"id": "usage_total", "label": "Add up usage", "trigger": "response_finalize"},)

    def init(self, config: Any, state: Any) -> Any:
        check_prices(config.get("prices"))
        return state

    def execute_action(self, action_id: str, session: Any, native_messages: Any, params: Any, context: Any,
                       state: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"native_messages": list(native_messages)}
        if action_id != "usage_total" or context is None or "final_messages" not in context:
            return out
        config = context.get("config") or {}
        prices = config.get("prices")
        total = _carried(((context.get("session") or {}).get("metadata") or {}).get("usage"))
        finals = []
        counted = False
        for m in context["final_messages"]:
            meta = m.get("metadata") or {}
            usage = meta.get("usage")
            if not isinstance(usage, Mapping):
                finals.append(m)
                continue
            usage = dict(usage)
            cost = cost_of(usage, prices, *_models(config, m))
            if cost is not None:
                usage["cost"] = cost
            finals.append({**m, "metadata": {**meta, "usage": usage}})
            for key in _COUNTS:
                if isinstance(usage.get(key), int):
                    total[key] = int(total.get(key) or 0) + usage[key]
            if cost is not None:
                added = round(float(total.get("cost") or 0) + cost, 8)
                if math.isfinite(added):  # two finite costs near the float limit can still sum to inf
                    total["cost"] = added
            total["messages"] = int(total.get("messages") or 0) + 1
            counted = True
        if counted:
            out["final_messages"] = finals
            out["session_metadata"] = {"usage": total}
        return out
