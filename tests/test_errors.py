"""The typed errors: where they live, how they nest, and what they say."""

from __future__ import annotations

import agent_core
import agent_core.errors as errors
import pytest
from agent_core.errors import (
    ActionInputError,
    AuthenticationError,
    ConfigError,
    ContentFilterError,
    ContextLengthError,
    InvalidRequestError,
    LLMError,
    LLMTimeoutError,
    MalformedResponseError,
    MissingFieldError,
    PluginError,
    ProviderRequestCancelled,
    ProviderUnavailableError,
    QuotaExceededError,
    RateLimitError,
    UpstreamDetail,
)

# (name, the built-in or project base it must derive from)
HIERARCHY = [
    ("LLMError", Exception),
    ("RateLimitError", LLMError),
    ("QuotaExceededError", RateLimitError),
    ("AuthenticationError", LLMError),
    ("ContextLengthError", LLMError),
    ("ContentFilterError", LLMError),
    ("InvalidRequestError", LLMError),
    ("ProviderUnavailableError", LLMError),
    ("LLMTimeoutError", LLMError),
    ("MalformedResponseError", LLMError),
    ("RedirectError", LLMError),
    ("PluginError", Exception),
    ("ConfigError", ValueError),
    ("ActionInputError", ValueError),
    ("MissingFieldError", KeyError),
    ("MissingFieldError", ValueError),
    ("ProviderRequestCancelled", RuntimeError),
    ("EmptyResponseError", LLMError),
    ("AsyncOnlyHookError", ConfigError),
    ("InvalidValueError", ValueError),
    ("InvalidArgumentError", TypeError),
    ("InvalidArgumentError", ValueError),
    ("RequestInFlightError", errors.InvalidArgumentError),
    ("StoreError", Exception),
    ("ConflictError", errors.StoreError),
    ("SessionNotFoundError", errors.StoreError),
    ("SessionNotFoundError", LookupError),
    ("CorruptRecordError", errors.StoreError),
    ("SchemaVersionError", errors.StoreError),
    ("StoreUnavailableError", errors.StoreError),
]

LLM_SUBCLASSES = [
    RateLimitError,
    QuotaExceededError,
    AuthenticationError,
    ContextLengthError,
    ContentFilterError,
    InvalidRequestError,
    ProviderUnavailableError,
    LLMTimeoutError,
    MalformedResponseError,
    errors.RedirectError,
]


@pytest.mark.parametrize(("name", "base"), HIERARCHY)
def test_error_is_exported_from_both_places_and_nests(name: str, base: type) -> None:
    cls = getattr(errors, name)
    assert getattr(agent_core, name) is cls
    assert name in errors.__all__ and name in agent_core.__all__
    assert issubclass(cls, base)


def test_every_error_in_the_module_is_listed() -> None:
    defined = {n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, BaseException)}
    values = {"UpstreamDetail"}  # what an error carries, exported beside the errors
    helpers = {"install_hint"}  # how an error message says to install an extra
    assert defined == set(errors.__all__) - values - helpers
    assert all(getattr(agent_core, name) is getattr(errors, name) for name in values)


def test_every_typed_error_sits_under_agent_core_error() -> None:
    # one class to catch, and each error keeps the builtin base it always had
    for name in errors.__all__:
        cls = getattr(errors, name)
        if not isinstance(cls, type) or not issubclass(cls, BaseException):
            continue  # UpstreamDetail: a value errors carry
        if issubclass(cls, Warning):
            assert not issubclass(cls, errors.AgentCoreError)
            continue
        assert issubclass(cls, errors.AgentCoreError), name
    assert agent_core.AgentCoreError is errors.AgentCoreError
    with pytest.raises(errors.AgentCoreError):
        raise errors.ConfigError("bad", key="k")
    assert issubclass(errors.ConfigError, ValueError) and issubclass(errors.MissingFieldError, KeyError)


def test_non_llm_errors_stay_out_of_the_llm_family() -> None:
    for cls in (PluginError, ConfigError, ActionInputError, MissingFieldError, ProviderRequestCancelled):
        assert not issubclass(cls, LLMError)
    assert not issubclass(PluginError, ValueError)
    assert not issubclass(ProviderRequestCancelled, LLMError)


