"""The hook contract: which hooks each plugin kind has, when they run, and what their defaults do.

The hooks' parameters are stated once, in Python: the protocols' signatures
(:mod:`agent_core.plugins.protocols`, :mod:`agent_core.plugins.tool_protocol`), whose
bodies are the defaults. This table adds what a signature cannot say: the stage at
which each hook runs and, in words, what its default does. The protocols module joins
the two into :data:`~agent_core.plugins.protocols.HOOKS` when it is imported (a table
row its protocol does not declare fails there), the binder
(:mod:`agent_core.plugins.hooks`) reads each hook's parameters from that, and the hook
reference in ``docs/conventions.md`` is rendered from it (:func:`markdown_table`).

A signature in the contract's notation lists the parameters after ``self``: ``name=``
has a default, names after ``*`` are keyword-only. Stages:

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

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ASYNC_HOOKS", "KIND_NAMES", "ROWS", "HookSpec", "Param", "markdown_table", "parse_signature",
           "render_signature"]

KIND_NAMES = ("provider", "extension", "feature", "tool")


@dataclass(frozen=True)
class HookSpec:
    """One hook of one plugin kind."""

    kind: str
    name: str
    stage: str
    signature: str  # parameters after ``self``, in the notation above, read from the protocol
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


# (hook, stage, default). Hooks several kinds share come in groups, and each
# group's protocol (named beside it) declares its hooks once, bodies included.
_SHARED = [  # every kind: BasePlugin (agent_core.plugins.base)
    ("get_config_schema", "resolution", "no keys"),
    ("get_ui_elements", "app", "no elements"),
]
_GATE = [  # every kind but the provider: TagGatedPlugin (agent_core.plugins.base)
    ("required_tags", "resolution", "none"),
    ("forbidden_tags", "resolution", "none"),
    ("is_enabled", "resolution", "None: the tag rules decide"),
    ("get_tags", "resolution", "none"),
]
_CHAIN = [  # extensions and features: ChainPlugin (agent_core.plugins.protocols)
    *_SHARED,
    *_GATE,
    ("get_models", "resolution", "the models unchanged"),
    ("init", "setup", "the state unchanged"),
    ("to_native_messages", "convert", "the native messages unchanged"),
    ("from_native_messages", "convert", "the messages unchanged"),
    ("initialize_request", "convert", "both unchanged"),
    ("finalize", "finalize", "all unchanged"),
    ("get_actions", "lifecycle", "no actions"),
    ("execute_action", "lifecycle", "the native messages unchanged"),
]
_FORMATS = [  # providers and extensions: ToolFormatsPlugin (agent_core.plugins.protocols)
    ("accepted_tool_schema_formats", "tools", "none"),
    ("emitted_tool_call_formats", "tools", "none"),
    ("get_tool_interop_contribution", "tools", "an empty contribution"),
]
#: kind -> (hook, stage, default) for each of its hooks
ROWS: dict[str, list[tuple[str, str, str]]] = {
    "provider": [
        *_SHARED,
        ("init", "setup", "{'config': config}"),
        ("get_models", "resolution", "no models"),
        ("get_tags", "resolution", "none"),
        ("to_native_messages", "convert", "role and content of each message"),
        ("from_native_messages", "convert", "role and content, empty metadata"),
        ("initialize_request", "convert", "both unchanged"),
        ("stream_api", "call", "no chunks"),
        ("call_api", "call", "no messages"),
        ("process_chunk", "hot", "nothing new"),
        ("finalize", "finalize", "no finals"),
        ("cancel_request", "call", "False"),
        *_FORMATS,
        ("to_display_format", "app", "the message"),
    ],
    "extension": [
        *_CHAIN,
        ("process_chunk", "hot", "all unchanged"),
        *_FORMATS,
    ],
    "feature": [
        *_CHAIN,
        ("prepare_tools", "tools", "the tools unchanged"),
        ("get_completions", "app", "none"),
        ("apply_completion", "app", "''"),
        ("get_template", "app", "''"),
        # ours, beyond the seed: a watcher of the request's timeline (agent_core.engine.observe)
        ("observe_request", "setup", "None: nothing observed"),
    ],
    "tool": [
        *_SHARED,
        *_GATE,
        ("init", "setup", "{'config': config}"),
        ("prepare", "setup", "{}"),
        ("prepare_async", "setup", "prepare()"),
        ("get_tool_schemas", "tools", "no schemas"),
        ("get_tool_interop_contribution", "tools", "an empty contribution"),
        ("can_handle_tool_call", "tools", "None: route by name"),
        ("format_tool_call_preview", "tools", "''"),
        ("execute_tool", "tools", "an 'Unknown tool' error result"),
        ("execute_tool_async", "tools", "execute_tool()"),
        ("stream_tool", "tools", "no parts"),
        ("stream_tool_async", "tools", "stream_tool()"),
        ("format_tool_result", "tools", "'Result: ...' or 'Error: ...'"),
        ("to_display_format", "app", "a text element"),
    ],
}

#: hooks that are async in the contract: ``coroutine`` or ``async generator``
ASYNC_HOOKS = {"prepare_async": "coroutine", "execute_tool_async": "coroutine", "stream_tool_async": "async generator"}

#: async twins a provider may offer beside its sync call hooks (same parameters)
PROVIDER_TWINS = {"astream_api": "stream_api", "acall_api": "call_api"}


def render_signature(fn: Callable[..., Any]) -> str:
    """A function's parameters after ``self``, in the contract's notation (``"a, b=, *, c, d="``)."""
    parts: list[str] = []
    for p in list(inspect.signature(fn).parameters.values())[1:]:
        if p.kind is p.KEYWORD_ONLY and "*" not in parts:
            parts.append("*")
        parts.append(p.name + ("=" if p.default is not p.empty else ""))
    return ", ".join(parts)


def markdown_table(hooks: Mapping[str, Mapping[str, HookSpec]]) -> str:
    """The hook reference of ``docs/conventions.md``: one row a hook of a kind, in the contract's order."""
    lines = ["| kind | hook | parameters after `self` | stage | default |", "|---|---|---|---|---|"]
    for kind in KIND_NAMES:
        for spec in hooks[kind].values():
            lines.append(f"| {kind} | `{spec.name}` | `({spec.signature})` | {spec.stage} | {spec.default} |")
    return "\n".join(lines) + "\n"
