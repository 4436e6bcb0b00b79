"""An HTTP provider's config, read and checked: credentials, time limits, the common schema.

Credentials never enter shared state. ``api_key`` and ``extra_headers`` are
marked ``"secret": true`` in the config schema, so the engine hands their
values to the provider alone (every other plugin sees ``"<redacted>"``);
the provider keeps them in a :class:`Credentials` value on its instance,
which lives for one request. Every ``extra_headers`` value counts as a
credential (``X-Auth-Key``, ``Ocp-Apim-Subscription-Key``... cannot all be
guessed from their names).

A key read from a file or an environment variable often ends in a newline:
surrounding whitespace is stripped, and any other control character is
refused with a :class:`~agent_core.errors.ConfigError` that never quotes the
value, before httpx sees it (httpx would quote the whole header in its
error, and the request would be retried as a network failure).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import Any

from agent_core.errors import ConfigError

from ._call import MAX_RETRY_SLEEP, HTTPCall

__all__ = [
    "PROXY_SCHEMES",
    "SECRET_CONFIG_KEYS",
    "Credentials",
    "api_key_of",
    "base_url_of",
    "clean_header_value",
    "chunk_timeout_of",
    "common_schema",
    "deadline_of",
    "extra_headers",
    "http_call",
    "max_retries_of",
    "max_retry_wait_of",
    "rate_limit_retries_of",
    "normal_url",
    "proxy_of",
    "proxy_secrets",
    "seconds",
    "transport_of",
]

Dict = dict[str, Any]

#: Config keys that hold credentials and so are kept out of ``state["config"]``.
SECRET_CONFIG_KEYS = frozenset({"api_key", "extra_headers", "proxy"})  # a proxy URL may hold its password
# "/v1/v1/": a base_url that already ends in the version segment the provider appends.
_DOUBLED_VERSION = re.compile(r"/(v\d+)/\1(?=/|$)")
# RFC 9110 token characters: what a header name may hold.
_TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class Credentials:
    """Auth headers for one request, its proxy, and the strings to scrub from errors; ``repr`` never shows them."""

    __slots__ = ("headers", "proxy", "secrets")

    def __init__(self, headers: Mapping[str, str], secrets: tuple[str, ...], proxy: str | None = None) -> None:
        self.headers = dict(headers)
        self.secrets = secrets
        self.proxy = proxy

    def __repr__(self) -> str:
        return f"<credentials: {len(self.headers)} header(s), redacted>"


def clean_header_value(value: Any, what: str, plugin: str, key: str) -> str:
    """``value`` as a header value: surrounding whitespace stripped, nothing else changed.

    Raises:
        ConfigError: a control or non-ASCII character remains; the message
            names ``what`` and the character's code point, never the value.
    """
    text = str(value).strip()
    for i, ch in enumerate(text):
        if ch < " " or ch == "\x7f" or not ch.isascii():
            kind = "a control character" if ch < " " or "\x7f" <= ch <= "\x9f" else "a non-ASCII character"
            raise ConfigError(
                f"[{plugin}] {what} contains {kind} (U+{ord(ch):04X}) at position {i}; an HTTP header cannot "
                "carry it (the value is not shown)",
                key=key,
                plugins=[plugin],
            )
    return text


def extra_headers(config: Mapping[str, Any], plugin: str) -> dict[str, str]:
    """``config["extra_headers"]`` checked and cleaned.

    Raises:
        ConfigError: not a mapping, a name that is not a header name, or a
            value that is not a string or number; the message never quotes a value.
    """
    extra = config.get("extra_headers")
    if not extra:
        return {}
    if not isinstance(extra, Mapping):
        raise _headers_error(
            plugin, f" must map header names to values, got {type(extra).__name__} (the value is not shown)"
        )
    out: dict[str, str] = {}
    for n, (name, value) in enumerate(extra.items(), 1):
        if not isinstance(name, str) or not name or not set(name) <= _TOKEN_CHARS:
            raise _headers_error(
                plugin,
                f": header name number {n} is not a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only)",
            )
        if value is None or isinstance(value, (Mapping, list, tuple)):
            raise _headers_error(plugin, f": the value of header {name!r} must be a string or a number")
        out[name] = clean_header_value(value, f"config key 'extra_headers' ({name!r})", plugin, "extra_headers")
    return out


#: the proxy schemes httpx takes
PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")


def proxy_of(config: Mapping[str, Any]) -> str | None:
    """``config["proxy"]``: a proxy URL httpx takes, or None when unset (the environment's then apply).

    Raises:
        ConfigError: not a URL with one of :data:`PROXY_SCHEMES`; the message never quotes
            the value, which may hold the proxy's password.
    """
    value = config.get("proxy")
    if value is None or value == "":
        return None
    scheme = value.split("://", 1)[0].lower() if isinstance(value, str) and "://" in value else ""
    if scheme not in PROXY_SCHEMES:
        raise ConfigError(f"config key 'proxy' must be a URL starting with {', '.join(s + '://' for s in PROXY_SCHEMES)} "
                          "(the value is not shown)", key="proxy")
    return value


def proxy_secrets(proxy: str | None) -> tuple[str, ...]:
    """What to scrub from errors for ``proxy``: the URL itself and its password, when it has one."""
    if not proxy:
        return ()
    _, _, rest = proxy.partition("://")
    userinfo, at, _ = rest.partition("@")
    password = userinfo.partition(":")[2] if at else ""
    return tuple(s for s in (proxy, userinfo if at else "", password) if s)


def transport_of(config: Mapping[str, Any]) -> str | None:
    """``config["transport"]`` (checked against the transports by :func:`._routing.route_for`), or None when unset.

    Raises:
        ConfigError: the value is not a string.
    """
    value = config.get("transport")
    if value is None or isinstance(value, str):
        return value
    raise ConfigError(f"config key 'transport' must be a string, got {type(value).__name__}", key="transport")


def base_url_of(config: Mapping[str, Any], env_prefix: str, default: str, plugin: str) -> str:
    """``config["base_url"]``, else ``$<env_prefix>_BASE_URL``, else ``default``; without a trailing slash.

    Raises:
        ConfigError: the URL has no ``http://`` or ``https://`` in front.
    """
    url = str(config.get("base_url") or os.environ.get(f"{env_prefix}_BASE_URL") or default).rstrip("/")
    if not url.lower().startswith(("http://", "https://")):
        where = "config key 'base_url'" if config.get("base_url") else f"${env_prefix}_BASE_URL"
        # quoted only when it cannot hold a credential (user info, a query or fragment may)
        plain = not any(c in url for c in "@?#") and len(url) < 200
        shown = f" (did you mean 'http://{url}'?)" if plain else ""
        raise ConfigError(f"{where} must start with http:// or https://{shown}", key="base_url", plugins=[plugin])
    return url


def api_key_of(config: Mapping[str, Any], env_prefix: str, plugin: str) -> str | None:
    """``config["api_key"]``, else ``$<env_prefix>_API_KEY``, cleaned (None when neither is set).

    Raises:
        ConfigError: the key holds a control or non-ASCII character (never quoted).
    """
    if config.get("api_key"):
        return clean_header_value(config["api_key"], "config key 'api_key'", plugin, "api_key") or None
    env = f"{env_prefix}_API_KEY"
    value = os.environ.get(env)
    return (clean_header_value(value, f"${env}", plugin, "api_key") or None) if value else None


def http_call(provider: str, config: Mapping[str, Any], url: str, body: bytes, headers: Mapping[str, str],
              credentials: Credentials, *, method: str = "POST", default_max_retries: int = 2) -> HTTPCall:
    """The request to send: ``headers`` with the credentials', and the retry and time limits ``config`` sets.

    Raises:
        ConfigError: a limit in ``config`` is not a valid value.
    """
    return HTTPCall(
        provider=provider,
        url=normal_url(url),
        body=body,
        headers={**headers, **credentials.headers},
        max_retries=max_retries_of(config, default_max_retries),
        secrets=credentials.secrets,
        method=method,
        max_retry_wait=max_retry_wait_of(config),
        deadline=deadline_of(config),
        rate_limit_retries=rate_limit_retries_of(config),
        chunk_timeout=chunk_timeout_of(config),
    )


def _headers_error(plugin: str, what: str) -> ConfigError:
    """``what`` is said of ``extra_headers`` (it starts with its own separator)."""
    return ConfigError(f"[{plugin}] config key 'extra_headers'{what}", key="extra_headers", plugins=[plugin])


def seconds(config: Mapping[str, Any], key: str) -> float | None:
    """A config value in seconds: a number >= 0 (``inf`` allowed), or ``None`` when unset.

    Raises:
        ConfigError: the value is not a number, is NaN, or is negative.
    """
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, str):  # "30" from an env-style config file
        try:
            value = float(value)
        except ValueError:
            value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"config key {key!r} must be a number of seconds", key=key)
    if math.isnan(value) or value < 0:
        raise ConfigError(f"config key {key!r} must be a number of seconds >= 0, got {value!r}", key=key)
    return float(value)


def max_retry_wait_of(config: Mapping[str, Any]) -> float:
    """``max_retry_wait_s``, default :data:`~._call.MAX_RETRY_SLEEP`."""
    value = seconds(config, "max_retry_wait_s")
    return MAX_RETRY_SLEEP if value is None else value


def deadline_of(config: Mapping[str, Any]) -> float | None:
    """``deadline_s``; ``None`` (no deadline) when unset, zero or infinite."""
    value = seconds(config, "deadline_s")
    return None if not value or math.isinf(value) else value


def chunk_timeout_of(config: Mapping[str, Any]) -> float | None:
    """``chunk_timeout_s``; ``None`` (only ``timeout`` bounds a silent stream) when unset, zero or infinite."""
    value = seconds(config, "chunk_timeout_s")
    return None if not value or math.isinf(value) else value


def max_retries_of(config: Mapping[str, Any], default: int) -> int:
    """``max_retries`` as a whole number >= 0 (negative counts as 0), ``default`` when unset.

    Raises:
        ConfigError: not a whole number (``inf``, NaN, ``"many"``).
    """
    count = _count(config, "max_retries")
    return default if count is None else count


def rate_limit_retries_of(config: Mapping[str, Any]) -> int | None:
    """``rate_limit_retries`` as a whole number >= 0, ``None`` when unset (then ``max_retries`` alone bounds a 429).

    Raises:
        ConfigError: not a whole number.
    """
    return _count(config, "rate_limit_retries")


def _count(config: Mapping[str, Any], key: str) -> int | None:
    """A retry count: negative counts as 0; ``None`` when unset."""
    value = config.get(key)
    if value is None:
        return None
    try:
        return max(0, int(value))
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"config key {key!r} must be a whole number >= 0", key=key) from None


def normal_url(url: str) -> str:
    """``url`` without a repeated version segment (``.../v1/v1/messages`` -> ``.../v1/messages``)."""
    return _DOUBLED_VERSION.sub(r"/\1", url, count=1) if "/v" in url else url


def _route_keys() -> Dict:
    """How a provider reaches its API: keys with no provider default (proxy, transport, headers); new dicts each call."""
    return {
        "proxy": {
            "type": "string",
            "secret": True,
            "description": "proxy URL for the API's requests (http://, https:// or socks5://, may hold user:password); "
            "default: $HTTPS_PROXY / $HTTP_PROXY / $ALL_PROXY as httpx reads them, $NO_PROXY honoured. "
            "A proxied call runs on httpx's own transport",
        },
        "transport": {
            "type": "string",
            "enum": ["agent-core", "httpx"],
            "description": "the HTTP transport under the pooled clients: agent-core's own HTTP/1.1 (default) or stock "
            "httpx's, to rule ours out; default $AGENT_CORE_TRANSPORT, else agent-core",
        },
        "extra_headers": {
            "type": "object",
            "secret": True,
            "description": "extra HTTP headers for every request; credentials (never in state or errors)",
        },
        "list_models": {
            "type": "boolean",
            "default": False,
            "description": "get_models asks the server's /models endpoint instead of using `model`",
        },
    }


def common_schema(prefix: str, base_url: str, model: str, timeout: float, max_retries: int) -> Dict:
    """The config keys every HTTP provider takes, with the provider's defaults and env prefix."""
    return {
        "base_url": {"type": "string", "description": f"API root; default ${prefix}_BASE_URL, else {base_url}"},
        "api_key": {
            "type": "string",
            "secret": True,
            "description": f"API key; default ${prefix}_API_KEY. Never stored in state or sessions.",
        },
        "model": {"type": "string", "default": model, "description": "model id"},
        "temperature": {"type": "number", "description": "sampling temperature (API default when unset)"},
        "timeout": {
            "type": "number",
            "default": timeout,
            "description": "seconds to wait for each network step (connect at most 15 s)",
        },
        "max_retries": {
            "type": "integer",
            "default": max_retries,
            "description": "retries on 429/5xx/connection errors and timeouts; after output too, when nothing "
            "the API did would be done twice (the stream then says what to forget)",
        },
        "rate_limit_retries": {
            "type": "integer",
            "description": "retries after a 429 (default: as max_retries allows); 0 raises a 429 at once, "
            "with its retry_after and the upstream's headers. A spent quota is never retried",
        },
        "max_retry_wait_s": {
            "type": "number",
            "default": MAX_RETRY_SLEEP,
            "description": "longest retry-after worth waiting for; a longer one fails at once with RateLimitError",
        },
        "deadline_s": {
            "type": "number",
            "description": "seconds one API call may take in all, retries included (default: no limit)",
        },
        "chunk_timeout_s": {
            "type": "number",
            "description": "seconds a streamed answer may stay silent (from its headers, between chunks) "
            "before the attempt fails as a retryable timeout (default: only `timeout` bounds it)",
        },
        **_route_keys(),
    }
