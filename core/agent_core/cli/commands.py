"""``agent-core run`` and ``plugins``: one prompt, and the plugin listing.

Plugins come from entry points (:meth:`AgentCore.discover`), the same path a
third-party plugin takes. Text streams to stdout; tool activity, warnings
and errors go to stderr so stdout stays the reply. Every config key is
checked against the installed plugins' schemas: a wrong type is an error, a
key nothing declares is a warning that names the closest known key.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any

from ..engine.core import AgentCore
from ..errors import UnknownConfigKeyWarning
from ..tools.function import function_tool, load_function
from ..values.events import encode_event
from ..values.messages import Message
from .settings import layered_config

__all__ = ["add_commands", "make_core", "show_on_stderr"]


def make_core(args: argparse.Namespace, approval: Any = None, provider: str | None = None) -> AgentCore:
    """The plugins installed by entry point, plus ``--tool`` functions (and ``--record``'s provider)."""
    tools = [function_tool(load_function(spec)) for spec in getattr(args, "tool", None) or ()]
    providers = []
    if getattr(args, "record", None):  # the provider, writing each raw response body to the file
        from ..testing.replay import recording_provider

        providers.append(recording_provider(provider or args.provider or "echo", args.record))
    return AgentCore.discover(providers=providers, tools=tools, approval=approval)


def _run(args: argparse.Namespace) -> int:
    config = layered_config(args)
    core = make_core(args, provider=config["provider"])
    session = core.create_session()
    if args.system:
        session = core.add_message(session, Message("system", args.system))
    session = core.add_message(session, Message("user", args.prompt))
    out, err = sys.stdout, sys.stderr
    streamed = False  # text of the current answer is already on stdout
    failed = False  # an error event was printed: the done event adds nothing to it
    with warnings.catch_warnings():
        # The start event carries the same notes; print them once, our way.
        warnings.simplefilter("ignore", UnknownConfigKeyWarning)
        for event in core.stream_request(session, config):
            t = event.type
            if t == "start":
                for note in event.warnings:
                    err.write(f"warning: {note}\n")
            if args.json:
                out.write(encode_event(event).decode() + "\n")
                out.flush()
            elif t == "partial" and isinstance(event.message.content, str):
                out.write(event.message.content)
                out.flush()
                streamed = True
            elif t == "final" and event.message.role == "assistant":
                if not streamed and isinstance(event.message.content, str):
                    out.write(event.message.content)
                if event.message.content or streamed:
                    out.write("\n")
                streamed = False
            else:
                show_on_stderr(event, err)
            failed = failed or t == "error"
            if t == "done" and not event.outcome.ok:
                if not failed and not args.json:
                    err.write(f"stopped: {event.outcome.reason}: {event.outcome.detail}\n")
                return 1
    return 0


def show_on_stderr(event: Any, err: Any) -> None:
    """Tool activity and errors, one line each."""
    t = event.type
    if t == "tool_call":
        err.write(f"[tool] {event.tool_name}({json.dumps(event.payload)}) {event.preview}".rstrip() + "\n")
    elif t == "tool_result":
        content = event.message.content
        err.write(f"[tool] {event.tool_name} -> {content if isinstance(content, str) else json.dumps(content)}\n")
    elif t == "error":
        where = f" ({event.error.plugin}.{event.error.hook})" if event.error.plugin and event.error.hook else ""
        err.write(f"error{where}: {event.error.message}\n")


def _settings(declared: list[tuple[str, Any]], config: Any) -> str:
    """`` [key=value, ...]``: the ``(key, default)`` pairs declared, valued from ``config`` else the default.

    ``config`` comes from ``resolve()``, so secret values are already redacted.
    """
    shown = []
    for key, default in declared:
        value = config.get(key, default)
        if value is not None:
            shown.append(f"{key}={value if isinstance(value, str) else json.dumps(value)}")
    return f" [{', '.join(shown)}]" if shown else ""


def _plugins(args: argparse.Namespace) -> int:
    """One line per installed plugin: kind, name, on/off with the reason, and the settings it reads."""
    core = make_core(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownConfigKeyWarning)
        res = core.resolve(layered_config(args))
    for note in res.warnings:
        print(f"warning: {note}", file=sys.stderr)
    declared: dict[str, list[tuple[str, Any]]] = {}
    for entry in core.get_config_schema():
        declared.setdefault(entry["plugin"], []).append((entry["key"], entry.get("default")))
    for kind in ("provider", "extension", "feature", "tool"):
        for name in core.plugins(kind):
            reason = res.reasons.get(name)
            settings = _settings(declared.get(name, []), res.config) if reason else ""
            print(f"{kind:9} {name:22} {reason or 'off: not the selected provider'}{settings}")
    return 0


def add_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """``run`` and ``plugins`` (``serve`` is :mod:`agent_core.cli.serve`)."""
    run = sub.add_parser("run", parents=[common], help="send one prompt and stream the reply")
    run.add_argument("prompt")
    run.add_argument("--system", help="a system message to send first")
    run.add_argument("--no-stream", action="store_true", help="ask for the whole reply at once")
    run.add_argument("--max-iterations", type=int)
    run.add_argument("--json", action="store_true", help="print every event as a JSON line")
    run.add_argument(
        "--record", metavar="FILE",
        help="write the raw response body to FILE (openai/anthropic), for agent_core.testing.replay_provider",
    )
    run.set_defaults(func=_run)
    plugins = sub.add_parser("plugins", parents=[common], help="list installed plugins and whether they run")
    plugins.set_defaults(func=_plugins)
