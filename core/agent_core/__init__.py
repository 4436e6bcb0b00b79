"""agent-core: frozen sessions flowing through provider, extension and feature chains.

The public names are imported here explicitly; anything else is internal.
Test helpers live in :mod:`agent_core.testing`.
"""

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
from .tool_interop import InspectedToolCall, ToolInteropContribution
from .types import ROLES, Message, PartialMessage, Role, Session, ToolDescriptor

__version__ = "0.1.0"

__all__ = [
    "ROLES",
    "ActionInputError",
    "AuthenticationError",
    "BaseFeature",
    "BasePlugin",
    "BaseProvider",
    "BaseProviderExtension",
    "BaseTool",
    "ConfigError",
    "ContentFilterError",
    "ContextLengthError",
    "FeaturePlugin",
    "FrozenDict",
    "FrozenList",
    "FrozenVector",
    "InspectedToolCall",
    "InvalidRequestError",
    "LLMError",
    "LLMTimeoutError",
    "Message",
    "MissingFieldError",
    "PartialMessage",
    "PluginError",
    "ProviderExtensionPlugin",
    "ProviderPlugin",
    "ProviderRequestCancelled",
    "ProviderUnavailableError",
    "RateLimitError",
    "Role",
    "Session",
    "ToolDescriptor",
    "ToolInteropContribution",
    "ToolPlugin",
    "__version__",
    "freeze",
    "thaw",
]
