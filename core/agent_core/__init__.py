"""agent-core: frozen sessions flowing through provider, extension and feature chains.

The public names are imported here explicitly; anything else is internal.
Test helpers live in :mod:`agent_core.testing`.
"""

from .approval import ApprovalRequest
from .engine import ActionResult, AgentCore, RequestResult
from .errors import (
    ActionInputError,
    AuthenticationError,
    ConfigError,
    ContentFilterError,
    ContextLengthError,
    InvalidRequestError,
    LLMError,
    LLMTimeoutError,
    MissingFieldError,
    PluginError,
    ProviderRequestCancelled,
    ProviderUnavailableError,
    RateLimitError,
)
from .events import (
    DoneEvent,
    ErrorEvent,
    ErrorInfo,
    Event,
    FinalEvent,
    Outcome,
    PartialEvent,
    StartEvent,
    ToolCallEvent,
    ToolProgressEvent,
    ToolResultEvent,
    Usage,
    UserMessageEvent,
    decode_event,
    encode_event,
)
from .frozen import FrozenDict, FrozenList, FrozenVector, freeze, thaw
from .protocols import (
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
from .native_history import NATIVE_KEY
from .resolution import PluginRef, Resolution
from .tool_interop import InspectedToolCall, ToolInteropContribution
from .types import ROLES, Message, PartialMessage, Role, Session, ToolDescriptor

__version__ = "0.1.0"

__all__ = [
    "ActionInputError",
    "ActionResult",
    "AgentCore",
    "ApprovalRequest",
    "AuthenticationError",
    "BaseFeature",
    "BasePlugin",
    "BaseProvider",
    "BaseProviderExtension",
    "BaseTool",
    "ConfigError",
    "ContentFilterError",
    "ContextLengthError",
    "DoneEvent",
    "ErrorEvent",
    "ErrorInfo",
    "Event",
    "FeaturePlugin",
    "FinalEvent",
    "FrozenDict",
    "FrozenList",
    "FrozenVector",
    "InspectedToolCall",
    "InvalidRequestError",
    "LLMError",
    "LLMTimeoutError",
    "Message",
    "MissingFieldError",
    "NATIVE_KEY",
    "Outcome",
    "PartialEvent",
    "PartialMessage",
    "PluginError",
    "PluginRef",
    "ProviderExtensionPlugin",
    "ProviderPlugin",
    "ProviderRequestCancelled",
    "ProviderUnavailableError",
    "ROLES",
    "RateLimitError",
    "RequestResult",
    "Resolution",
    "Role",
    "Session",
    "StartEvent",
    "ToolCallEvent",
    "ToolDescriptor",
    "ToolInteropContribution",
    "ToolPlugin",
    "ToolProgressEvent",
    "ToolResultEvent",
    "Usage",
    "UserMessageEvent",
    "__version__",
    "decode_event",
    "encode_event",
    "freeze",
    "thaw",
]
