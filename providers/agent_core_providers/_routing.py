"""Which transport a pooled client runs on: ours, or stock httpx's, and through which proxy.

Theory of operation
-------------------
The pooled clients (:mod:`._pool`) run on agent-core's own HTTP/1.1
transport for speed. Two things send a base URL through stock httpx instead,
built as any httpx user would build it (``httpx.Client(proxy=..., trust_env=True)``):

- **A proxy.** A ``proxy`` in the provider's config, or one the environment
  names for the base URL's scheme (``HTTPS_PROXY``, ``HTTP_PROXY``,
  ``ALL_PROXY``, in either case, the variables httpx reads).
  httpx then applies the proxy, and ``NO_PROXY``, exactly as it does for its
  own users (CONNECT through the proxy for ``https://``); a host that
  ``NO_PROXY`` exempts is reached directly, still by httpx.
- **The switch.** ``transport: "httpx"`` in the config, or
  ``AGENT_CORE_TRANSPORT=httpx`` in the environment, so a user can rule our
  transport out when something looks wrong (the config wins over the
  environment; ``"agent-core"`` is the default).

Both routes verify certificates as httpx does (``SSL_CERT_FILE`` and
``SSL_CERT_DIR`` are honoured) and keep no cookies (:mod:`._cookies`).
"""

from __future__ import annotations

import os
from typing import Literal

from agent_core.errors import ConfigError

__all__ = ["HTTPX", "OURS", "TRANSPORT_ENV", "TRANSPORTS", "Choice", "route_for"]

#: the environment variable that chooses the pooled clients' transport (the config key ``transport`` wins)
TRANSPORT_ENV = "AGENT_CORE_TRANSPORT"
OURS: Literal["agent-core"] = "agent-core"
HTTPX: Literal["httpx"] = "httpx"
#: the values ``transport`` and :data:`TRANSPORT_ENV` take
TRANSPORTS = (OURS, HTTPX)

#: (transport, proxy): the proxy is the configured one, or None (httpx then reads the environment's)
Choice = tuple[Literal["agent-core", "httpx"], str | None]


def route_for(base_url: str, proxy: str | None = None, transport: str | None = None) -> Choice:
    """The transport and proxy of the pooled client for ``base_url``.

    Args:
        base_url: the provider's API root.
        proxy: the config's ``proxy`` (a URL), or None.
        transport: the config's ``transport``, or None to read :data:`TRANSPORT_ENV`.

    Raises:
        ConfigError: ``transport`` (or the environment variable) is not one of :data:`TRANSPORTS`.
    """
    chosen = _chosen(transport)
    if proxy:
        return HTTPX, proxy
    if chosen == HTTPX or _environment_proxies(base_url):
        return HTTPX, None
    return OURS, None


def _chosen(transport: str | None) -> str:
    if transport is not None:
        if transport not in TRANSPORTS:
            raise ConfigError(f"config key 'transport' must be one of {', '.join(TRANSPORTS)}; got {transport!r}",
                              key="transport")
        return transport
    value = os.environ.get(TRANSPORT_ENV, "").strip().lower()
    if not value:
        return OURS
    if value not in TRANSPORTS:
        raise ConfigError(f"${TRANSPORT_ENV} must be one of {', '.join(TRANSPORTS)}; got {value!r}",
                          key="transport")
    return value


def _environment_proxies(base_url: str) -> bool:
    """True when the environment names a proxy for ``base_url``'s scheme (httpx then decides, NO_PROXY included).

    The variables read are the ones httpx reads (through :func:`urllib.request.getproxies`):
    ``<scheme>_proxy`` and ``all_proxy``, in either case. Looked up by name, not by a walk of
    the whole environment: this runs for every request.
    """
    scheme = base_url.split("://", 1)[0].lower() if "://" in base_url else "http"
    env = os.environ
    return bool(env.get(f"{scheme}_proxy") or env.get(f"{scheme.upper()}_PROXY")
                or env.get("all_proxy") or env.get("ALL_PROXY"))