@pytest.mark.parametrize("cls", LLM_SUBCLASSES)
def test_llm_errors_carry_provider_status_and_message(cls: type[LLMError]) -> None:
    err = cls("model said no", provider="openai", status_code=418)
    assert isinstance(err, LLMError)
    assert (err.message, err.provider, err.status_code) == ("model said no", "openai", 418)
    text = str(err)
    assert "model said no" in text and "openai" in text and "418" in text


def test_llm_error_without_details_is_just_the_message() -> None:
    assert str(LLMError("boom")) == "boom"
    assert LLMError("boom").provider is None and LLMError("boom").status_code is None


def test_retryable_defaults_and_override() -> None:
    assert RateLimitError("x").retryable is True
    assert ProviderUnavailableError("x").retryable is True
    assert LLMTimeoutError("x").retryable is True
    assert AuthenticationError("x").retryable is False
    assert InvalidRequestError("x").retryable is False
    assert ContextLengthError("x").retryable is False
    assert InvalidRequestError("x", retryable=True).retryable is True
    # The override is per instance, not a change to the class.
    assert InvalidRequestError("y").retryable is False
    assert QuotaExceededError("x").retryable is False  # waiting does not bring quota back


def test_upstream_detail_is_kept_on_the_error_and_leaves_its_text_alone() -> None:
    up = UpstreamDetail(status=429, type="insufficient_quota", code="insufficient_quota", message="no credit",
                        headers={"x-request-id": "req_1"})
    err = QuotaExceededError("no credit", provider="openai", status_code=429, upstream=up)
    assert err.upstream is up and LLMError("x").upstream is None
    assert str(err) == str(QuotaExceededError("no credit", provider="openai", status_code=429))
    assert isinstance(err, RateLimitError) and err.retry_after is None


def test_rate_limit_error_shows_retry_after() -> None:
    err = RateLimitError("slow down", provider="anthropic", status_code=429, retry_after=2.5)
    assert err.retry_after == 2.5
    assert "2.5" in str(err) and "retry" in str(err) and "slow down" in str(err)
    plain = RateLimitError("slow down")
    assert plain.retry_after is None
    assert "retry after" not in str(plain)


def test_rate_limit_error_is_caught_as_llm_error() -> None:
    with pytest.raises(LLMError) as info:
        raise RateLimitError("429", retry_after=1)
    assert info.value.retry_after == 1


def test_plugin_error_names_plugin_hook_and_cause() -> None:
    cause = ZeroDivisionError("division by zero")
    err = PluginError("prefix", "process_chunk", cause)
    assert (err.plugin, err.hook, err.original) == ("prefix", "process_chunk", cause)
    text = str(err)
    assert "prefix" in text and "process_chunk" in text
    assert "ZeroDivisionError" in text and "division by zero" in text


def test_plugin_error_detail_replaces_the_cause_text() -> None:
    err = PluginError("tag", "finalize", KeyError("x"), detail="returned 2 values, expected 3")
    assert "returned 2 values, expected 3" in str(err)
    assert "tag" in str(err) and "finalize" in str(err)
    assert err.detail == "returned 2 values, expected 3"


def test_config_error_is_a_value_error_with_key_and_plugins() -> None:
    err = ConfigError("max_iterations must be an integer", key="max_iterations", plugins=["a", "b"])
    assert isinstance(err, ValueError)
    assert err.key == "max_iterations"
    assert err.plugins == ("a", "b")
    assert "max_iterations must be an integer" in str(err)
    bare = ConfigError("nope")
    assert bare.key is None and bare.plugins == ()
    with pytest.raises(ValueError, match="nope"):
        raise bare


def test_action_input_error_names_action_and_input() -> None:
    err = ActionInputError("'n' must be a number", action="compact", input="n")
    assert isinstance(err, ValueError)
    assert (err.action, err.input) == ("compact", "n")
    assert "'n' must be a number" in str(err)


