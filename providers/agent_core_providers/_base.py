"""What every HTTP provider shares: config and credentials, clients, the four API calls.

A concrete provider (``openai``, ``anthropic``) supplies the API specifics as
small methods: the auth headers, the body switches for streaming, an event
reader, and how a non-streamed answer becomes a native message. The
transport itself lives in :mod:`._http`.

Credentials never enter shared state. ``api_key`` and ``extra_headers`` are
marked ``"secret": true`` in the config schema, so the engine hands their
values to this provider alone (every other plugin sees ``"<redacted>"``).
``init`` keeps them on the provider instance, which lives for one request,
and puts a config without them in the shared state; they are added to the
request headers only when sending, and scrubbed from every error text.
Every ``extra_headers`` value counts as a credential (``X-Auth-Key``,
``Ocp-Apim-Subscription-Key``... cannot all be guessed from their names).

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
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, ClassVar

import httpx
import msgspec
from agent_core.errors import ConfigError, LLMError
from agent_core.plugins.protocols import BaseProvider

from ._errors import scrub_error
from ._http import (
    MAX_RETRY_SLEEP,
    HTTPCall,
    InFlightTable,
    apost_call,
    astream_call,
    async_client_for,
    post_call,
    stream_call,
    sync_client_for,
)
from ._replay import replay_answer
from ._sse import JSONEventReader

__all__ = ["HTTPProvider", "SECRET_CONFIG_KEYS"]

Dict = dict[str, Any]

#: Config keys that hold credentials and so are kept out of ``state["config"]``.
SECRET_CONFIG_KEYS = frozenset({"api_key", "extra_headers"})
_encoder = msgspec.json.Encoder()
# "/v1/v1/": a base_url that already ends in the version segment the provider appends.
_DOUBLED_VERSION = re.compile(r"/(v\d+)/\1(?=/|$)")
# RFC 9110 token characters: what a header name may hold.
_TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


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


def _extra_headers(config: Mapping[str, Any], plugin: str) -> dict[str, str]:
    """``config["extra_headers"]`` checked and cleaned; errors never quote a value."""
    extra = config.get("extra_headers")
    if not extra:
        return {}
    if not isinstance(extra, Mapping):
        raise ConfigError(
            f"[{plugin}] config key 'extra_headers' must map header names to values, got {type(extra).__name__} "
            "(the value is not shown)",
            key="extra_headers",
            plugins=[plugin],
        )
    out: dict[str, str] = {}
    for n, (name, value) in enumerate(extra.items(), 1):
        if not isinstance(name, str) or not name or not set(name) <= _TOKEN_CHARS:
            raise ConfigError(
                f"[{plugin}] config key 'extra_headers': header name number {n} is not a valid HTTP header name "
                "(letters, digits and !#$%&'*+-.^_`|~ only)",
                key="extra_headers",
                plugins=[plugin],
            )
        if value is None or isinstance(value, (Mapping, list, tuple)):
            raise ConfigError(
                f"[{plugin}] config key 'extra_headers': the value of header {name!r} must be a string or a number",
                key="extra_headers",
                plugins=[plugin],
            )
        out[name] = clean_header_value(value, f"config key 'extra_headers' ({name!r})", plugin, "extra_headers")
    return out


class _Credentials:
    """Auth headers for one request; ``repr`` never shows them."""

    __slots__ = ("headers", "secrets")

    def __init__(self, headers: Mapping[str, str], secrets: tuple[str, ...]) -> None:
        self.headers = dict(headers)
        self.secrets = secrets

    def __repr__(self) -> str:
        return f"<credentials: {len(self.headers)} header(s), redacted>"


class HTTPProvider(BaseProvider):
    """Base class of the bundled HTTP providers (not a plugin by itself).

    Subclasses set :attr:`name`, :attr:`env_prefix`, :attr:`default_base_url`
    and implement the ``_api_*`` methods.
    """

    env_prefix: ClassVar[str] = ""
    default_model: ClassVar[str] = ""
    default_base_url: ClassVar[str] = ""
    default_timeout: ClassVar[float] = 120.0
    default_max_retries: ClassVar[int] = 2
    _client: ClassVar[httpx.Client | None] = None
    _async_client: ClassVar[httpx.AsyncClient | None] = None

    def __init__(self) -> None:
        self._inflight = InFlightTable()
        self._credentials: _Credentials | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} provider {self.name!r}>"

    @classmethod
    def using(
        cls, client: httpx.Client | None = None, async_client: httpx.AsyncClient | None = None
    ) -> type[HTTPProvider]:
        """A zero-argument provider class that sends through the given clients.

        The engine instantiates provider classes itself, so injection happens
        on a subclass: ``AgentCore(providers=[OpenAIProvider.using(client=c)])``.
        A client left out falls back to the shared pool. The caller owns the
        clients and closes them.
        """
        attrs = {
            "_client": client if client is not None else cls._client,
            "_async_client": async_client if async_client is not None else cls._async_client,
            "__doc__": f"{cls.__name__} sending through injected httpx clients.",
        }
        return type(cls.__name__, (cls,), attrs)

    # -- config ---------------------------------------------------------------

    def base_url(self, config: Mapping[str, Any]) -> str:
        """``config["base_url"]``, else ``$<PREFIX>_BASE_URL``, else the public API."""
        url = config.get("base_url") or os.environ.get(f"{self.env_prefix}_BASE_URL") or self.default_base_url
        return str(url).rstrip("/")

    def api_key(self, config: Mapping[str, Any]) -> str | None:
        """``config["api_key"]``, else ``$<PREFIX>_API_KEY`` (None when neither is set).

        Surrounding whitespace (a key file's trailing newline) is stripped.

        Raises:
            ConfigError: the key holds a control or non-ASCII character (the
                key itself is never quoted).
        """
        if config.get("api_key"):
            return clean_header_value(config["api_key"], "config key 'api_key'", self.name, "api_key") or None
        env = f"{self.env_prefix}_API_KEY"
        value = os.environ.get(env)
        return (clean_header_value(value, f"${env}", self.name, "api_key") or None) if value else None

    def _timeout(self, config: Mapping[str, Any]) -> float:
        value = _seconds(config, "timeout")
        return value if value else self.default_timeout

    def _max_retry_wait(self, config: Mapping[str, Any]) -> float:
        value = _seconds(config, "max_retry_wait_s")
        return MAX_RETRY_SLEEP if value is None else value

    def _deadline(self, config: Mapping[str, Any]) -> float | None:
        value = _seconds(config, "deadline_s")
        return None if not value or math.isinf(value) else value

    def _max_retries(self, config: Mapping[str, Any]) -> int:
        value = config.get("max_retries")
        if value is None:
            return self.default_max_retries
        try:
            return max(0, int(value))
        except (TypeError, ValueError, OverflowError):  # inf, NaN, "many"
            raise ConfigError("config key 'max_retries' must be a whole number >= 0", key="max_retries") from None

    def _common_schema(self) -> Dict:
        prefix = self.env_prefix
        return {
            "base_url": {
                "type": "string",
                "description": f"API root; default ${prefix}_BASE_URL, else {self.default_base_url}",
            },
            "api_key": {
                "type": "string",
                "secret": True,
                "description": f"API key; default ${prefix}_API_KEY. Never stored in state or sessions.",
            },
            "model": {"type": "string", "default": self.default_model, "description": "model id"},
            "temperature": {"type": "number", "description": "sampling temperature (API default when unset)"},
            "timeout": {
                "type": "number",
                "default": self.default_timeout,
                "description": "seconds to wait for each network step (connect at most 15 s)",
            },
            "max_retries": {
                "type": "integer",
                "default": self.default_max_retries,
                "description": "retries on 429/5xx/connection errors, only before any output",
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

    def _request_headers(self, config: Mapping[str, Any], base: Mapping[str, str]) -> Dict:
        """The non-secret request headers, as stored in ``state["request"]["headers"]``.

        ``extra_headers`` are credentials: they are added when sending, not here.
        """
        return dict(base)

    def _make_credentials(self, config: Mapping[str, Any]) -> _Credentials:
        key = self.api_key(config)
        headers = self._api_auth_headers(key) if key else {}
        hidden = _extra_headers(config, self.name)
        secrets = tuple(s for s in (key, *hidden.values()) if s)
        return _Credentials({**headers, **hidden}, secrets)

    # -- hooks ---------------------------------------------------------------------

    def init(self, config: Dict) -> Dict:
        """Start the request's state; the credentials stay on this instance."""
        self._credentials = self._make_credentials(config)
        return {"config": {k: v for k, v in config.items() if k not in SECRET_CONFIG_KEYS}}

    def get_models(self, config: Dict) -> list[Dict]:
        """``[{"id": <model>}]``; with ``list_models: true``, the server's model list."""
        if not config.get("list_models"):
            return [{"id": config.get("model") or self.default_model}]
        credentials = self._make_credentials(config)
        call = HTTPCall(
            provider=self.name,
            url=_normal_url(self._api_models_url(self.base_url(config))),
            body=b"",
            headers={**self._request_headers(config, self._api_base_headers(config)), **credentials.headers},
            max_retries=self._max_retries(config),
            secrets=credentials.secrets,
            method="GET",
            max_retry_wait=self._max_retry_wait(config),
            deadline=self._deadline(config),
        )
        record = self._inflight.open(None)
        try:
            answer = post_call(self._sync_client(config), call, record)
        finally:
            self._inflight.close(record)
        items = answer.get("data") if isinstance(answer, Mapping) else None
        return [dict(m) for m in items or () if isinstance(m, Mapping) and m.get("id")]

    def cancel_request(self, request_id: str) -> bool:
        """Close the in-flight HTTP stream of ``request_id``; True when there was one."""
        return self._inflight.cancel(request_id)

    def stream_api(self, native_messages: list[Dict], state: Dict, *, request_id: str | None = None) -> Iterator[Dict]:
        """Send ``state["request"]`` in streaming mode and yield the decoded events."""
        call = self._http_call(state, stream=True)
        record = self._inflight.open(request_id)
        try:
            client = self._sync_client(state["config"])
            yield from stream_call(client, call, self._reader_for(call), record, self._api_events_from_answer)
        finally:
            self._inflight.close(record)

    async def astream_api(
        self, native_messages: list[Dict], state: Dict, *, request_id: str | None = None
    ) -> AsyncIterator[Dict]:
        """Async twin of :meth:`stream_api`."""
        call = self._http_call(state, stream=True)
        record = self._inflight.open(request_id)
        try:
            reader = self._reader_for(call)
            client = self._async_client_for(state["config"])
            async for event in astream_call(client, call, reader, record, self._api_events_from_answer):
                yield event
        finally:
            self._inflight.close(record)

    def call_api(
        self, native_messages: list[Dict], state: Dict, *, request_id: str | None = None
    ) -> tuple[list[Dict], list[Dict], list[Dict], Dict]:
        """Send ``state["request"]`` without streaming: ``([], [final], history, state)``."""
        call = self._http_call(state, stream=False)
        record = self._inflight.open(request_id)
        try:
            answer = post_call(self._sync_client(state["config"]), call, record)
        finally:
            self._inflight.close(record)
        return self._after_call(native_messages, state, answer)

    async def acall_api(
        self, native_messages: list[Dict], state: Dict, *, request_id: str | None = None
    ) -> tuple[list[Dict], list[Dict], list[Dict], Dict]:
        """Async twin of :meth:`call_api`."""
        call = self._http_call(state, stream=False)
        record = self._inflight.open(request_id)
        try:
            answer = await apost_call(self._async_client_for(state["config"]), call, record)
        finally:
            self._inflight.close(record)
        return self._after_call(native_messages, state, answer)

    # -- internals --------------------------------------------------------------------

    def _after_call(
        self, native_messages: list[Dict], state: Dict, answer: Any
    ) -> tuple[list[Dict], list[Dict], list[Dict], Dict]:
        try:
            message = self._api_native_from_answer(answer)
        except LLMError as exc:  # it may quote the answer: scrub what it quotes
            raise scrub_error(exc, self._secrets()) from exc.__cause__
        return [], [message], [*native_messages, message], {**state, self.name: None}

    def _secrets(self) -> tuple[str, ...]:
        return self._credentials.secrets if self._credentials is not None else ()

    def _reader_for(self, call: HTTPCall) -> Callable[[], JSONEventReader]:
        return lambda: self._api_reader(call.secrets)

    def _sync_client(self, config: Mapping[str, Any]) -> httpx.Client:
        return self._client or sync_client_for(self.base_url(config), self._timeout(config))

    def _async_client_for(self, config: Mapping[str, Any]) -> httpx.AsyncClient:
        return self._async_client or async_client_for(self.base_url(config), self._timeout(config))

    def _http_call(self, state: Mapping[str, Any], *, stream: bool) -> HTTPCall:
        config = state["config"]
        request = state.get("request")
        if not request:
            raise RuntimeError(f"{self.name}: initialize_request must run before the API is called")
        credentials = self._credentials or self._make_credentials(config)
        payload = self._api_payload_mode(request["payload"], stream)
        return HTTPCall(
            provider=self.name,
            url=_normal_url(request["url"]),
            body=_encoder.encode(payload),
            headers={**request["headers"], **credentials.headers},
            max_retries=self._max_retries(config),
            secrets=credentials.secrets,
            max_retry_wait=self._max_retry_wait(config),
            deadline=self._deadline(config),
        )

    # -- what a concrete provider supplies ---------------------------------------------

    def _api_auth_headers(self, api_key: str) -> Dict:
        raise NotImplementedError

    def _api_base_headers(self, config: Mapping[str, Any]) -> Dict:
        return {"content-type": "application/json"}

    def _api_models_url(self, base_url: str) -> str:
        raise NotImplementedError

    def _api_payload_mode(self, payload: Mapping[str, Any], stream: bool) -> Mapping[str, Any]:
        raise NotImplementedError

    def _api_reader(self, secrets: tuple[str, ...]) -> JSONEventReader:
        raise NotImplementedError

    def _api_native_from_answer(self, answer: Any) -> Dict:
        raise NotImplementedError

    def _api_events_from_answer(self, answer: Any) -> list[Dict]:
        """The stream events for a complete JSON answer to a streaming request.

        Checks the answer as a non-streamed one first (an error object raises
        its typed error), then replays it (:func:`._replay.replay_answer`).
        """
        try:
            self._api_native_from_answer(answer)
        except LLMError as exc:
            raise scrub_error(exc, self._secrets()) from exc.__cause__
        return replay_answer(self.name, answer, self._secrets())


def _seconds(config: Mapping[str, Any], key: str) -> float | None:
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


def _normal_url(url: str) -> str:
    """``url`` without a repeated version segment (``.../v1/v1/messages`` -> ``.../v1/messages``)."""
    return _DOUBLED_VERSION.sub(r"/\1", url, count=1) if "/v" in url else url
