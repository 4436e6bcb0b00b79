"""ConfigPolicy: what a request's own config may change of the operator's, as a library user meets it."""

from __future__ import annotations

from typing import Any

import pytest
from agent_core import AgentCore, ConfigNotAllowedError, ConfigPolicy, Message
from agent_core.errors import ConfigError
from agent_core.plugins.config_policy import DEFAULT_CLIENT_KEYS
from hypothesis import given
from hypothesis import strategies as st

PROVIDERS = ("echo", "openai", "anthropic")
OPERATOR = {"provider": "openai", "model": "gpt-4o", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-op",
            "max_tokens": 500}


def test_the_default_allows_what_a_chat_client_chooses_and_nothing_that_routes_or_reaches() -> None:
    for key in ("temperature", "top_p", "max_tokens", "seed", "stop", "tool_choice", "response_format", "user",
                "metadata", "model", "provider"):
        assert key in DEFAULT_CLIENT_KEYS
    for key in ("base_url", "api_key", "extra_headers", "extra_body", "files_root", "enabled_plugins",
                "disabled_plugins", "force_enabled_plugins", "tool_policy", "system_prompt", "prices", "script",
                "max_iterations", "strict_config", "timeout", "deadline_s"):
        assert key not in DEFAULT_CLIENT_KEYS


def test_a_refused_key_is_named_with_how_to_allow_it_and_the_operator_config_is_untouched() -> None:
    operator = dict(OPERATOR)
    with pytest.raises(ConfigNotAllowedError) as refused:
        ConfigPolicy().merge(operator, {"temperature": 0.1, "base_url": "http://evil.example/v1"})
    assert refused.value.key == "base_url" and "'base_url'" in str(refused.value)
    assert "allow set" in str(refused.value)
    assert isinstance(refused.value, ConfigError)  # callers catching ConfigError still catch it
    assert operator == OPERATOR
    policy = ConfigPolicy(how_to_allow="ask the admin about {key}")
    with pytest.raises(ConfigNotAllowedError, match="ask the admin about api_key"):
        policy.merge(operator, {"api_key": "sk-mine"})
    assert policy.allowing("api_key").merge(operator, {"api_key": "sk-mine"})["api_key"] == "sk-mine"


def test_the_model_is_chosen_among_the_installed_providers_on_the_operators_credentials() -> None:
    p = ConfigPolicy()
    merged = p.merge(OPERATOR, {"model": "anthropic/claude-x"}, providers=PROVIDERS)
    assert merged["provider"] == "anthropic" and merged["model"] == "claude-x"
    # the operator's URL, key and headers were for its own provider: anthropic's key must never go to that URL
    assert not {"base_url", "api_key", "extra_headers"} & set(merged)
    assert {k: v for k, v in merged.items() if k not in ("provider", "model")} == {
        k: v for k, v in OPERATOR.items() if k not in ("provider", "model", "base_url", "api_key", "extra_headers")}
    same_provider = p.merge(OPERATOR, {"model": "openai/gpt-4o-mini"}, providers=PROVIDERS)
    assert same_provider["base_url"] == OPERATOR["base_url"] and same_provider["api_key"] == "sk-op"  # its own
    unbound = {k: v for k, v in OPERATOR.items() if k != "provider"}  # the operator named no provider
    loose = p.merge({**unbound, "provider": "echo"}, {"model": "openai/m"}, providers=PROVIDERS, bound=None)
    assert loose["provider"] == "openai" and loose["base_url"] == OPERATOR["base_url"]  # its URL goes with the choice
    echo = p.merge(OPERATOR, {"model": "echo"}, providers=PROVIDERS)
    assert echo["provider"] == "echo" and "model" not in echo  # the operator's gpt-4o was for its own provider
    same = p.merge(OPERATOR, {"model": "gpt-4o-mini"}, providers=PROVIDERS)
    assert same["provider"] == "openai" and same["model"] == "gpt-4o-mini"  # a bare name: the operator's provider
    routed = p.merge(OPERATOR, {"model": "openai/meta-llama/llama-3"}, providers=PROVIDERS)
    assert routed["model"] == "meta-llama/llama-3"
    explicit = p.merge(OPERATOR, {"provider": "openai", "model": "anthropic/claude"}, providers=PROVIDERS)
    assert explicit["provider"] == "openai" and explicit["model"] == "anthropic/claude"
    with pytest.raises(ConfigError, match="nosuch"):
        p.merge(OPERATOR, {"provider": "nosuch"}, providers=PROVIDERS)
    with pytest.raises(ConfigError, match="'model'"):
        p.merge(OPERATOR, {"model": 4})


