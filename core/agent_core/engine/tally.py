"""A request's usage as it accumulates: tokens reported by each provider call, and the calls made.

Counted in one place, by name, while the request runs (the finals' reported usage, and the
usage of attempts a stream retry threw away, which may still be billed); frozen into a
:class:`~agent_core.values.events.Usage` for the events and the observer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..values.events import Usage

__all__ = ["UsageTally"]


class UsageTally:
    """Mutable counts for one request; :meth:`usage` is their frozen form."""

    __slots__ = ("input_tokens", "output_tokens", "provider_calls")

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.provider_calls = 0

    def add(self, usage: Usage) -> None:
        """Tokens an attempt reported (a retried stream's, thrown away but billed)."""
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens

    def add_reported(self, reported: Any) -> None:
        """A final's ``metadata["usage"]``, as a provider put it there: only int counts are taken."""
        if not isinstance(reported, Mapping):
            return
        tokens_in, tokens_out = reported.get("input_tokens"), reported.get("output_tokens")
        if isinstance(tokens_in, int) and not isinstance(tokens_in, bool):
            self.input_tokens += tokens_in
        if isinstance(tokens_out, int) and not isinstance(tokens_out, bool):
            self.output_tokens += tokens_out

    def usage(self) -> Usage:
        return Usage(self.input_tokens, self.output_tokens, self.provider_calls)
