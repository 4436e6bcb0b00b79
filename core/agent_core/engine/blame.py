"""What an exception a hook raised during a provider call becomes, and the fix its message names.

A typed failure (the provider's ``LLMError``, a cancellation) passes as it is;
anything else becomes a :class:`~agent_core.errors.PluginError` naming the
plugin and the hook. Where the usual cause of a mistake is known, the message
says it: an extension that read a final as ``{role, content}`` in front of a
provider whose natives have another shape.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError, LLMError, PluginError, ProviderRequestCancelled
from ..plugins.hooks import LivePlugin
from ..plugins.native_view import misread_natives
from ..runtime.flight import Flight, RunCancelled

__all__ = ["PASS", "PASS_CLOSING", "TYPED_ERRORS", "hot_failure", "provider_failure"]

PASS = (LLMError, ProviderRequestCancelled)  # typed failures a hot hook may raise as they are
PASS_CLOSING = (*PASS, PluginError, ConfigError)  # at the closing step, as any cold hook call (call_hook)


def hot_failure(plugin: Any, exc: Exception, passing: tuple[type[Exception], ...] = PASS, *,
                finals: Any = None, provider: Any = None) -> Exception:
    """What an exception a chain's hook raised becomes: a typed failure (``passing``) as it is, else a PluginError.

    Raised by the caller; a PluginError has ``exc`` as its ``__cause__``, as
    ``raise ... from exc`` would set (written here once, not at every hook call).
    ``finals`` and ``provider`` (the closing step's) let the message name a shape mistake.
    """
    if isinstance(exc, passing):
        return exc
    error = PluginError(plugin.name, "process_chunk", exc, detail=misread_natives(exc, finals, provider))
    error.__cause__ = exc
    return error


def provider_failure(flight: Flight, provider: LivePlugin, hook: str, exc: BaseException) -> BaseException:
    """What a failed provider call becomes: a cancellation, a typed error as it is, or a PluginError."""
    if flight.cancelled:
        return RunCancelled()
    if isinstance(exc, (LLMError, ProviderRequestCancelled, PluginError, ConfigError, RunCancelled)):
        return exc
    return PluginError(provider.name, hook, exc, detail=f"{type(exc).__name__}: {exc}; {TYPED_ERRORS}")


#: what a provider's message says when it raised something untyped
TYPED_ERRORS = (
    "when it reports what the API said, raise the typed error of agent_core.errors instead, so retries, the CLI and the "
    "server can act on them: RateLimitError(message, provider=..., status_code=429, retry_after=...) for a 429, "
    "AuthenticationError for 401/403, InvalidRequestError for another 4xx, ProviderUnavailableError for a 5xx or "
    "an unreachable server, MalformedResponseError for an answer its API never sends (each with upstream=... "
    "for the API's own account, see docs/writing-plugins.md)"
)
