"""Redirects and proxies, from a hostile upstream that controls every byte (see ``test_hostile_upstream.py``).

- **A redirect is an error, never followed**: a :class:`RedirectError` naming the
  status and the ``Location`` (scrubbed); no other server hears from the client.
- **Proxies are applied as httpx applies them**: ``HTTP_PROXY``/``HTTPS_PROXY``/
  ``ALL_PROXY`` and ``NO_PROXY`` from the environment, or the ``proxy`` config key,
  whose password is never shown; ``https://`` goes through a ``CONNECT`` tunnel.

Every case runs through the sync and the async client, on both transports.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any

import pytest
from agent_core.errors import RedirectError
from agent_core_providers.openai import OpenAIProvider

from ._driver import arun_turn, run_turn
from ._hostile import (  # noqa: F401 - the fixtures are used by name
    KEY,
    MODES,
    USER,
    calls,
    config,
    no_proxy_env,
    streamed,
    transport,
    upstream,
)
from ._proxy import ForwardProxy, forward_proxy
from ._raw import RawServer
from .conftest import run_async


# -- redirects: a typed error, nothing followed, no credential leaves ------------------------------------


def redirect(status: int, location: str, body: bytes = b"") -> tuple[Any, ...]:
    return (b"HTTP/1.1 %d Moved\r\nLocation: %s\r\nContent-Length: %d\r\n\r\n%s"
            % (status, location.encode(), len(body), body),)


@MODES
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "call"])
def test_a_redirect_is_a_typed_error_naming_status_and_location(upstream, use_async, status, stream):
    elsewhere = RawServer()  # where the redirect points: it must never hear from us
    try:
        target = f"{elsewhere.url}/v1/chat/completions"
        upstream.script(redirect(status, target, b'{"moved": true}'), redirect(status, target))
        provider = OpenAIProvider()
        cfg = config(upstream, max_retries=2)
        with pytest.raises(RedirectError) as caught:
            if use_async:
                run_async(arun_turn, provider, [], USER, cfg, stream=stream)
            else:
                run_turn(provider, [], USER, cfg, stream=stream)
        error = caught.value
        assert error.status_code == status and error.location == target and not error.retryable
        assert str(status) in str(error) and target in str(error)
        assert len(upstream.requests) == 1  # not retried
        assert elsewhere.accepted == 0  # not followed: the key went nowhere else
    finally:
        elsewhere.stop()


def test_an_http_base_url_sent_to_https_says_so(upstream):
    upstream.script(redirect(301, "https://api.example.test/v1/chat/completions"))
    with pytest.raises(RedirectError, match=r"301.*https://api\.example\.test/v1/chat/completions.*https:// instead of"):
        run_turn(OpenAIProvider(), [], USER, config(upstream))


def test_a_location_holding_the_key_is_scrubbed(upstream):
    upstream.script(redirect(307, f"https://evil.test/?key={KEY}"))
    with pytest.raises(RedirectError) as caught:
        run_turn(OpenAIProvider(), [], USER, config(upstream))
    assert KEY not in str(caught.value) and KEY not in (caught.value.location or "")
    assert "evil.test" in caught.value.location


# -- proxies: the environment's and the config's, as httpx applies them --------------------------------


@pytest.fixture
def proxy() -> Iterator[ForwardProxy]:
    yield from forward_proxy()


@MODES
@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_the_environments_proxy_carries_an_http_call(upstream, proxy, use_async, variable, no_proxy_env, monkeypatch):
    monkeypatch.setenv(variable, proxy.url)
    upstream.script(streamed("one"), streamed("two"))
    assert calls(upstream, use_async, 2) == ["one", "two"]
    assert proxy.asked == [f"POST {upstream.url}/v1/chat/completions HTTP/1.1"]  # one connection, kept alive
    assert upstream.conns() == [1, 1]


@MODES
def test_no_proxy_exempts_a_host(upstream, proxy, use_async, no_proxy_env, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    upstream.script(streamed("direct"))
    assert calls(upstream, use_async, 1) == ["direct"]
    assert proxy.asked == [] and upstream.conns() == [1]


@MODES
def test_the_config_proxy_is_used_and_its_password_never_shown(upstream, proxy, use_async, no_proxy_env):
    secret_proxy = proxy.url.replace("http://", "http://agent:pr0xy-s3cret-pass@")
    upstream.script(streamed("one"))
    assert calls(upstream, use_async, 1, proxy=secret_proxy) == ["one"]
    assert proxy.asked == [f"POST {upstream.url}/v1/chat/completions HTTP/1.1"]
    assert proxy.credentials and proxy.credentials[0].startswith("Basic ")  # httpx sent the proxy its credentials
    # A proxy that cannot be reached: the error says so without the password.
    proxy.stop()
    [failure] = calls(upstream, use_async, 1, proxy=secret_proxy)
    assert type(failure).__name__ == "ProviderUnavailableError"
    assert "pr0xy-s3cret-pass" not in str(failure)


@MODES
def test_https_through_the_environments_proxy_is_a_connect_tunnel(
    certificate, proxy, use_async, no_proxy_env, monkeypatch
):
    cert, key = certificate
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the clients trust the test's certificate
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    secure = RawServer(tls=context)
    try:
        secure.script(streamed("sealed"))
        assert calls(secure, use_async, 1) == ["sealed"]
        host = secure.url.removeprefix("https://")
        assert proxy.asked == [f"CONNECT {host} HTTP/1.1"]  # the proxy saw where, never what
        assert secure.requests[0][1] == b"POST /v1/chat/completions HTTP/1.1"
    finally:
        secure.stop()


def test_a_proxy_that_is_not_a_url_is_a_config_error(upstream, no_proxy_env):
    [failure] = calls(upstream, False, 1, proxy="corp-proxy:3128")
    assert type(failure).__name__ == "ConfigError" and "proxy" in str(failure)
    assert upstream.requests == []
