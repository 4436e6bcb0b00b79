"""Which transport a pooled client runs on, and through which proxy (``_routing``): the table of choices."""

from __future__ import annotations

import pytest
from agent_core.errors import ConfigError
from agent_core_providers._config import proxy_of, proxy_secrets
from agent_core_providers._pool import close_clients, sync_client_for
from agent_core_providers._routing import HTTPX, OURS, TRANSPORT_ENV, route_for

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.mark.parametrize(("url", "env", "proxy", "transport", "route"), [
    ("https://api.example", {}, None, None, (OURS, None)),
    ("https://api.example", {TRANSPORT_ENV: "httpx"}, None, None, (HTTPX, None)),
    ("https://api.example", {TRANSPORT_ENV: "httpx"}, None, "agent-core", (OURS, None)),  # the config wins
    ("https://api.example", {TRANSPORT_ENV: " HTTPX "}, None, None, (HTTPX, None)),
    ("https://api.example", {"HTTPS_PROXY": "http://p:1"}, None, None, (HTTPX, None)),
    ("https://api.example", {"https_proxy": "http://p:1"}, None, "agent-core", (HTTPX, None)),  # a proxy needs httpx
    ("https://api.example", {"HTTP_PROXY": "http://p:1"}, None, None, (OURS, None)),  # not this scheme's
    ("http://localhost:8080", {"HTTP_PROXY": "http://p:1"}, None, None, (HTTPX, None)),
    ("http://localhost:8080", {"ALL_PROXY": "socks5://p:1"}, None, None, (HTTPX, None)),
    ("https://api.example", {}, "http://p:1", None, (HTTPX, "http://p:1")),
])
def test_the_route_of_a_pooled_client(monkeypatch, url, env, proxy, transport, route) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert route_for(url, proxy, transport) == route


def test_an_unknown_transport_is_a_config_error_naming_the_key(monkeypatch) -> None:
    with pytest.raises(ConfigError, match="'transport' must be one of agent-core, httpx") as caught:
        route_for("https://api.example", None, "curl")
    assert caught.value.key == "transport"
    monkeypatch.setenv(TRANSPORT_ENV, "urllib3")
    with pytest.raises(ConfigError, match=r"\$AGENT_CORE_TRANSPORT must be one of"):
        route_for("https://api.example")


def test_the_chosen_transport_is_stock_httpx_or_ours() -> None:
    try:
        ours = sync_client_for("http://127.0.0.1:9", 5.0)
        stock = sync_client_for("http://127.0.0.1:9", 5.0, transport="httpx")
        assert ours is not stock and ours is sync_client_for("http://127.0.0.1:9", 5.0)
        assert stock.follow_redirects is False and ours.follow_redirects is False
    finally:
        close_clients()


@pytest.mark.parametrize("value", ["corp:3128", "ftp://p:1", 3128, ["http://p:1"]])
def test_a_proxy_that_httpx_cannot_take_is_refused_without_being_quoted(value) -> None:
    with pytest.raises(ConfigError, match="'proxy' must be a URL") as caught:
        proxy_of({"proxy": value})
    assert str(value) not in str(caught.value)


def test_a_proxys_password_is_scrubbed() -> None:
    assert proxy_secrets("http://me:hunter2-long@p:1") == ("http://me:hunter2-long@p:1", "me:hunter2-long", "hunter2-long")
    assert proxy_secrets("http://p:1") == ("http://p:1",)
    assert proxy_secrets(None) == ()
