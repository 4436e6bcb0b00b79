"""``agent-core run``, ``plugins`` and ``serve``: one prompt, the plugin listing, the HTTP server.

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
from ..errors import ConfigError, UnknownConfigKeyWarning
from ..tools.function import function_tool, load_function
from ..values.events import encode_event
from ..values.messages import Message
from .settings import layered_config, serve_table

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
    """``run``, ``plugins`` and ``serve``."""
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
    serve = sub.add_parser("serve", help="serve the pipeline over HTTP (OpenAI-compatible + sessions API)",
                           description="Serve the pipeline over HTTP. Safe as it starts: loopback only, no other "
                                       "site's pages, and requests may set only the keys a chat client chooses. "
                                       "See docs/security.md.")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--token", help="bearer token every route wants (default: $AGENT_CORE_TOKEN)")
    serve.add_argument("--tokens-file", metavar="FILE",
                       help="a TOML file of tenants, each with its tokens (and, optionally, models and config keys)")
    serve.add_argument("--store", metavar="URL", help="session store URL (default: sessions.db in $AGENT_CORE_HOME)")
    serve.add_argument(
        "--grace", type=float, default=30.0, metavar="SECONDS",
        help="on SIGTERM, how long running requests may finish before they are cancelled (default 30)",
    )
    serve.add_argument(
        "-c", "--config", action="append", metavar="KEY=VALUE|FILE",
        help="the operator's config every request starts from (KEY=VALUE, or a TOML file; its [serve] table "
             "holds the settings below)",
    )
    serve.add_argument("--allow-config", action="append", metavar="KEY",
                       help="let requests set this config key too (repeat; e.g. system_prompt)")
    serve.add_argument("--models", metavar="LIST",
                       help="the models clients may choose, comma-separated provider or provider/model patterns "
                            "(default: any model of any installed provider)")
    serve.add_argument("--default-provider", metavar="NAME",
                       help="the provider of a model name without one, e.g. gpt-4o-mini (default: the config's provider)")
    serve.add_argument("--model-alias", action="append", metavar="NAME=PROVIDER/MODEL",
                       help="a model name clients may send for provider/model (repeat)")
    serve.add_argument("--allowed-host", action="append", metavar="NAME",
                       help="a Host name to answer besides the loopback names (repeat; '*' for any)")
    serve.add_argument("--cors-origin", action="append", metavar="ORIGIN",
                       help="a web origin whose pages may call the server (repeat; none by default)")
    serve.add_argument("--insecure", action="store_true", default=None,
                       help="allow listening beyond loopback without a token")
    for flag, kind, what in _LIMIT_FLAGS:
        serve.add_argument(flag, type=kind, default=None, metavar="N", help=what)
    serve.set_defaults(func=_serve)


# (flag, type, help) for each limit of ServeSettings; the defaults live there (and in docs/security.md)
_LIMIT_FLAGS = (
    ("--max-body-bytes", int, "largest request body (default 8 MiB)"),
    ("--max-json-depth", int, "deepest JSON nesting of a body (default 64)"),
    ("--max-messages", int, "most messages in one request (default 2000)"),
    ("--header-timeout", float, "seconds a client may take to send a request's headers (default 10)"),
    ("--body-timeout", float, "seconds a client may take to send a request's body (default 30)"),
    ("--max-concurrent", int, "requests handled at once by this process; 503 beyond (default 256)"),
    ("--max-choices", int, "most choices (n) in one Chat Completions request, each a model call (default 8)"),
    ("--turn-wait", float, "seconds a turn waits for its busy session before it gives up (default 60)"),
)


def _aliases(pairs: list[str] | None) -> dict[str, str] | None:
    """``--model-alias NAME=PROVIDER/MODEL`` flags as a mapping (None when none was given)."""
    if not pairs:
        return None
    aliases = {}
    for pair in pairs:
        name, sep, target = pair.partition("=")
        if not sep or not name.strip() or not target.strip():
            raise ConfigError(f"--model-alias wants NAME=PROVIDER/MODEL, got {pair!r}", key="model_aliases")
        aliases[name.strip()] = target.strip()
    return aliases


def _serve(args: argparse.Namespace) -> int:
    """``agent-core serve``: needs the ``server`` extra (Starlette + uvicorn)."""
    import os

    try:
        from ..server import ServeSettings, run_server
    except ImportError as exc:
        raise ConfigError(f"agent-core serve needs the server extra: pip install 'agent-core[server]' ({exc})")
    config = layered_config(args, default_provider=None)
    token = args.token or os.environ.get("AGENT_CORE_TOKEN") or None
    settings = ServeSettings.from_mapping(
        serve_table(args),
        allow_config=tuple(args.allow_config) if args.allow_config else None,
        models=tuple(m.strip() for m in args.models.split(",") if m.strip()) if args.models else None,
        allowed_hosts=tuple(args.allowed_host) if args.allowed_host else None,
        cors_origins=tuple(args.cors_origin) if args.cors_origin else None,
        tokens_file=args.tokens_file,
        default_provider=args.default_provider,
        model_aliases=_aliases(args.model_alias),
        insecure=args.insecure,
        max_body_bytes=args.max_body_bytes, max_json_depth=args.max_json_depth, max_messages=args.max_messages,
        header_timeout_s=args.header_timeout, body_timeout_s=args.body_timeout, max_concurrent=args.max_concurrent,
        max_choices=args.max_choices, turn_wait_s=args.turn_wait,
    )
    run_server(host=args.host, port=args.port, token=token, store_url=args.store, config=config, grace=args.grace,
               settings=settings)
    return 0
