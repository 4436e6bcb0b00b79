"""Which 429s are retried: a gateway must not multiply its clients' own retries.

``rate_limit_retries`` bounds the retries after a 429 separately from ``max_retries``
(which still bounds them all); 0 hands a 429 back at once, with its ``retry_after`` and
the upstream's headers, for the client to pace itself. A spent quota is never retried.
"""

from __future__ import annotations

import pytest
from agent_core.errors import ConfigError, ProviderUnavailableError, QuotaExceededError, RateLimitError
from agent_core_providers._retry import retry_delay

from ._driver import run_turn
from ._server import json_reply
from .test_transport import KITS, OPENAI, USER


def limited(kit, after: str = "0"):
    return json_reply(kit.error_body("rate_limit_exceeded", "Slow down"), status=429,
                      headers={"retry-after": after, "x-ratelimit-remaining-requests": "0"})


def busy(kit):
    return json_reply(kit.error_body("overloaded_error", "busy"), status=529, headers={"retry-after": "0"})


@KITS
def test_zero_rate_limit_retries_hands_the_429_back_at_once(server, kit):
    server.enqueue(limited(kit, "2"), kit.text("never"))
    with pytest.raises(RateLimitError) as info:
        run_turn(kit.provider(), [], USER, kit.config(server, max_retries=3, rate_limit_retries=0))
    assert len(server.requests) == 1
    err = info.value
    assert err.retry_after == 2.0 and "not retried" not in err.message
    assert err.upstream.status == 429
    assert err.upstream.headers == {"retry-after": "2", "x-ratelimit-remaining-requests": "0"}


@KITS
def test_rate_limit_retries_bounds_only_the_429s(server, kit):
    server.enqueue(busy(kit), limited(kit), busy(kit), limited(kit), kit.text("never"))
    with pytest.raises(RateLimitError):
        run_turn(kit.provider(), [], USER, kit.config(server, max_retries=5, rate_limit_retries=1))
    assert len(server.requests) == 4  # 529, 429 (retried once), 529, 429 (no 429 retry left)


@KITS
def test_max_retries_still_bounds_every_retry(server, kit):
    server.enqueue(limited(kit), limited(kit), limited(kit), kit.text("never"))
    with pytest.raises(RateLimitError):
        run_turn(kit.provider(), [], USER, kit.config(server, max_retries=1, rate_limit_retries=5))
    assert len(server.requests) == 2


@KITS
def test_unset_a_429_is_retried_as_max_retries_allows(server, kit):
    server.enqueue(limited(kit), limited(kit), kit.text("fine"))
    turn = run_turn(kit.provider(), [], USER, kit.config(server, max_retries=2))
    assert turn.finals[0]["content"] == "fine" and len(server.requests) == 3


@KITS
def test_zero_leaves_other_failures_retried(server, kit):
    server.enqueue(busy(kit), kit.text("fine"))
    turn = run_turn(kit.provider(), [], USER, kit.config(server, max_retries=1, rate_limit_retries=0))
    assert turn.finals[0]["content"] == "fine"


def test_quota_is_never_retried_whatever_the_budget(server):
    body = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "param": None,
                      "code": "insufficient_quota"}}
    server.enqueue(json_reply(body, status=429, headers={"retry-after": "0"}), OPENAI.text("never"))
    with pytest.raises(QuotaExceededError) as info:
        run_turn(OPENAI.provider(), [], USER, OPENAI.config(server, max_retries=5, rate_limit_retries=5))
    assert len(server.requests) == 1 and "not retried" not in info.value.message


@pytest.mark.parametrize("value", [float("nan"), "many"])
def test_a_bad_rate_limit_retries_is_a_config_error(server, value):
    with pytest.raises(ConfigError) as info:
        run_turn(OPENAI.provider(), [], USER, OPENAI.config(server, rate_limit_retries=value))
    assert info.value.key == "rate_limit_retries" and not server.requests


def test_retry_delay_counts_429_retries_apart():
    throttled, down = RateLimitError("x", retry_after=0.5), ProviderUnavailableError("y")
    assert retry_delay(throttled, 0, 3, rate_limited=0, rate_limit_retries=1) == 0.5
    assert retry_delay(throttled, 1, 3, rate_limited=1, rate_limit_retries=1) is None
    assert retry_delay(down, 1, 3, rate_limited=1, rate_limit_retries=1) is not None
    assert retry_delay(throttled, 2, 3) == 0.5  # unset: max_retries alone decides
    assert retry_delay(QuotaExceededError("z"), 0, 3) is None
