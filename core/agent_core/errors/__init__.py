"""Typed errors, so callers can react to *what* went wrong rather than parse text.

Every error here is an :class:`AgentCoreError`, so ``except AgentCoreError``
catches whatever agent-core raises on purpose; each also keeps the builtin
base older callers test for (a ``ConfigError`` is still a ``ValueError``).
The hierarchy::

    Exception
    └── AgentCoreError                  the root: anything agent-core raises on purpose
        ├── LLMError                    the provider (model API) failed; .provider, .status_code, .upstream
        │   ├── RateLimitError          slow down; .retry_after seconds when the API said
        │   │   └── QuotaExceededError  no quota or credit left (insufficient_quota): never retried
        │   ├── AuthenticationError     the key is missing, wrong or not allowed (401/403)
        │   ├── ContextLengthError      the conversation no longer fits the model's window
        │   ├── ContentFilterError      the provider refused the content
        │   ├── InvalidRequestError     the API rejected the request as malformed (other 4xx)
        │   ├── ProviderUnavailableError  5xx, overload, or the server could not be reached
        │   ├── LLMTimeoutError         the provider did not answer in time (a read, or the whole deadline_s)
        │   ├── MalformedResponseError  the answer broke its API's format: not SSE/JSON/UTF-8, a line over
        │   │                           the cap, or valid JSON in a shape the API never uses
        │   ├── RedirectError           the API answered 3xx (never followed: the key stays here); .location
        │   └── EmptyResponseError      a stream ended without a single chunk or answer
        ├── PluginError                 a plugin hook raised; .plugin, .hook, .original
        │   └── SecretInSessionError    a declared secret's value in a request's finals or native history;
        │                               .plugin (declaring it), .key, .where
        ├── ConfigError (ValueError)    the config or the plugin set cannot work; .key, .plugins
        │   ├── AsyncOnlyHookError      an async-only hook met a sync call inside a running event loop
        │   ├── ConfigNotAllowedError   a client set a key (or chose a model) the operator keeps; .key
        │   └── MissingAPIKeyError      a provider's public API with no key to send; .env names its variable
        ├── InvalidValueError (ValueError)  a value JSON cannot carry, or nested too deeply; .path
        ├── ActionInputError (ValueError)  an action was called with bad params; .action, .input
        ├── InvalidArgumentError (TypeError, ValueError)  a public call got an unusable argument; .argument
        │   └── RequestInFlightError    a request id that is already in flight was given again
        ├── MissingFieldError (KeyError, ValueError)  serialized data lacks a required key; .key
        ├── UndeclaredConfigKeyError (KeyError)  a plugin read a config key the config does not hold
        │                           (declare it in config_schema); .key, .suggestion
        ├── PluginContractError (AssertionError)  check_plugin (agent_core.testing) found a broken hook;
        │                           .plugin, .hook, .rule
        ├── ProviderRequestCancelled (RuntimeError)  a request was cancelled by id; .request_id
        └── StoreError                  the session store could not do what was asked; .session_id
            ├── ConflictError           a put based on a stale revision; .expected, .current (nothing written)
            ├── SessionNotFoundError (LookupError)  no session has this id
            ├── CorruptRecordError      a stored row does not decode to a valid value; .revision, .what
            ├── SchemaVersionError      the database's schema is newer than this agent-core; .found, .supported
            └── StoreUnavailableError   the database cannot serve now (unreachable, busy, read-only, full);
                                        .reason, .retry_after

    UserWarning
    ├── UnknownConfigKeyWarning     a config key nothing declares (a typo?); .key, .suggestion
    ├── RepeatedToolCallWarning     a provider asked again for a tool call the request answered; .provider,
    │                               .call_ids
    └── UnknownHookWarning          a plugin method named almost like a hook (never called); .plugin, .name,
                                    .suggestion

LLM errors keep the provider's own message (never an API key) and mark
whether a retry may help (``retryable``), so retry policy can live outside the
provider. One built from an API's answer also holds that answer's own status,
type, code, param, message and rate-limit headers in ``.upstream``
(:class:`UpstreamDetail`, a value, not an error), for a gateway to pass on.
"""

from .hints import install_hint
from .llm import (
    AuthenticationError,
    ContentFilterError,
    ContextLengthError,
    EmptyResponseError,
    InvalidRequestError,
    LLMError,
    LLMTimeoutError,
    MalformedResponseError,
    ProviderUnavailableError,
    QuotaExceededError,
    RateLimitError,
    RedirectError,
    UpstreamDetail,
)
from .pipeline import (
    ActionInputError,
    AsyncOnlyHookError,
    ConfigError,
    ConfigNotAllowedError,
    InvalidArgumentError,
    InvalidValueError,
    MissingAPIKeyError,
    MissingFieldError,
    PluginContractError,
    PluginError,
    ProviderRequestCancelled,
    RepeatedToolCallWarning,
    RequestInFlightError,
    SecretInSessionError,
    UndeclaredConfigKeyError,
    UnknownConfigKeyWarning,
    UnknownHookWarning,
)
from .root import AgentCoreError
from .store import (
    ConflictError,
    CorruptRecordError,
    SchemaVersionError,
    SessionNotFoundError,
    StoreError,
    StoreUnavailableError,
)

__all__ = [
    "ActionInputError",
    "AgentCoreError",
    "AsyncOnlyHookError",
    "AuthenticationError",
    "ConfigError",
    "ConfigNotAllowedError",
    "ConflictError",
    "ContentFilterError",
    "ContextLengthError",
    "CorruptRecordError",
    "EmptyResponseError",
    "InvalidArgumentError",
    "InvalidRequestError",
    "InvalidValueError",
    "LLMError",
    "LLMTimeoutError",
    "MalformedResponseError",
    "MissingAPIKeyError",
    "MissingFieldError",
    "PluginContractError",
    "PluginError",
    "ProviderRequestCancelled",
    "ProviderUnavailableError",
    "QuotaExceededError",
    "RateLimitError",
    "RedirectError",
    "RepeatedToolCallWarning",
    "RequestInFlightError",
    "SecretInSessionError",
    "SchemaVersionError",
    "SessionNotFoundError",
    "StoreError",
    "StoreUnavailableError",
    "UndeclaredConfigKeyError",
    "UnknownConfigKeyWarning",
    "UnknownHookWarning",
    "UpstreamDetail",
    "install_hint",
]
