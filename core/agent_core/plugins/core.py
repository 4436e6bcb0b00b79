"""``context["core"]``: the narrow face of the engine that plugins are handed.

Plugins legitimately need a few engine services: temporary sessions to ask
the model something on the side (summarize, classify, write a title), and a
way to make that side call with the request's own provider, endpoint and
credentials. They do not need the plugin registry, registration, cancelling
other requests or the in-flight table, and handing them the whole
:class:`~agent_core.AgentCore` would make all of that their API. So contexts
carry a :class:`PluginCore`, bound to the request it was made for.

A side request runs with the in-flight request's config as the application
passed it, secrets included, which the engine keeps on the request's flight:
the plugin names the request, never sees the key, and may change only what
cannot redirect the credentials (:func:`side_config`): not ``provider``, not
``base_url``, not a secret.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ..errors import ConfigError, ConfigNotAllowedError, InvalidArgumentError
from ..values.frozen import left_as_is
from ..values.messages import Session
from .config import REDACTED, is_secret_name
from .config_policy import string_keys

__all__ = ["FIXED_KEYS", "PluginCore", "side_config"]

#: keys a side request always takes from the request it serves (with every secret)
FIXED_KEYS = frozenset({"provider", "base_url"})


def side_config(
    config: Mapping[str, Any], overrides: Mapping[str, Any] | None, secret_keys: Collection[str]
) -> dict[str, Any]:
    """The in-flight ``config`` with ``overrides`` applied, refusing keys that would redirect its credentials.

    Raises:
        ConfigError: ``overrides`` is not a mapping, or sets ``provider``,
            ``base_url`` or a secret key (``key`` names it; no value is quoted).
    """
    if overrides is None:
        return dict(config)
    for key in string_keys(overrides, "side_request overrides must be a mapping",
                           "side_request override keys must be strings"):
        if key in FIXED_KEYS or key in secret_keys or is_secret_name(key) or overrides[key] == REDACTED:
            raise ConfigError(
                f"side_request may not override {key!r}: a side request runs with the provider, endpoint and "
                "credentials of the request it serves",
                key=key,
            )
    return {**config, **overrides}


@left_as_is  # in every hook's context, which is frozen a few times a request
class PluginCore:
    """What a plugin reaches through ``context["core"]``.

    Sessions: :meth:`create_session`, :meth:`add_message`,
    :meth:`slice_session` (temporary sessions; nothing is stored). Model
    calls: :meth:`side_request` / :meth:`aside_request`. ``request_id`` is
    the request this context belongs to; for an action the application runs
    with ``execute_action`` it is None, and side requests borrow the config
    the application passed to that call instead (``config``).
    """

    __slots__ = ("_config", "_engine", "_sides", "request_id")

    def __init__(self, engine: Any, request_id: str | None = None, *,
                 config: Mapping[str, Any] | None = None, side_requests: bool = True) -> None:
        self._engine = engine
        self.request_id = request_id
        self._config = dict(config) if config is not None else None
        self._sides = side_requests  # False: the application does not let this action call the model

    def __repr__(self) -> str:
        return f"PluginCore(request_id={self.request_id!r})"

    def create_session(self, session_id: str | None = None, metadata: Mapping[str, Any] | None = None) -> Session:
        """A new, empty session (fresh id unless given)."""
        return self._engine.create_session(session_id, metadata)  # type: ignore[no-any-return]

    def add_message(self, session: Session, message: Any, content: Any = None,
                    metadata: Mapping[str, Any] | None = None) -> Session:
        """``session`` with one more message (a Message, a dict, or role, content, metadata)."""
        return self._engine.add_message(session, message, content, metadata)  # type: ignore[no-any-return]

    def slice_session(self, session: Session, start: int | None = None, end: int | None = None, *,
                      session_id: str | None = None) -> Session:
        """A temporary session with ``session.messages[start:end]`` and no stored native history."""
        return self._engine.slice_session(session, start, end, session_id=session_id)  # type: ignore[no-any-return]

    def side_request(self, session: Session, overrides: Mapping[str, Any] | None = None) -> Any:
        """Run ``session`` as a request with this request's config plus ``overrides``; a ``RequestResult``.

        Raises:
            InvalidArgumentError: there is no request in flight for this context.
            ConfigError: ``overrides`` sets ``provider``, ``base_url`` or a secret.
            and whatever :meth:`AgentCore.request` raises for the side request.
        """
        self._check_allowed()
        if self.request_id is None and self._config is not None:
            return self._engine.request(session, self._action_config(overrides))
        return self._engine.side_request(self._bound(), session, overrides)

    async def aside_request(self, session: Session, overrides: Mapping[str, Any] | None = None) -> Any:
        """Async twin of :meth:`side_request`."""
        self._check_allowed()
        if self.request_id is None and self._config is not None:
            return await self._engine.arequest(session, self._action_config(overrides))
        return await self._engine.aside_request(self._bound(), session, overrides)

    def _check_allowed(self) -> None:
        if not self._sides:
            raise ConfigNotAllowedError(
                "this action asks the model (a side request, which is a paid call), and the application running "
                "it does not allow that (agent-core serve: --paid-actions)", key="paid_actions")

    def _action_config(self, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
        secret = {e["key"] for e in self._engine.get_config_schema() if e.get("secret")}
        return side_config(self._config or {}, overrides, secret)

    def _bound(self) -> str:
        if self.request_id is None:
            raise InvalidArgumentError(
                "side_request borrows the config of the request (or execute_action call) it runs in; this "
                "context has neither", argument="request_id",
            )
        return self.request_id
