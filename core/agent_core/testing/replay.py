"""Replay a recorded HTTP response body through a real provider; record one.

A bug report about a stream becomes a test by saving the body the server sent
(``agent-core run ... --record FILE``) and replaying it:

    Provider = replay_provider("bug-123.sse", provider="openai")
    core = AgentCore(providers=[Provider], extensions=[OpenAIToolsExtension])
    core.request(session, {"provider": "openai", "model": "m"})

The returned class is the real provider (``OpenAIProvider`` or
``AnthropicProvider``) sending through an ``httpx`` client whose transport
answers every request with the recorded body, so the provider's own SSE
parsing, error mapping and the extensions run exactly as against the server;
nothing leaves the process.

What the file may hold, told apart by its content:

* a raw ``text/event-stream`` body (``data:``/``event:`` lines; what
  ``--record`` writes for a streamed call);
* one JSON document (a non-streamed answer, served as ``application/json``);
* one JSON event per line (the ``*.chunks.txt`` fixtures many client libraries
  keep), framed the way the API frames them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from ..errors import ConfigError

__all__ = ["BUNDLED_HTTP_PROVIDERS", "recorded_reply", "recording_provider", "replay_provider"]

#: provider name -> "module:Class" of the bundled HTTP providers
BUNDLED_HTTP_PROVIDERS = {
    "openai": "agent_core_providers.openai:OpenAIProvider",
    "anthropic": "agent_core_providers.anthropic:AnthropicProvider",
}


def _provider_class(provider: str | type) -> Any:
    """The provider class to replay or record with: a class, a bundled name, or an installed provider's name.

    Any provider that follows the injected-client convention works: a classmethod
    ``using(client=..., async_client=...)`` that returns the class sending through those
    httpx clients (the bundled HTTP providers have it; see docs/writing-plugins.md).
    """
    if isinstance(provider, type):
        cls = provider
    elif provider in BUNDLED_HTTP_PROVIDERS:
        module, _, name = BUNDLED_HTTP_PROVIDERS[provider].partition(":")
        cls = getattr(__import__(module, fromlist=[name]), name)
    else:
        from importlib.metadata import entry_points

        found = [ep for ep in entry_points(group="agent_core.providers") if ep.name == provider]
        if not found:
            raise ConfigError(f"replay/record: no provider named {provider!r} is installed", key="provider")
        cls = found[0].load()
    if not callable(getattr(cls, "using", None)):
        raise ConfigError(
            f"replay/record needs a provider that accepts injected httpx clients (a classmethod "
            f"using(client=..., async_client=...)); {getattr(cls, 'name', cls.__name__)!r} has none",
            key="provider",
        )
    return cls


def recorded_reply(body: bytes, provider: str) -> tuple[str, bytes]:
    """``(content_type, bytes)`` a server would send for a recorded ``body`` (see the module docstring)."""
    text = body.decode("utf-8", errors="replace").strip()
    if not text:
        return "text/event-stream", body
    try:
        json.loads(text)
        return "application/json", body
    except ValueError:
        pass
    first = text.splitlines()[0]
    if first.startswith(("data:", "event:", ":", "id:", "retry:")):
        return "text/event-stream", body
    if provider not in BUNDLED_HTTP_PROVIDERS:  # another API's own lines: served as recorded
        return "application/x-ndjson", body
    frames = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if provider == "anthropic":
            kind = json.loads(line).get("type", "message")
            frames.append(f"event: {kind}\ndata: {line}\n\n")
        else:
            frames.append(f"data: {line}\n\n")
    if provider != "anthropic":
        frames.append("data: [DONE]\n\n")
    return "text/event-stream", "".join(frames).encode()


def replay_provider(path: str | os.PathLike[str], provider: str | type = "openai", *,
                    status_code: int = 200) -> type:
    """A provider class that answers every call with the body recorded in ``path``.

    Args:
        path: the recorded body (raw SSE, a JSON answer, or JSON lines).
        provider: which provider parses it: ``"openai"``, ``"anthropic"``, an installed
            provider's name, or a provider class; it must accept injected httpx clients
            (a classmethod ``using(client=..., async_client=...)``).
        status_code: the HTTP status to serve it with (e.g. 429 to replay an error body).

    Returns:
        A zero-argument provider class named like the real one; register it
        with ``AgentCore(providers=[...])``. Config still needs a ``model``;
        no API key is needed (a placeholder is sent).

    Raises:
        ConfigError: ``provider`` is not installed, or takes no injected httpx clients.
        OSError: the file cannot be read.
    """
    cls = _provider_class(provider)
    content_type, body = recorded_reply(Path(path).read_bytes(), str(getattr(cls, "name", provider)))

    def answer(request: httpx.Request) -> httpx.Response:
        if (content_type == "text/event-stream" and not _asks_for_stream(request)) or (
                content_type == "application/x-ndjson" and _asks_for_stream(request) is False):
            # A stream cannot answer a non-streamed call; say so instead of a parse error.
            message = (f"{path} holds a streamed body; replay it with a streaming request "
                       "(config stream: True, or stream_request)")
            return httpx.Response(400, json={"error": {"message": message, "type": "replay_error"}})
        return httpx.Response(status_code, headers={"content-type": content_type}, content=body)

    base = cls.using(client=httpx.Client(transport=httpx.MockTransport(answer)),
                     async_client=httpx.AsyncClient(transport=httpx.MockTransport(answer)))

    attrs: dict[str, Any] = {"__doc__": f"{cls.__name__} replaying {path}."}
    if callable(getattr(cls, "api_key", None)):  # the bundled providers': a replay needs no real key
        def api_key(self: Any, config: Any) -> str | None:
            return cls.api_key(self, config) or "replay-placeholder-key"

        attrs["api_key"] = api_key
    return type(cls.__name__, (base,), attrs)


def _asks_for_stream(request: httpx.Request) -> bool | None:
    """The request body's ``stream`` flag: True, False, or None when it has none (another API's own way)."""
    try:
        flag = json.loads(request.content or b"{}").get("stream")
    except (ValueError, AttributeError):
        return None
    return flag if isinstance(flag, bool) else None


class _TeeStream(httpx.SyncByteStream):
    def __init__(self, inner: Any, sink: Any) -> None:
        self._inner = inner
        self._sink = sink

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            self._sink.write(chunk)
            self._sink.flush()
            yield chunk

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._sink.close()


class _RecordingTransport(httpx.BaseTransport):
    """Sends through a real transport and copies each response body, byte for byte, to a file."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        # Ask for an uncompressed body so the file holds what the parser reads.
        request.headers["accept-encoding"] = "identity"
        response = self._inner.handle_request(request)
        sink = self._path.open("wb")  # one file per run: the last call's body wins
        response.stream = _TeeStream(response.stream, sink)
        return response

    def close(self) -> None:
        self._inner.close()


def recording_provider(provider: str | type, path: str | os.PathLike[str]) -> type:
    """The bundled provider ``provider``, writing the raw body of each response it reads to ``path``.

    Used by ``agent-core run --record FILE``; a later call overwrites the
    file, so with tools the file holds the last provider call's answer.

    Raises:
        ConfigError: ``provider`` is not installed, or takes no injected httpx clients.
    """
    cls = _provider_class(provider)
    return cls.using(client=httpx.Client(transport=_RecordingTransport(Path(path))))  # type: ignore[no-any-return]
