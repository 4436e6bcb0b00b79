"""The operator's settings for ``agent-core serve``: who may connect, from where, and how much.

One frozen value, read from the ``[serve]`` table of the config file and from
flags (flags win), so every limit has one name, one default and one place
it is documented (``docs/security.md``).
"""

from __future__ import annotations

import difflib
import ipaddress
from collections.abc import Mapping
from typing import Any

import msgspec

from ... import ConfigPolicy
from ...errors import ConfigError
from ...host_kit import DEFAULT_CLIENT_KEYS

__all__ = ["LOOPBACK_NAMES", "ServeSettings", "is_loopback"]

#: The host names a server bound to loopback answers to (any port).
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})

_HOW_TO_ALLOW = ("start agent-core serve with --allow-config {key} (or list it in allow_config under [serve] "
                 "in the config file)")


class ServeSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the operator decides about the server (every field has a flag of the same name).

    Attributes:
        allow_config: config keys requests may set beyond the default client keys
            (:data:`~agent_core.plugins.config_policy.DEFAULT_CLIENT_KEYS`).
        models: the models clients may choose (``provider`` or ``provider/model`` patterns);
            ``None``: any model of any installed provider.
        allowed_hosts: ``Host`` names answered besides the loopback names (``*.example.com``
            patterns; ``*`` for any host).
        cors_origins: web origins (``https://app.example.com``) whose pages may call the
            server; ``*`` for any. None by default: no other site's page can.
        tokens_file: a TOML file of tenants and their tokens (see ``docs/security.md``).
        insecure: allow listening beyond loopback without a token.
        max_body_bytes: the largest request body (413 beyond).
        max_json_depth: the deepest nesting of a JSON body (400 beyond).
        max_messages: the most messages one request may become, counted after a facade
            expands it (an Anthropic ``tool_result`` block is a message of its own; 400 beyond).
        max_blocks: the most content blocks (text, image, tool use and result, thinking...)
            one request may carry, over all its messages (400 beyond).
        max_tool_calls: the most tool calls, and the most tool results, one request may carry
            (400 beyond).
        header_timeout_s: how long a connection may take to send a request's headers.
        body_timeout_s: how long a request may take to send its body (408 beyond).
        max_concurrent: requests handled at once by one process (503 with ``retry-after``
            beyond); a stream counts until it ends.
        tenant_max_concurrent: requests one tenant may have handled at once by one process
            (429 with ``retry-after`` beyond); ``None``: half of ``max_concurrent`` (at least
            1) when a tokens file names several tenants, else no cap of its own.
        max_actions: session actions run at once by one process, on threads of their own
            (the store's threads stay the store's; 503 with ``retry-after`` beyond).
        tenant_max_actions: session actions one tenant may have running at once (429 beyond).
        paid_actions: whether a session action may ask the model (a side request, which costs
            money: ``compact_native_history`` in ``summarize`` mode); off, such an action is 403.
        default_provider: the provider of a model name that names none (``gpt-4o-mini``);
            when unset, the operator config's ``provider``, if any.
        model_aliases: model names clients may send for a ``provider/model`` (``{"fast":
            "openai/gpt-4o-mini"}``); listed by ``GET /v1/models``.
        max_choices: the largest ``n`` of a Chat Completions request (each choice is a
            model call of its own).
        turn_wait_s: how long a sessions-API turn waits for the turn running on its session
            (``busy=enqueue``) before it gives up with ``session_busy`` and ``retry-after``.
        facade_server_tools: whether the server's own loop runs the installed tool plugins on a
            facade request whose client declared no tools; off, they are not offered on the
            facades at all (a facade client never receives a call to a tool it did not declare).
    """

    allow_config: tuple[str, ...] = ()
    models: tuple[str, ...] | None = None
    allowed_hosts: tuple[str, ...] = ()
    cors_origins: tuple[str, ...] = ()
    tokens_file: str | None = None
    insecure: bool = False
    max_body_bytes: int = 8 * 1024 * 1024
    max_json_depth: int = 64
    max_messages: int = 2000
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_concurrent: int = 256
    tenant_max_concurrent: int | None = None
    max_blocks: int = 20000
    max_tool_calls: int = 2000
    max_actions: int = 4
    tenant_max_actions: int = 2
    paid_actions: bool = False
    default_provider: str | None = None
    model_aliases: dict[str, str] = {}
    max_choices: int = 8
    turn_wait_s: float = 60.0
    facade_server_tools: bool = True

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_json_depth", "max_messages", "max_concurrent", "max_choices",
                     "tenant_max_concurrent", "max_blocks", "max_tool_calls", "max_actions", "tenant_max_actions"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ConfigError(f"serve setting {name!r} must be at least 1, got {getattr(self, name)}", key=name)
        for name in ("header_timeout_s", "body_timeout_s", "turn_wait_s"):
            value = getattr(self, name)
            if not 0 < value < 86400:
                raise ConfigError(f"serve setting {name!r} must be a number of seconds above 0, got {value}",
                                  key=name)
        for alias, target in self.model_aliases.items():
            if not target or target.startswith("/"):
                raise ConfigError(f"model alias {alias!r} must name provider/model, got {target!r}",
                                  key="model_aliases")
        for origin in self.cors_origins:
            if origin != "*" and not origin.startswith(("http://", "https://")):
                raise ConfigError(f"cors origin {origin!r} must be '*' or start with http:// or https://",
                                  key="cors_origins")

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any], **overrides: Any) -> ServeSettings:
        """Settings from a ``[serve]`` table, then ``overrides`` (flags; ``None`` means not given).

        Raises:
            ConfigError: an unknown setting or a value of the wrong type (named).
        """
        merged = {**table, **{k: v for k, v in overrides.items() if v is not None}}
        known = sorted(cls.__struct_fields__)
        for key in merged:
            if isinstance(key, str) and key not in cls.__struct_fields__:  # a typo in the file: say which it meant
                close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
                raise ConfigError(f"[serve] settings: unknown setting {key!r}{hint}", key=key)
        try:
            return msgspec.convert(merged, cls)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"[serve] settings: {exc}") from None

    def policy(self) -> ConfigPolicy:
        """The config policy every tenant starts from."""
        return ConfigPolicy(allow=DEFAULT_CLIENT_KEYS | frozenset(self.allow_config), models=self.models,
                            how_to_allow=_HOW_TO_ALLOW)


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` listens on this machine only."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
