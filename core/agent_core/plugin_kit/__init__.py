"""The plugin kit: everything a plugin author (and every bundled plugin) builds with, in one public place.

A plugin needs more than the hook contract: a way to find markers in text cut at any
point, to accumulate streamed text cheaply, to rewrite a final message, the names of the
tool formats, bases that turn fixed data and one call value into hooks; code that does
I/O needs the effects and the two drivers that run one generator both sync and async;
the testing kit needs what runs a plugin as a request does (the hot loop, the config a
schema gives). They live here so that bundled plugins, features, the store, the server
and the testing kit import only :mod:`agent_core`, this kit and the public provider
modules, as a third party's plugin would. The kit sits on top of the kernel: it may
import any kernel room, and no kernel room imports it.

Its modules, one job each, all re-exported here (import from ``agent_core.plugin_kit``,
not from the modules): :mod:`.markers` (:class:`MarkerScanner`), :mod:`.pieces` (text
pushed piece by piece), :mod:`.finals` (rewriting finals with the native history in
step), :mod:`.metadata` (reasoning partials, extras read from native messages),
:mod:`.hook_types` (short names for signatures), :mod:`.tool_formats` (schema
adapting), :mod:`.declared` (:class:`Extension` and :class:`Feature`, whose fixed tags,
schema, UI elements and actions are class attributes) and :mod:`.tools` (:class:`Tool`,
whose hooks take one :class:`ToolCall`). Provider wire helpers stay with their providers
(:mod:`agent_core_providers.openai`, :mod:`agent_core_providers.anthropic`,
:mod:`agent_core_providers.shapes`), which plugins import directly.
"""

from ..plugins.finals_check import final_fault
from ..plugins.native_view import NativeView, misread_natives, viewing
from ..plugins.ui_elements import ConfigElement, MessageFooter, SessionAction, StatusBar, ui_element_fault
from ..engine.hot_loop import HotLoop
from ..plugins.config import ENGINE_KEYS, effective_config, parse_schema
from ..plugins.config_policy import DEFAULT_CLIENT_KEYS
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
    CancellationToken,
    EffectCancelled,
    EffectTimeout,
    OpenIter,
    Pump,
)
from ..runtime.drivers import FlowStream, drive_async, drive_sync
from ..tools.policy import TOOL_PRE_VERDICTS, read_verdict
from ..values.native_history import prefix_digest, without_native_history
from ..values.request_config import RequestConfig
from .declared import Extension, Feature
from .finals import replace_final, rewrite_finals, rewrite_last_assistant
from .hook_types import ChunkOutput, Dict, Msgs
from .markers import Hit, MarkerScanner
from .metadata import annotate, reasoning_partial
from .pieces import Pieces, push, text_of
from .tool_formats import adapt_schema
from .tools import Tool, ToolCall, failure, success

__all__ = [
    # markers in streamed text (markers)
    "Hit", "MarkerScanner",
    # text accumulated from pieces (pieces)
    "Pieces", "push", "text_of",
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
    # plugin bases whose fixed hooks are declared as attributes (declared), and tools taking one call value (tools)
    "Extension", "Feature", "Tool", "ToolCall", "failure", "success",
    # effects (agent_core.runtime.effects), the sync/async drivers, and a flow handed out as an async iterator
    # that the engine's driver pumps inline (agent_core.runtime.drivers)
    "Call", "CancellationToken", "EffectCancelled", "EffectTimeout", "OpenIter", "Pump", "drive_async", "drive_sync",
    "FlowStream",
    # which stored native history a session's messages continue, and a session without that record
    # (agent_core.values.native_history)
    "prefix_digest", "without_native_history",
    # the engine's per-chunk loop over a provider and its extensions, and its closing step (agent_core.engine.hot_loop)
    "HotLoop",
    # why a value cannot be a final message, in the words the engine uses (agent_core.plugins.finals_check)
    "final_fault",
    # a plugin's declared config schema read, and the config it then sees: defaults filled in, types checked
    # (agent_core.plugins.config); the keys the engine reads for itself, and those a ConfigPolicy lets a
    # client set unless told otherwise (agent_core.plugins.config_policy)
    "effective_config", "parse_schema", "ENGINE_KEYS", "DEFAULT_CLIENT_KEYS",
    # the mapping a request's config is, whose miss names the fix (agent_core.values.request_config), and the
    # provider's natives read in the core shape during the closing step, and what the engine tells an extension
    # that read them as core messages (agent_core.plugins.native_view)
    "RequestConfig", "NativeView", "viewing", "misread_natives",
    # the UI elements' schema, one Struct per kind, and why a value is no UI element in the engine's words
    # (agent_core.plugins.ui_elements)
    "ConfigElement", "MessageFooter", "SessionAction", "StatusBar", "ui_element_fault",
    # what a tool_pre action may answer, and what the engine says of any other answer (agent_core.tools.policy)
    "TOOL_PRE_VERDICTS", "read_verdict",
]
