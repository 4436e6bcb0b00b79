"""An in-flight request as ``cancel_request`` reaches it, and the per-request engine keys it reads."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping
from typing import Any

from .effects import CancellationToken
from .errors import ConfigError, PluginError
from .hooks import LivePlugin, call_hook

__all__ = ["Flight", "RunCancelled", "tool_timeout_of"]


class RunCancelled(Exception):
    """Internal: the request was cancelled; the run unwinds to a ``cancelled`` outcome."""


class Flight:
    """An in-flight request, as ``cancel_request`` sees it."""

    __slots__ = ("request_id", "provider", "token", "config", "_lock")

    def __init__(self, request_id: str, config: Mapping[str, Any] | None = None) -> None:
        self.request_id = request_id
        # the caller's config, secrets included: what a side request borrows; plugins never get it
        self.config: Mapping[str, Any] = config or {}
        self.provider: LivePlugin | None = None
        self.token = CancellationToken()  # what running tools get as ``cancellation``
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self.token.cancelled

    def cancel(self) -> None:
        self.token.cancel()
        with self._lock:
            provider = self.provider
        if provider is not None:
            try:
                call_hook(provider, "cancel_request", self.request_id)
            except PluginError as exc:
                warnings.warn(f"cancel_request of {provider.name!r} failed: {exc}", RuntimeWarning, stacklevel=2)

    def attach(self, provider: LivePlugin) -> None:
        with self._lock:
            self.provider = provider


def tool_timeout_of(config: Mapping[str, Any]) -> float | None:
    """``tool_timeout_s``: seconds a tool call may run (None: no limit)."""
    value = config.get("tool_timeout_s")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ConfigError(
            f"config key 'tool_timeout_s' must be a positive number of seconds (or null), got {value!r}",
            key="tool_timeout_s",
        )
    return float(value)
