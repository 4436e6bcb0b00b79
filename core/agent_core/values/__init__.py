"""The values that flow through the pipeline, and the frozen containers they are made of.

Here live ``Message``, ``Session``, ``PartialMessage`` and ``ToolDescriptor``
(:mod:`.messages`), the deeply immutable ``FrozenDict``/``FrozenList``/``FrozenVector``
(:mod:`.frozen`, :mod:`.vector`), what JSON carries exactly (:mod:`.json_values`), the
events a request yields (:mod:`.events`), the read-only views plugins are handed
(:mod:`.views`) and the provider-native history kept in a session's metadata
(:mod:`.native_history`). Values know nothing of plugins or of how a request runs: this
package imports only :mod:`agent_core.errors`.
"""

from .messages import ROLES, Message, PartialMessage, Role, Session, ToolDescriptor

__all__ = ["ROLES", "Message", "PartialMessage", "Role", "Session", "ToolDescriptor"]