def test_missing_field_error_is_key_and_value_error_naming_the_key() -> None:
    err = MissingFieldError("session_id", "Session")
    assert isinstance(err, KeyError) and isinstance(err, ValueError)
    assert err.key == "session_id" and err.type_name == "Session"
    assert "session_id" in str(err) and "Session" in str(err)
    for catch in (KeyError, ValueError):
        with pytest.raises(catch):
            raise MissingFieldError("role", "Message")


def test_provider_request_cancelled_carries_request_id() -> None:
    err = ProviderRequestCancelled("req-42")
    assert isinstance(err, RuntimeError)
    assert err.request_id == "req-42"
    assert "req-42" in str(err) and "cancel" in str(err).lower()
    anonymous = ProviderRequestCancelled()
    assert anonymous.request_id is None
    assert "cancel" in str(anonymous).lower()


EXAMPLES = [
    LLMError("boom", provider="openai", status_code=500, retryable=True),
    RateLimitError("slow down", provider="anthropic", status_code=429, retry_after=3),
    QuotaExceededError(
        "no credit", provider="openai", status_code=429,
        upstream=UpstreamDetail(status=429, type="insufficient_quota", message="no credit", headers={"a": "1"}),
    ),
    AuthenticationError("bad key", status_code=401),
    PluginError("prefix", "process_chunk", ValueError("bad chunk")),
    PluginError("tag", "finalize", KeyError("x"), detail="returned 2 values"),
    ConfigError("unknown provider", key="provider", plugins=["a"]),
    ActionInputError("'n' must be a number", action="compact", input="n"),
    MissingFieldError("role", "Message"),
    ProviderRequestCancelled("req-7"),
    ProviderRequestCancelled(),
    errors.EmptyResponseError("no chunk", provider="openai"),
    errors.AsyncOnlyHookError("async-only", key="k", plugins=["t"]),
    errors.InvalidValueError("bytes cannot be carried", path="Message.content"),
    errors.InvalidArgumentError("context must be a mapping", argument="context"),
    errors.RequestInFlightError("req-9"),
    errors.ConflictError("s1", expected=3, current=5),
    errors.SessionNotFoundError("s1"),
    errors.CorruptRecordError("bad row", session_id="s1", revision=2, what="message 4"),
    errors.SchemaVersionError("too new", found=9, supported=1),
    errors.ConfigNotAllowedError("config key 'base_url' is set by the operator", key="base_url"),
    errors.StoreError("the store is closed", session_id="s2"),
    errors.StoreUnavailableError("the database is down", reason="unreachable", retry_after=1.0, session_id="s3"),
    errors.UnknownConfigKeyWarning("config key `max_token` is not declared", key="max_token", suggestion="max_tokens"),
    errors.UnknownHookWarning("no hook", plugin="p", name="proces_chunk", suggestion="process_chunk"),
]


def test_new_engine_errors_name_what_was_wrong() -> None:
    assert errors.EmptyResponseError("x").retryable is True
    dup = errors.RequestInFlightError("req-1")
    assert dup.request_id == "req-1" and dup.argument == "request_id" and "req-1" in str(dup)
    assert errors.InvalidValueError("m", path="Session.metadata['k']").path == "Session.metadata['k']"
    hierarchy = errors.__doc__ or ""
    for name in ("EmptyResponseError", "AsyncOnlyHookError", "InvalidValueError", "InvalidArgumentError",
                 "RequestInFlightError", "QuotaExceededError"):
        assert name in hierarchy  # the drawn hierarchy stays current


@pytest.mark.parametrize("err", EXAMPLES, ids=lambda e: type(e).__name__)
def test_errors_survive_pickle_and_deepcopy(err: Exception) -> None:
    # Errors cross process boundaries (process pools, multiprocessing) and get
    # deep-copied with the values that carry them; both must keep every field.
    import copy
    import pickle

    for clone in (pickle.loads(pickle.dumps(err)), copy.deepcopy(err)):
        assert type(clone) is type(err)
        assert str(clone) == str(err)
        assert clone.args == err.args
        public = {k: v for k, v in vars(err).items() if k != "original"}
        assert {k: v for k, v in vars(clone).items() if k != "original"} == public
        if isinstance(err, PluginError):
            assert type(clone.original) is type(err.original) and str(clone.original) == str(err.original)
