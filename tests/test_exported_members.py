"""Lock the public names of ``agent_core``: adding or removing one is a deliberate act."""

from __future__ import annotations

import importlib

import agent_core
import pytest

PUBLIC_NAMES = [
    "ActionInputError",
    "ActionResult",
    "AgentCore",
    "AgentCoreError",
    "AnsweredEvent",
    "ApprovalRequest",
    "AsyncOnlyHookError",
    "AuthenticationError",
    "BaseFeature",
    "BasePlugin",
    "BaseProvider",
    "BaseProviderExtension",
    "BaseTool",
    "ConfigError",
    "ConfigNotAllowedError",
    "ConfigPolicy",
    "ConflictError",
    "ContentFilterError",
    "ContextLengthError",
    "CorruptRecordError",
    "DoneEvent",
    "EmptyResponseError",
    "ErrorEvent",
    "ErrorInfo",
    "Event",
    "FeaturePlugin",
    "FinalEvent",
    "FrozenDict",
    "FrozenList",
    "FrozenVector",
    "InspectedToolCall",
    "InvalidArgumentError",
    "InvalidRequestError",
    "InvalidValueError",
    "LLMError",
    "LLMTimeoutError",
    "MalformedResponseError",
    "Message",
    "MissingAPIKeyError",
    "MissingFieldError",
    "NATIVE_KEY",
    "Outcome",
    "PartialEvent",
    "PartialMessage",
    "PluginCore",
    "PluginError",
    "PluginRef",
    "ProviderExtensionPlugin",
    "ProviderPlugin",
    "ProviderRequestCancelled",
    "ProviderUnavailableError",
    "QuotaExceededError",
    "ROLES",
    "RateLimitError",
    "RedirectError",
    "RequestInFlightError",
    "RequestObserver",
    "RequestResult",
    "Resolution",
    "RetractEvent",
    "RetryingEvent",
    "Role",
    "SchemaVersionError",
    "Session",
    "SessionNotFoundError",
    "StartEvent",
    "StoreError",
    "StoreUnavailableError",
    "StreamRetry",
    "ToolCallEvent",
    "ToolDescriptor",
    "ToolInteropContribution",
    "ToolPlugin",
    "ToolProgressEvent",
    "ToolResultEvent",
    "UnknownConfigKeyWarning",
    "UnknownHookWarning",
    "UpstreamDetail",
    "Usage",
    "UserMessageEvent",
    "__version__",
    "decode_event",
    "encode_event",
    "freeze",
    "thaw",
]


def test_the_list_above_is_sorted() -> None:
    assert PUBLIC_NAMES == sorted(PUBLIC_NAMES)


def test_public_names_are_locked() -> None:
    assert len(agent_core.__all__) == len(set(agent_core.__all__)), "duplicate names in agent_core.__all__"
    assert sorted(agent_core.__all__) == PUBLIC_NAMES


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_public_name_is_importable(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from agent_core import {name}", namespace)
    assert namespace[name] is getattr(agent_core, name)


def test_star_import_gives_exactly_the_public_names() -> None:
    namespace: dict[str, object] = {}
    exec("from agent_core import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == PUBLIC_NAMES


@pytest.mark.parametrize(
    "module",
    [
        "agent_core.errors",
        "agent_core.values.frozen",
        "agent_core.plugins.protocols",
        "agent_core.store",
        "agent_core.plugins.tool_interop",
        "agent_core.types",
    ],
)
def test_module_all_entries_exist(module: str) -> None:
    mod = importlib.import_module(module)
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert missing == []


def test_the_original_platforms_method_names_stay_on_agent_core() -> None:
    for name in ("send_request", "send_request_stream", "slice_session"):
        assert callable(getattr(agent_core.AgentCore, name))
