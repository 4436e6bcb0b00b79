"""What every HTTP provider shares: config and credentials, clients, the API calls, the hook skeletons.

A concrete provider (``openai``, ``anthropic``) supplies the API specifics as
small ``_api_*`` methods: the URL, the payload, the auth headers, the body
switches for streaming, an event reader, how a non-streamed answer becomes a
native message, and the metadata of an answer. The config is read and
checked in :mod:`._config`.

The four API hooks (``stream_api``, ``astream_api``, ``call_api``,
``acall_api``) and ``get_models`` are the edges where I/O happens: each opens
an :class:`~._exchange.Exchange` for the call and runs the call's one flow
(:func:`~._streaming.stream_flow` or :func:`~._oneshot.answer_flow`) with
the plugin kit's sync or async driver. The flows, the retry rule and the
error mapping are the same code in both modes.

Credentials never enter shared state: ``init`` keeps them on the provider
instance, which lives for one request, and puts a config without them in the
shared state; they are added to the request headers only when sending, and
scrubbed from every error text.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from typing import Any, ClassVar

import httpx
import msgspec
from agent_core import BaseProvider
from agent_core.errors import LLMError, MissingAPIKeyError
from agent_core.plugin_kit import FlowStream, drive_async, drive_sync

from ._call import HTTPCall
from ._config import (
    SECRET_CONFIG_KEYS,
    Credentials,
    api_key_of,
    base_url_of,
    clean_header_value,
    common_schema,
    extra_headers,
    http_call,
    normal_url,
    proxy_of,
    proxy_secrets,
    seconds,
    transport_of,
)
from ._errors import scrub_error
from ._exchange import Exchange
from ._inflight import InFlightTable
from ._oneshot import answer_flow
from ._pool import async_client_for, sync_client_for
from ._replay import replay_answer
from ._sampling import with_extra_body
from ._sse import JSONEventReader
from ._streaming import stream_flow
from ._upstream import passed_headers

__all__ = ["HTTPProvider", "SECRET_CONFIG_KEYS", "clean_header_value"]

Dict = dict[str, Any]
_encoder = msgspec.json.Encoder()


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
        self._credentials: Credentials | None = None

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
        """``config["base_url"]``, else ``$<PREFIX>_BASE_URL``, else the public API.

        Raises: ConfigError: no ``http://`` or ``https://`` in front (see :func:`._config.base_url_of`).
        """
        return base_url_of(config, self.env_prefix, self.default_base_url, self.name)

    def api_key(self, config: Mapping[str, Any]) -> str | None:
        """``config["api_key"]``, else ``$<PREFIX>_API_KEY``, else None; surrounding whitespace stripped.

        Raises: ConfigError: a control or non-ASCII character (see :func:`._config.api_key_of`).
        """
        return api_key_of(config, self.env_prefix, self.name)

    def key_missing(self, config: Mapping[str, Any]) -> str | None:
        """The variable a call with ``config`` would lack: its URL is the public API and no key is set.

        None when a call may go: a key (or a secret header) is set, the URL is another
        server's (a local one needs no key), or an injected client carries its own auth. A
        server asks this to leave such a provider out of its model list.
        """
        if self._keyless_public(self.base_url(config) + "/", self._make_credentials(config)):
            return f"{self.env_prefix}_API_KEY"
        return None

    def _keyless_public(self, url: str, credentials: Credentials) -> bool:
        return (not credentials.secrets and self._client is None and self._async_client is None
                and normal_url(url).startswith(self.default_base_url.rstrip("/") + "/"))

    def _common_schema(self) -> Dict:
        return common_schema(
            self.env_prefix, self.default_base_url, self.default_model, self.default_timeout, self.default_max_retries
        )

    def _request_headers(self, config: Mapping[str, Any], base: Mapping[str, str]) -> Dict:
        """The non-secret request headers, as stored in ``state["request"]["headers"]``.

        ``extra_headers`` are credentials: they are added when sending, not here.
        """
        return dict(base)

    def _make_credentials(self, config: Mapping[str, Any]) -> Credentials:
        key = self.api_key(config)
        headers = self._api_auth_headers(key) if key else {}
        hidden = extra_headers(config, self.name)
        proxy = proxy_of(config)
        secrets = tuple(s for s in (key, *hidden.values(), *proxy_secrets(proxy)) if s)
        return Credentials({**headers, **hidden}, secrets, proxy)

    # -- hooks ---------------------------------------------------------------------

    def init(self, config: Dict) -> Dict:
        """Start the request's state; the credentials stay on this instance."""
        self._credentials = self._make_credentials(config)
        return {"config": {k: v for k, v in config.items() if k not in SECRET_CONFIG_KEYS}}

    def get_models(self, config: Dict) -> list[Dict]:
        """``[{"id": <model>}]``; with ``list_models: true``, the server's model list."""
        if not config.get("list_models"):
            return [{"id": config.get("model") or self.default_model}]
        url = self._api_models_url(self.base_url(config))
        headers = self._request_headers(config, self._api_base_headers(config))
        call = self._call(config, url, b"", headers, self._make_credentials(config), method="GET")
        with self._exchange(call, None, self._sync_client(config)) as exchange:
            [answer] = drive_sync(answer_flow(exchange))
        items = answer.get("data") if isinstance(answer, Mapping) else None
        return [dict(m) for m in items or () if isinstance(m, Mapping) and m.get("id")]

    def cancel_request(self, request_id: str) -> bool:
        """Close the in-flight HTTP stream of ``request_id``; True when there was one."""
        return self._inflight.cancel(request_id)

    def to_native_messages(self, messages: list[Dict], state: Dict, *, context: Dict | None = None) -> list[Dict]:
        """One native message per core message, in order (:meth:`_api_native_message`).

        Tool results become plain user text here, so the provider works
        alone; its tools extension turns them into the API's tool results,
        relying on this 1:1 order.
        """
        native, text = self._api_native_message, self._api_text
        return [
            {"role": "user", "content": text(m.get("content"))} if m.get("role") == "tool" else native(m)
            for m in messages
        ]

    def initialize_request(
        self, native_messages: list[Dict], state: Dict, *, request_id: str | None = None, context: Dict | None = None
    ) -> tuple[list[Dict], Dict]:
        """Build ``state["request"]`` (url, payload, non-secret headers) and reset the stream buffer.

        The call streams as ``context["stream"]`` says, else as ``config["stream"]`` (default yes).
        """
        config = state["config"]
        stream = (context or {}).get("stream")
        if stream is None:
            stream = config.get("stream", True)
        payload = with_extra_body(self._api_payload(native_messages, config), config)
        request = {
            "url": self._api_url(self.base_url(config)),
            "payload": self._api_payload_mode(payload, bool(stream)),
            "headers": self._request_headers(config, self._api_base_headers(config)),
        }
        return native_messages, {**state, "request": request, **self._api_fresh_buffer()}

    def stream_api(self, native_messages: list[Dict], state: Dict, *, request_id: str | None = None) -> Iterator[Dict]:
        """Send ``state["request"]`` in streaming mode and yield the decoded events."""
        call = self._http_call(state, stream=True)
        with self._exchange(call, request_id, self._sync_client(state["config"])) as exchange:
            yield from drive_sync(self._stream_flow(exchange))

    def astream_api(
        self, native_messages: list[Dict], state: Dict, *, request_id: str | None = None
    ) -> FlowStream:
        """Async twin of :meth:`stream_api`: the same flow, on the event loop.

        A :class:`~agent_core.plugin_kit.FlowStream`, not an async generator: the
        engine's driver reads the body and runs this flow's step and its own hot
        loop in one loop, one await per network read. The call is built and the
        exchange opened at the first read, as an async generator would.
        """

        def start() -> tuple[Generator[Any, Any, None], Exchange]:
            call = self._http_call(state, stream=True)
            exchange = self._exchange(call, request_id, self._async_client_for(state["config"]))
            return self._stream_flow(exchange), exchange

        return FlowStream(start)

    def call_api(
        self, native_messages: list[Dict], state: Dict, *, request_id: str | None = None
    ) -> tuple[list[Dict], list[Dict], list[Dict], Dict]:
        """Send ``state["request"]`` without streaming: ``([], [final], history, state)``."""
        call = self._http_call(state, stream=False)
        with self._exchange(call, request_id, self._sync_client(state["config"])) as exchange:
            [answer] = drive_sync(answer_flow(exchange))
        return self._after_call(native_messages, state, answer, exchange.answered)

    async def acall_api(
        self, native_messages: list[Dict], state: Dict, *, request_id: str | None = None
    ) -> tuple[list[Dict], list[Dict], list[Dict], Dict]:
        """Async twin of :meth:`call_api`: the same flow, driven on the event loop."""
        call = self._http_call(state, stream=False)
        async with self._exchange(call, request_id, self._async_client_for(state["config"])) as exchange:
            [answer] = [answer async for answer in drive_async(answer_flow(exchange))]
        return self._after_call(native_messages, state, answer, exchange.answered)

    def from_native_messages(
        self, native_messages: list[Dict], state: Dict, *, context: Dict | None = None
    ) -> list[Dict]:
        """Core messages with the answers' text as content; the API's notes and the usage in metadata."""
        return [self._core_message(m) for m in native_messages]

    # -- internals --------------------------------------------------------------------

    def _core_message(self, native: Mapping[str, Any]) -> Dict:
        metadata = self._api_metadata(native)
        if native.get("_usage"):
            metadata["usage"] = self._api_usage(native["_usage"])
        if native.get("_rate_limits"):
            metadata["rate_limits"] = dict(native["_rate_limits"])
        return {"role": native.get("role", "assistant"), "content": self._api_text(native.get("content")),
                "metadata": metadata}

    def _after_call(
        self, native_messages: list[Dict], state: Dict, answer: Any, headers: Any = None
    ) -> tuple[list[Dict], list[Dict], list[Dict], Dict]:
        """The answer as the native message; the API's rate-limit headers kept beside it (``_rate_limits``)."""
        try:
            message = self._api_native_from_answer(answer)
        except LLMError as exc:  # it may quote the answer: scrub what it quotes
            raise scrub_error(exc, self._secrets()) from exc.__cause__
        limits = passed_headers(headers, self._secrets()) if headers is not None else {}
        limits = {k: v for k, v in limits.items() if k not in ("x-request-id", "request-id")}
        if limits:
            message["_rate_limits"] = limits
        return [], [message], [*native_messages, message], {**state, self.name: None}

    def _secrets(self) -> tuple[str, ...]:
        return self._credentials.secrets if self._credentials is not None else ()

    def _stream_flow(self, exchange: Exchange) -> Generator[Any, Any, None]:
        """The streamed call's flow, with this API's event reader and its replay of a JSON answer."""
        secrets = exchange.call.secrets
        return stream_flow(exchange, lambda: self._api_reader(secrets), self._api_events_from_answer)

    def _sync_client(self, config: Mapping[str, Any]) -> httpx.Client:
        return self._client or sync_client_for(self.base_url(config), self._timeout(config), **self._route(config))

    def _async_client_for(self, config: Mapping[str, Any]) -> httpx.AsyncClient:
        return self._async_client or async_client_for(self.base_url(config), self._timeout(config),
                                                      **self._route(config))

    def _route(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The pooled client's ``proxy`` (kept with the credentials: it may hold a password) and ``transport``."""
        credentials = self._credentials or self._make_credentials(config)
        return {"proxy": credentials.proxy, "transport": transport_of(config)}

    def _timeout(self, config: Mapping[str, Any]) -> float:
        return seconds(config, "timeout") or self.default_timeout

    def _exchange(
        self, call: HTTPCall, request_id: str | None, client: httpx.Client | httpx.AsyncClient
    ) -> Exchange:
        """An exchange for ``call``, registered under ``request_id`` so a cancel can reach it until it closes."""
        return Exchange(client, call, self._inflight.open(request_id), self._inflight.close)

    def _http_call(self, state: Mapping[str, Any], *, stream: bool) -> HTTPCall:
        config = state["config"]
        request = state.get("request")
        if not request:
            raise RuntimeError(f"{self.name}: initialize_request must run before the API is called")
        body = _encoder.encode(self._api_payload_mode(request["payload"], stream))
        credentials = self._credentials or self._make_credentials(config)
        return self._call(config, request["url"], body, request["headers"], credentials)

    def _call(self, config: Mapping[str, Any], url: str, body: bytes, headers: Mapping[str, str],
              credentials: Credentials, method: str = "POST") -> HTTPCall:
        """The request to send.

        Raises:
            MissingAPIKeyError: it would go to the provider's public API without a key (the API's 401
                would come back after a round trip, or a DNS error on an offline machine); the
                message names what to set. Injected httpx clients may carry their own auth, so
                they are trusted.
        """
        if self._keyless_public(url, credentials):
            raise MissingAPIKeyError(
                f"{self.name} needs an API key for {self.default_base_url}: set ${self.env_prefix}_API_KEY, "
                f"or the config key api_key (agent-core: --api-key); a local server takes --base-url instead",
                key="api_key", plugins=[self.name], env=f"{self.env_prefix}_API_KEY")
        return http_call(self.name, config, url, body, headers, credentials, method=method,
                         default_max_retries=self.default_max_retries)

    # -- what a concrete provider supplies ---------------------------------------------

    def _api_url(self, base_url: str) -> str:
        """The endpoint the requests go to."""
        raise NotImplementedError

    def _api_payload(self, native_messages: list[Dict], config: Mapping[str, Any]) -> Dict:
        """The request body for ``native_messages`` (``extra_body`` and the stream switches come after)."""
        raise NotImplementedError

    def _api_fresh_buffer(self) -> Dict:
        """The state keys of the stream buffer, as a new call starts them."""
        raise NotImplementedError

    def _api_auth_headers(self, api_key: str) -> Dict:
        raise NotImplementedError

    def _api_base_headers(self, config: Mapping[str, Any]) -> Dict:
        return {"content-type": "application/json"}

    def _api_models_url(self, base_url: str) -> str:
        raise NotImplementedError

    def _api_payload_mode(self, payload: Mapping[str, Any], stream: bool) -> Mapping[str, Any]:
        """The payload asking for a stream or not (``stream`` set only when it must change)."""
        return payload if payload.get("stream") is stream else {**payload, "stream": stream}

    def _api_reader(self, secrets: tuple[str, ...]) -> JSONEventReader:
        raise NotImplementedError

    def _api_native_from_answer(self, answer: Any) -> Dict:
        raise NotImplementedError

    def _api_native_message(self, message: Mapping[str, Any]) -> Dict:
        """The native message for a core message that is not a tool result."""
        raise NotImplementedError

    def _api_text(self, content: Any) -> str:
        """The text of a native message's content."""
        raise NotImplementedError

    def _api_metadata(self, message: Mapping[str, Any]) -> Dict:
        """The core metadata of a native message (its stop reason...), without the usage."""
        raise NotImplementedError

    def _api_usage(self, usage: Mapping[str, Any]) -> Dict:
        """The API's usage as ``{"input_tokens", "output_tokens", ...}``."""
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
