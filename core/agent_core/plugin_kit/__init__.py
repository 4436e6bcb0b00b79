"""The plugin kit: everything a plugin author (and every bundled plugin) builds with, in one public place.

A plugin needs more than the hook contract: a way to find markers in text cut at any
point, to accumulate streamed text cheaply, to rewrite a final message, the names of the
tool formats, and the kit classes, the one way to write each kind of plugin
(:class:`Extension`, :class:`Feature`, :class:`Tool`; a provider subclasses
:class:`agent_core.BaseProvider`). A plugin that does I/O (a provider) yields effects
and hands its flow to the two drivers, so one generator runs both sync and async. Bundled
plugins, features and providers import only :mod:`agent_core`, this kit and the public
provider modules, as a third party's plugin would. What only code hosting the engine needs
(the testing kit's harness, the store, the server) is in :mod:`agent_core.host_kit`. The
kit sits on top of the kernel: it may import any kernel room, and no kernel room imports it.

Its modules, one job each, all re-exported here (import from ``agent_core.plugin_kit``,
not from the modules): :mod:`.markers` (:class:`MarkerScanner`), :mod:`.pieces` (text
pushed piece by piece), :mod:`.finals` (rewriting finals with the native history in
step), :mod:`.metadata` (reasoning partials, extras read from native messages),
:mod:`.hook_types` (short names for signatures), :mod:`.tool_formats` (schema
adapting), :mod:`.tool_history` (which tool calls and results a history sends), :mod:`.declared` (:class:`Extension` and :class:`Feature`, whose fixed tags,
schema, UI elements and actions are class attributes) and :mod:`.tools` (:class:`Tool`,
whose hooks take one :class:`ToolCall`). Provider wire helpers stay with their providers
(:mod:`agent_core_providers.openai`, :mod:`agent_core_providers.anthropic`,
:mod:`agent_core_providers.shapes`), which plugins import directly.
"""

from ..plugins.ui_elements import ConfigElement, MessageFooter, SessionAction, StatusBar
from ..plugins.tool_interop import (
    ANTHROPIC,
    JSON_SCHEMA,
    OPENAI_CHAT,
    SchemaAdapter,
    ToolCallReader,
    detect_schema_format,
)
from ..runtime.effects import (
    Call,
    EffectCancelled,
    EffectTimeout,
    OpenIter,
    Pump,
)
from ..runtime.drivers import FlowStream, drive_async, drive_sync
from ..tools.policy import TOOL_PRE_VERDICTS
from .declared import Extension, Feature
from .finals import replace_final, rewrite_finals, rewrite_last_assistant
from .hook_types import ChunkOutput, Dict, Msgs
from .markers import Hit, MarkerScanner
from .metadata import annotate, reasoning_partial
from .pieces import push, pushed, text_of
from .tool_formats import adapt_schema
from .tool_history import ToolTurn, tool_turns
from .tools import Tool, ToolCall, failure, success

__all__ = [
    # markers in streamed text (markers)
    "Hit", "MarkerScanner",
    # text accumulated from pieces (pieces)
    "push", "pushed", "text_of",
    # finals rewritten with the native history in step (finals)
    "replace_final", "rewrite_finals", "rewrite_last_assistant",
    # metadata: reasoning partials, extras read from native messages (metadata)
    "annotate", "reasoning_partial",
    # hook signatures (hook_types)
    "ChunkOutput", "Dict", "Msgs",
    # tool formats: their names, telling and adapting a schema's format, and what a plugin adds to the
    # interop table (agent_core.plugins.tool_interop; tool_formats); InspectedToolCall and
    # ToolInteropContribution are agent_core's own names
    "ANTHROPIC", "JSON_SCHEMA", "OPENAI_CHAT", "SchemaAdapter", "ToolCallReader", "adapt_schema",
    "detect_schema_format",
    # a history walked as a tool extension sends it: calls made, results whose call was cut (tool_history)
    "ToolTurn", "tool_turns",
    # the kit classes: bases whose fixed hooks are declared as attributes (declared), and tools taking one
    # call value (tools)
    "Extension", "Feature", "Tool", "ToolCall", "failure", "success",
    # a plugin that does I/O: its effects (agent_core.runtime.effects), the sync/async drivers, and a flow
    # handed out as an async iterator that reads in batches (agent_core.runtime.drivers)
    "Call", "EffectCancelled", "EffectTimeout", "OpenIter", "Pump", "drive_async", "drive_sync", "FlowStream",
    # the UI elements' schema, one Struct per kind (agent_core.plugins.ui_elements)
    "ConfigElement", "MessageFooter", "SessionAction", "StatusBar",
    # what a tool_pre action may answer (agent_core.tools.policy)
    "TOOL_PRE_VERDICTS",
]
