"""The hook contract, as one table: which hooks each plugin kind has, when they run, how they are called.

This is the single source of the contract (seed 003). The protocols in
:mod:`agent_core.plugins.protocols` check their declarations against it when they are
imported, the binder (:mod:`agent_core.plugins.hooks`) reads each hook's parameters
from it, and the tests compare both with it. Changing a hook means changing
this table, and everything that disagrees then fails loudly.

A signature lists the parameters after ``self``: ``name=`` has a default,
names after ``*`` are keyword-only. Stages:

``resolution``  before a request, to decide which plugins run (also ``resolve``)
``setup``       once per request, before the first provider call
``convert``     per provider call, converting between core and native messages
``call``        the provider call itself
``hot``         per streamed chunk (features never run here)
``finalize``    after the provider call
``tools``       building the tool catalog and running tool calls
``lifecycle``   actions, run by the application or at a lifecycle point
``app``         asked by applications (UI, completions), never by a request
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ASYNC_HOOKS", "HOOKS", "KIND_NAMES", "HookSpec", "Param", "parse_signature"]

KIND_NAMES = ("provider", "extension", "feature", "tool")


@dataclass(frozen=True)
class HookSpec:
    """One hook of one plugin kind."""

    kind: str
    name: str
    stage: str
    signature: str  # parameters after ``self``, in the notation above
    default: str  # what the default body (the protocol's) does


@dataclass(frozen=True)
class Param:
    name: str
    has_default: bool
    keyword_only: bool


def parse_signature(signature: str) -> tuple[Param, ...]:
    """Read a signature in the table's notation: ``"a, b=, *, c, d="``."""
    out: list[Param] = []
    kw_only = False
    for part in (p.strip() for p in signature.split(",")):
        if not part:
            continue
        if part == "*":
            kw_only = True
            continue
        out.append(Param(part.rstrip("="), part.endswith("="), kw_only))
    return tuple(out)


_TOOL_CALL_KW = "*, payload_kind=, payload_format=, payload_metadata=, tool_call="
_TOOL_RUN = f"tool_name, payload, state, {_TOOL_CALL_KW}, cancellation=, context=, prepared="

# (hook, stage, signature, default). Hooks several kinds share come in groups, and each
# group's protocol (named beside it) declares its hooks once, bodies included.
_SHARED = [  # every kind: BasePlugin (agent_core.plugins.base)
    ("get_config_schema", "resolution", "", "no keys"),
    ("get_ui_elements", "app", "config, context=", "no elements"),
]
_GATE = [  # every kind but the provider: TagGatedPlugin (agent_core.plugins.base)
    ("required_tags", "resolution", "", "none"),
    ("forbidden_tags", "resolution", "", "none"),
    ("is_enabled", "resolution", "config, tags, models, context", "None: the tag rules decide"),
    ("get_tags", "resolution", "config, models", "none"),
]
_CHAIN = [  # extensions and features: ChainPlugin (agent_core.plugins.protocols)
    *_SHARED,
    *_GATE,
    ("get_models", "resolution", "config, models", "the models unchanged"),
    ("init", "setup", "config, state", "the state unchanged"),
    ("to_native_messages", "convert", "messages, native_messages, state=, *, context=", "the native messages unchanged"),
    ("from_native_messages", "convert", "native_messages, messages, state=, *, context=", "the messages unchanged"),
    ("initialize_request", "convert", "native_messages, state, *, context=", "both unchanged"),
    ("finalize", "finalize", "final_messages, native_messages, state, *, context=", "all unchanged"),
    ("get_actions", "lifecycle", "state", "no actions"),
    ("execute_action", "lifecycle", "action_id, session, native_messages, params, context, state",
     "the native messages unchanged"),
]
_FORMATS = [  # providers and extensions: ToolFormatsPlugin (agent_core.plugins.protocols)
    ("accepted_tool_schema_formats", "tools", "config, state=", "none"),
    ("emitted_tool_call_formats", "tools", "config, state=", "none"),
    ("get_tool_interop_contribution", "tools", "config, state=", "an empty contribution"),
]
_TABLE: dict[str, list[tuple[str, str, str, str]]] = {
    "provider": [
        *_SHARED,
        ("init", "setup", "config", "{'config': config}"),
        ("get_models", "resolution", "config", "no models"),
        ("get_tags", "resolution", "config, models", "none"),
        ("to_native_messages", "convert", "messages, state, *, context=", "role and content of each message"),
        ("from_native_messages", "convert", "native_messages, state, *, context=", "role and content, empty metadata"),
        ("initialize_request", "convert", "native_messages, state, *, request_id=, context=", "both unchanged"),
        ("stream_api", "call", "native_messages, state, *, request_id=", "no chunks"),
        ("call_api", "call", "native_messages, state, *, request_id=", "no messages"),
        ("process_chunk", "hot", "native_chunk, native_messages, state", "nothing new"),
        ("finalize", "finalize", "native_messages, state, *, context=", "no finals"),
        ("cancel_request", "call", "request_id", "False"),
        *_FORMATS,
        ("to_display_format", "app", "message, state", "the message"),
    ],
    "extension": [
        *_CHAIN,
        ("process_chunk", "hot", "native_chunk, partial_messages, final_messages, native_messages, state",
         "all unchanged"),
        *_FORMATS,
    ],
    "feature": [
        *_CHAIN,
        ("prepare_tools", "tools", "config, tools, context=", "the tools unchanged"),
        ("get_completions", "app", "config, text", "none"),
        ("apply_completion", "app", "config, text, completion", "''"),
        ("get_template", "app", "config", "''"),
        # ours, beyond the seed: a watcher of the request's timeline (agent_core.engine.observe)
        ("observe_request", "setup", "config, *, context=", "None: nothing observed"),
    ],
    "tool": [
        *_SHARED,
        *_GATE,
        ("init", "setup", "config", "{'config': config}"),
        ("prepare", "setup", "config, state, *, context=", "{}"),
        ("prepare_async", "setup", "config, state, *, context=", "prepare()"),
        ("get_tool_schemas", "tools", "state, *, prepared=", "no schemas"),
        ("get_tool_interop_contribution", "tools", "state", "an empty contribution"),
        ("can_handle_tool_call", "tools", f"tool_name, payload, state, {_TOOL_CALL_KW}, tool_schema=, prepared=",
         "None: route by name"),
        ("format_tool_call_preview", "tools", f"tool_name, payload, state, {_TOOL_CALL_KW}, prepared=", "''"),
        ("execute_tool", "tools", _TOOL_RUN, "an 'Unknown tool' error result"),
        ("execute_tool_async", "tools", _TOOL_RUN, "execute_tool()"),
        ("stream_tool", "tools", _TOOL_RUN, "no parts"),
        ("stream_tool_async", "tools", _TOOL_RUN, "stream_tool()"),
        ("format_tool_result", "tools", "result, state", "'Result: ...' or 'Error: ...'"),
        ("to_display_format", "app", "text, result, state", "a text element"),
    ],
}

#: kind -> hook name -> its spec
HOOKS: dict[str, dict[str, HookSpec]] = {
    kind: {name: HookSpec(kind, name, stage, sig, default) for name, stage, sig, default in rows}
    for kind, rows in _TABLE.items()
}

#: hooks that are async in the contract: ``coroutine`` or ``async generator``
ASYNC_HOOKS = {"prepare_async": "coroutine", "execute_tool_async": "coroutine", "stream_tool_async": "async generator"}

#: async twins a provider may offer beside its sync call hooks (same parameters)
PROVIDER_TWINS = {"astream_api": "stream_api", "acall_api": "call_api"}
