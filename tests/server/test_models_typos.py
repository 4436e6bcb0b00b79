"""A request that names no provider, and a model name that names nothing.

Without a provider, a turn or an action listing runs where the CLI would: the operator
config's provider, else ``--default-provider``, else ``echo``. A model name that matches no
installed provider, alias or known model is a 404 that suggests the closest name.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from agent_core.errors import ConfigError
from agent_core.server import ServeSettings, create_app
from agent_core.server.facades.models import close_names

from ._live import running

HI = [{"role": "user", "content": "hi"}]
PROVIDERS = ("anthropic", "echo", "openai")


def _events(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


def _final_text(response: httpx.Response) -> str:
    [final] = [e for e in _events(response) if e["type"] == "final"]
    return str(final["message"]["content"])


def test_a_turn_and_the_actions_without_a_provider_run_on_echo(store: Any) -> None:
    with running(create_app(store=store, config={"echo_prefix": "Echo:"})) as url:
        turn = httpx.post(f"{url}/v1/sessions/s1/turns", json={"message": "hi"})
        actions = httpx.get(f"{url}/v1/actions")
        chosen = httpx.post(f"{url}/v1/sessions/s2/turns", json={"message": "hi", "config": {"provider": "scripted"}})
    assert turn.status_code == 200 and _final_text(turn) == "Echo: hi"
    assert actions.status_code == 200 and actions.json()["object"] == "list"
    assert chosen.status_code == 200 and "Echo:" not in _final_text(chosen)  # a request's own provider still wins


def test_the_config_provider_comes_before_default_provider(store: Any) -> None:
    settings = ServeSettings(default_provider="scripted")
    config = {"provider": "echo", "echo_prefix": "Cfg:"}
    with running(create_app(store=store, config=config, settings=settings)) as url:
        by_config = httpx.post(f"{url}/v1/sessions/s1/turns", json={"message": "hi"})
    with running(create_app(store=store, config={"echo_prefix": "Cfg:"}, settings=settings)) as url:
        by_flag = httpx.post(f"{url}/v1/sessions/s2/turns", json={"message": "hi"})
    assert _final_text(by_config) == "Cfg: hi"
    assert by_flag.status_code == 200 and "Cfg:" not in _final_text(by_flag)


def test_a_tenant_limited_to_other_models_gets_no_echo_behind_its_back(store: Any) -> None:
    with running(create_app(store=store, settings=ServeSettings(models=("openai",)))) as url:
        r = httpx.post(f"{url}/v1/sessions/s1/turns", json={"message": "hi"})
    assert r.status_code == 400 and "provider" in r.json()["error"]["message"]


def test_a_default_provider_that_is_not_installed_is_refused_at_start(store: Any) -> None:
    with pytest.raises(ConfigError, match="'opnai' is not an installed provider"):
        create_app(store=store, settings=ServeSettings(default_provider="opnai"))


@pytest.mark.parametrize(("asked", "meant"), [
    ("gpt-4o-mnii", "'openai/gpt-4o-mini'"),
    ("opnai/gpt-4o", "'openai/gpt-4o'"),
    ("fsat", "'fast'"),
    ("ehco", "'echo'"),
])
def test_a_mistyped_model_gets_did_you_mean(store: Any, asked: str, meant: str) -> None:
    settings = ServeSettings(model_aliases={"fast": "openai/gpt-4o-mini"})
    with running(create_app(store=store, settings=settings)) as url:
        chat = httpx.post(f"{url}/v1/chat/completions", json={"model": asked, "messages": HI})
        one = httpx.get(f"{url}/v1/models/{asked.replace('/', '%2F')}")
    for r in (chat, one):
        assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
        assert f"Did you mean {meant}" in r.json()["error"]["message"]


def test_a_name_close_to_nothing_gets_no_suggestion(store: Any) -> None:
    with running(create_app(store=store)) as url:
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "zzz", "messages": HI})
    assert r.status_code == 404 and "Did you mean" not in r.json()["error"]["message"]


def test_close_names_mends_the_provider_then_compares_whole_and_bare_names() -> None:
    known = ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"]
    assert close_names("opnai/gpt-4o", PROVIDERS, known)[0] == "openai/gpt-4o"
    assert close_names("claude-sonet-4-5", PROVIDERS, known) == ["anthropic/claude-sonnet-4-5"]
    assert close_names("zzz", PROVIDERS, known) == []


def test_a_turn_that_names_no_model_cannot_reach_a_default_outside_the_allowed_models(store: Any) -> None:
    config = {"provider": "openai", "model": "expensive", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-x"}
    with running(create_app(store=store, config=config, settings=ServeSettings(models=("openai/cheap", "echo")))) as url:
        turn = httpx.post(f"{url}/v1/sessions/s1/turns", json={"message": "hi"})
        named = httpx.post(f"{url}/v1/sessions/s2/turns", json={"message": "hi", "config": {"model": "echo"}})
    assert turn.status_code == 403, turn.text
    assert "names no model, and the server's default 'openai/expensive'" in turn.json()["error"]["message"]
    assert named.status_code == 200, named.text  # naming an allowed model works as before
