"""agent-core: frozen sessions flowing through provider, extension and feature chains.

The public names are imported here explicitly; anything else is internal.
Test helpers live in :mod:`agent_core.testing`.
"""

from .engine.core import ActionResult, AgentCore, RequestResult
from .engine.observe import RequestObserver
from .errors import (
    ActionInputError,
    AgentCoreError,
    AsyncOnlyHookError,
    AuthenticationError,
    ConfigError,
    ConfigNotAllowedError,
    ConflictError,
    ContentFilterError,
    ContextLengthError,
    CorruptRecordError,
    EmptyResponseError,
    InvalidArgumentError,
    InvalidRequestError,
    InvalidValueError,
    LLMError,
    LLMTimeoutError,
    MalformedResponseError,
    MissingAPIKeyError,
    MissingFieldError,
    PluginError,
    ProviderRequestCancelled,
    ProviderUnavailableError,
    QuotaExceededError,
    RateLimitError,
    RedirectError,
    RequestInFlightError,
    SchemaVersionError,
    SecretInSessionError,
    SessionNotFoundError,
    StoreError,
    StoreUnavailableError,
    UnknownConfigKeyWarning,
    UnknownHookWarning,
    UpstreamDetail,
)
from .plugins.config_policy import ConfigPolicy
from .plugins.core import PluginCore
from .plugins.protocols import (
    BaseFeature,
    BasePlugin,
    BaseProvider,
    BaseProviderExtension,
    BaseTool,
    FeaturePlugin,
    ProviderExtensionPlugin,
    ProviderPlugin,
    ToolPlugin,
)
from .plugins.resolution import PluginRef, Resolution
from .plugins.tool_interop import InspectedToolCall, ToolInteropContribution
from .tools.approval import ApprovalRequest
from .values.events import (
    AnsweredEvent,
    DoneEvent,
    ErrorEvent,
    ErrorInfo,
    Event,
    FinalEvent,
    Outcome,
    PartialEvent,
    RetractEvent,
    RetryingEvent,
    StartEvent,
    StreamRetry,
    ToolCallEvent,
    ToolProgressEvent,
    ToolResultEvent,
    Usage,
    UserMessageEvent,
    decode_event,
    encode_event,
)
from .values.frozen import FrozenDict, FrozenList, FrozenVector, freeze, thaw
from .values.messages import ROLES, Message, PartialMessage, Role, Session, ToolDescriptor
from .values.native_history import NATIVE_KEY

__version__ = "0.1.0"

__all__ = [
    # running requests: the engine, what a request and an action answer, and how plugins are chosen
    "AgentCore", "RequestResult", "ActionResult", "RequestObserver", "ApprovalRequest", "ConfigPolicy",
    "Resolution", "PluginRef", "PluginCore",
    # the values that flow: messages, sessions, and the frozen containers they are made of
    "Message", "PartialMessage", "Session", "ToolDescriptor", "Role", "ROLES", "NATIVE_KEY",
    "FrozenDict", "FrozenList", "FrozenVector", "freeze", "thaw",
    # the events of a streamed request, and their wire form
    "Event", "StartEvent", "PartialEvent", "RetractEvent", "RetryingEvent", "AnsweredEvent", "FinalEvent",
    "ToolCallEvent", "ToolProgressEvent", "ToolResultEvent", "UserMessageEvent", "ErrorEvent", "DoneEvent",
    "Outcome", "ErrorInfo", "Usage", "StreamRetry", "encode_event", "decode_event",
    # the plugin protocols and their bases (a plugin author's kit is agent_core.plugin_kit)
    "ProviderPlugin", "ProviderExtensionPlugin", "FeaturePlugin", "ToolPlugin", "BaseProvider", "BasePlugin",
    "BaseProviderExtension", "BaseFeature", "BaseTool", "InspectedToolCall", "ToolInteropContribution",
    # errors a caller catches: config and plugins, then the model's API, then the store; and two warnings
    "AgentCoreError", "ConfigError", "ConfigNotAllowedError", "PluginError", "SecretInSessionError",
    "AsyncOnlyHookError", "InvalidValueError", "MissingFieldError", "InvalidArgumentError", "ActionInputError",
    "RequestInFlightError",
    "LLMError", "AuthenticationError", "RateLimitError", "RedirectError", "QuotaExceededError",
    "ContextLengthError", "ContentFilterError", "InvalidRequestError", "MalformedResponseError",
    "EmptyResponseError", "LLMTimeoutError", "ProviderUnavailableError", "MissingAPIKeyError",
    "ProviderRequestCancelled", "UpstreamDetail",
    "StoreError", "StoreUnavailableError", "SessionNotFoundError", "ConflictError", "CorruptRecordError",
    "SchemaVersionError",
    "UnknownConfigKeyWarning", "UnknownHookWarning",
    "__version__",
]
