"""The original platform's ``agent_core.types``: the values, the plugin protocols, the cancellation error.

Code written against it imports everything from here. The definitions live
in :mod:`agent_core.values` (messages, sessions, tool descriptors),
:mod:`agent_core.plugins.protocols` and :mod:`agent_core.errors`; this module only
gathers them, so that those modules never need to import each other in a circle.
"""

from .errors import ProviderRequestCancelled
from .plugins.protocols import BasePlugin, FeaturePlugin, ProviderExtensionPlugin, ProviderPlugin, ToolPlugin
from .values.messages import ROLES, Message, PartialMessage, Role, Session, ToolDescriptor

__all__ = [
    "ROLES",
    "BasePlugin",
    "FeaturePlugin",
    "Message",
    "PartialMessage",
    "ProviderExtensionPlugin",
    "ProviderPlugin",
    "ProviderRequestCancelled",
    "Role",
    "Session",
    "ToolDescriptor",
    "ToolPlugin",
]
