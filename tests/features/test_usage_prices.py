"""``usage`` prices are client config used after the paid call: every unusable one is refused before it.

NaN and the infinities pass a ``value >= 0`` check, and ``1e308`` or a
400-digit integer overflows once multiplied by a token count, so each used to
fail the request after the provider had answered (and been paid). Here every
such price is a ``ConfigError`` naming ``prices``, the model and the price key,
and the provider is never called.
"""

from __future__ import annotations

import math

import pytest
from agent_core import AgentCore, Message
from agent_core.errors import ConfigError
from agent_core.testing import reply, scripted_provider
from agent_core_features.usage import MAX_PRICE, PRICE_KEYS, UsageFeature, check_prices, cost_of
from agent_core_providers.openai import OpenAIProvider
from hypothesis import given, settings
from hypothesis import strategies as st

_Scripted = scripted_provider(reply("answer", usage={"input_tokens": 10**6, "output_tokens": 10**6}))


class CountingProvider(_Scripted):
    """The scripted provider, counting the calls that would have been paid for."""

    calls = 0

    def stream_api(self, native_messages, state, *, request_id=None):
        type(self).calls += 1
        return super().stream_api(native_messages, state, request_id=request_id)

    def call_api(self, native_messages, state, *, request_id=None):
        type(self).calls += 1
        return super().call_api(native_messages, state, request_id=request_id)


def _request(prices):
    CountingProvider.calls = 0
    core = AgentCore(providers=[CountingProvider], features=[UsageFeature])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    return core.request(session, {"prices": prices})


_UNUSABLE = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, -0.5, 1e308, 10**400, 10**5000, MAX_PRICE * 2, -(10**400)]),
    st.floats(min_value=MAX_PRICE, exclude_min=True),  # up to inf
    st.integers(min_value=int(MAX_PRICE) + 1),
)
_USABLE = st.floats(min_value=0, max_value=MAX_PRICE)


@settings(max_examples=40, deadline=None)
@given(bad=_UNUSABLE, key=st.sampled_from(PRICE_KEYS), model=st.sampled_from(["gpt-x", "*", "claude"]),
       others=st.dictionaries(st.sampled_from(PRICE_KEYS), _USABLE))
def test_an_unusable_price_is_a_config_error_before_any_provider_call(bad, key, model, others):
    with pytest.raises(ConfigError) as err:
        _request({"ok-model": {"input": 1.0}, model: {**others, key: bad}})
    assert err.value.key == "prices"
    assert f"prices[{model!r}][{key!r}] must be a number >= 0 and at most 1,000,000,000" in str(err.value)
    assert CountingProvider.calls == 0


def test_the_message_stays_short_for_a_price_too_large_to_print():
    with pytest.raises(ConfigError, match=r"got <an integer of 16610 bits>$"):
        check_prices({"m": {"output": 10**5000}})  # repr() itself would raise ValueError here
    with pytest.raises(ConfigError, match=r"prices\['m'\] must be a mapping .* got <an integer of 16610 bits>$"):
        check_prices({"m": 10**5000})


def test_a_nan_price_sends_nothing_to_a_real_provider(server):
    core = AgentCore(providers=[OpenAIProvider], features=[UsageFeature])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    config = {"provider": "openai", "base_url": server.url + "/v1", "model": "m", "api_key": "sk-test",
              "max_retries": 0, "prices": {"m": {"input": 0.15, "output": math.nan}}}
    with pytest.raises(ConfigError, match=r"prices\['m'\]\['output'\] .* got nan") as err:
        core.request(session, config)
    assert err.value.key == "prices"
    assert server.requests == []  # the loopback server saw no request at all


def test_the_largest_accepted_price_costs_a_finite_amount():
    result = _request({"*": {"input": MAX_PRICE, "output": MAX_PRICE, "cached": MAX_PRICE}})
    assert CountingProvider.calls == 1
    assert result.session.metadata["usage"]["cost"] == pytest.approx(2 * MAX_PRICE)


_TOKENS = st.one_of(st.integers(min_value=0), st.integers(), st.floats(), st.none(), st.text(max_size=5),
                    st.sampled_from([10**400, 10**290, math.inf, math.nan]))


@settings(max_examples=120, deadline=None)
@given(price=st.fixed_dictionaries({}, optional={k: _USABLE for k in PRICE_KEYS}),
       usage=st.fixed_dictionaries({}, optional={k: _TOKENS for k in
                                                 ("input_tokens", "output_tokens", "cache_read_tokens")}))
def test_a_cost_is_a_finite_number_or_none_whatever_the_provider_reports(price, usage):
    check_prices({"*": price})  # a usable price...
    cost = cost_of(usage, {"*": price}, "m")  # ...never fails the request after the call
    assert cost is None or (isinstance(cost, float) and math.isfinite(cost))


def test_a_running_total_that_is_not_a_number_restarts_instead_of_failing_the_request():
    core = AgentCore(providers=[CountingProvider], features=[UsageFeature])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    session = session.with_metadata(usage={"input_tokens": "many", "cost": 10**400, "messages": [3],
                                           "output_tokens": 5})
    result = core.request(session, {"prices": {"*": {"input": 1.0, "output": 1.0}}})
    assert result.outcome.ok
    assert result.session.metadata["usage"] == {"input_tokens": 10**6, "output_tokens": 10**6 + 5, "cost": 2.0,
                                                "messages": 1}