def test_models_narrow_the_choice_by_provider_or_pattern() -> None:
    p = ConfigPolicy(models=("echo", "openai/gpt-4o*"))
    assert p.merge(OPERATOR, {"model": "openai/gpt-4o-mini"}, providers=PROVIDERS)["model"] == "gpt-4o-mini"
    assert p.merge(OPERATOR, {"model": "echo/anything"}, providers=PROVIDERS)["provider"] == "echo"
    assert p.merge(OPERATOR, {}, providers=PROVIDERS) == OPERATOR  # no choice made: the operator's own, allowed
    narrow = ConfigPolicy(models=("echo", "openai/cheap"))  # the operator's gpt-4o is not on this list
    for client in ({}, None, {"temperature": 0.2}):  # naming no model must not reach it either
        with pytest.raises(ConfigNotAllowedError, match=r"names no model, and the server's default 'openai/gpt-4o'"):
            narrow.merge(OPERATOR, client, providers=PROVIDERS)
    assert narrow.merge(OPERATOR, {"model": "openai/cheap"}, providers=PROVIDERS)["model"] == "cheap"
    assert p.merge(OPERATOR, {"provider": "openai"}, providers=PROVIDERS)["model"] == "gpt-4o"  # the operator's model
    for refused in ({"model": "openai/o1"}, {"model": "anthropic/claude"}, {"provider": "anthropic"}):
        with pytest.raises(ConfigNotAllowedError) as err:
            p.merge(OPERATOR, refused, providers=PROVIDERS)
        assert err.value.key == "model" and "echo, openai/gpt-4o*" in str(err.value)
    assert p.offers("echo") and p.offers("openai", "gpt-4o-2024") and not p.offers("openai", "o1")
    pinned = ConfigPolicy(allow=DEFAULT_CLIENT_KEYS - {"model", "provider"})
    with pytest.raises(ConfigNotAllowedError, match="'model'"):
        pinned.merge(OPERATOR, {"model": "echo"})


@pytest.mark.slow
@given(st.dictionaries(st.sampled_from(sorted(DEFAULT_CLIENT_KEYS - {"model", "provider"})) | st.text(max_size=12),
                       st.none() | st.integers() | st.text(max_size=5), max_size=6))
def test_whatever_a_client_sends_the_operators_other_keys_keep_their_values(client: dict[str, Any]) -> None:
    try:
        merged = ConfigPolicy().merge(OPERATOR, client, providers=PROVIDERS)
    except ConfigNotAllowedError as exc:
        assert exc.key in client and exc.key not in DEFAULT_CLIENT_KEYS
        return
    for key, value in OPERATOR.items():
        if key not in client or client[key] is None:
            assert merged[key] == value
    assert set(merged) <= set(OPERATOR) | set(client)


def test_a_hand_written_handler_gets_the_same_protection() -> None:
    core = AgentCore.discover()
    session = core.add_message(core.create_session(), Message("user", "hi"))
    policy = ConfigPolicy(models=("echo",))
    body = {"model": "echo", "temperature": 0.3}
    result = core.request(session, policy.merge({"echo_prefix": "Op:"}, body, providers=core.plugins("provider")))
    assert result.final_messages[-1].content == "Op: hi"
    with pytest.raises(ConfigNotAllowedError):
        policy.merge({}, {"echo_prefix": "Client:"}, providers=core.plugins("provider"))
