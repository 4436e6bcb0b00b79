"""``agent-core serve``: the pipeline over HTTP (needs the ``server`` extra: Starlette and uvicorn)."""

from __future__ import annotations

import argparse
import logging
import os

from ..errors import ConfigError, install_hint
from .notes import SourcedConfigNotes
from .settings import STORE_HELP, config_sources, layered_config, serve_table

__all__ = ["add_serve"]


def add_serve(sub: argparse._SubParsersAction) -> None:
    """The ``serve`` command and its flags."""
    from . import add_command
    serve = add_command(sub, "serve", help="serve the pipeline over HTTP (OpenAI-compatible + sessions API)",
                        description="Serve the pipeline over HTTP. Safe as it starts: loopback only, no other "
                                    "site's pages, and requests may set only the keys a chat client chooses. "
                                    "See docs/security.md.",
                        examples=(
                            ("agent-core serve", "127.0.0.1:8000, the echo provider by default"),
                            ("agent-core serve -c provider=openai -c model=gpt-4o-mini",
                             "every request through OpenAI (OPENAI_API_KEY)"),
                            ("agent-core serve --host 0.0.0.0 --token \"$TOKEN\"", "beyond loopback: a token"),
                            ("agent-core serve --store postgresql://u@db/agents", "sessions shared by servers"),
                            ("agent-core serve --log-json", "one JSON line per request, for a collector"),
                        ))
    _add_flags(serve)
    _add_scale_flags(serve)
    serve.set_defaults(func=_serve)


def _add_flags(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", default="127.0.0.1",
                       help="the address to listen on (default 127.0.0.1; beyond loopback needs --token or "
                            "--tokens-file, or --insecure)")
    serve.add_argument("--port", type=_port, default=8000, help="the port to listen on (default 8000; 0 picks a free one)")
    serve.add_argument("--token", help="bearer token every route wants (default: $AGENT_CORE_TOKEN)")
    serve.add_argument("--tokens-file", metavar="FILE",
                       help="a TOML file of tenants, each with its tokens (and, optionally, models and config keys)")
    serve.add_argument("--store", metavar="URL", help=STORE_HELP)
    serve.add_argument("--grace", type=float, default=30.0, metavar="SECONDS",
                       help="on SIGTERM, how long running requests may finish before they are cancelled (default 30)")
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
                       help="the provider of a model name without one (gpt-4o-mini), and of a request that names "
                            "no provider (default: the config's provider; for a request, else echo)")
    serve.add_argument("--model-alias", action="append", metavar="NAME=PROVIDER/MODEL",
                       help="a model name clients may send for provider/model (repeat)")
    serve.add_argument("--allowed-host", action="append", metavar="NAME",
                       help="a Host name to answer besides the loopback names (repeat; '*' for any)")
    serve.add_argument("--cors-origin", action="append", metavar="ORIGIN",
                       help="a web origin whose pages may call the server (repeat; none by default)")
    for flag, dest, action, what in _SWITCHES:
        serve.add_argument(flag, dest=dest, action=action, default=None, help=what)
    serve.add_argument("--quiet", action="store_true",
                       help="print no start banner and no line per request (warnings and errors still); "
                            "one line on stdout still says the address it listens on")
    serve.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info",
                       help="the least severe log lines printed on stderr (default info: the banner and one "
                            "line per request)")
    serve.add_argument("--log-json", action="store_true",
                       help="print one JSON object per line (time, level, event, method, path, status, "
                            "duration_ms, request_id), for a log collector")
    for flag, kind, what in _LIMIT_FLAGS:
        serve.add_argument(flag, type=kind, default=None, metavar="N", help=what)


def _add_scale_flags(serve: argparse.ArgumentParser) -> None:
    """The flags for more than one process: workers, and the operator's token for metrics and usage."""
    serve.add_argument("--workers", type=_workers, default=1, metavar="N|auto",
                       help="serve with N processes on one port, a parent restarting any that dies; 'auto' is one "
                            "per core (default 1). They share sessions, cancels and approvals through the store")
    serve.add_argument("--admin-token", metavar="TOKEN",
                       help="the operator's token: turns metrics on (OpenTelemetry; GET /metrics in the Prometheus "
                            "format, with the metrics extra) and opens GET /metrics and GET /v1/admin/tenants/usage "
                            "to it alone (default: $AGENT_CORE_ADMIN_TOKEN)")


# (flag, setting, action, help) for each on/off setting of ServeSettings; None: not given (the [serve] table decides)
_SWITCHES = (
    ("--insecure", "insecure", "store_true", "allow listening beyond loopback without a token"),
    ("--paid-actions", "paid_actions", "store_true",
     "let session actions ask the model (a paid call, e.g. compact_native_history's summarize mode); off by default"),
    ("--no-facade-server-tools", "facade_server_tools", "store_false",
     "never offer the installed tool plugins on the OpenAI and Anthropic facades (by default the server runs them "
     "when the client declares no tools of its own)"),
)

# (flag, type, help) for each limit of ServeSettings; the defaults live there (and in docs/security.md)
_LIMIT_FLAGS = (
    ("--max-body-bytes", int, "largest request body (default 8 MiB)"),
    ("--max-json-depth", int, "deepest JSON nesting of a body (default 64)"),
    ("--max-messages", int, "most messages one request becomes, tool results counted (default 2000)"),
    ("--max-blocks", int, "most content blocks in one request (default 20000)"),
    ("--max-tool-calls", int, "most tool calls, and tool results, in one request (default 2000)"),
    ("--header-timeout", float, "seconds a client may take to send a request's headers (default 10)"),
    ("--body-timeout", float, "seconds a client may take to send a request's body (default 30)"),
    ("--max-concurrent", int, "requests handled at once by this process; 503 beyond (default 256)"),
    ("--tenant-max-concurrent", int, "requests one tenant may have at once; 429 beyond (default: half of "
                                     "--max-concurrent with several tenants)"),
    ("--max-actions", int, "session actions run at once by this process; 503 beyond (default 4)"),
    ("--tenant-max-actions", int, "session actions one tenant may run at once; 429 beyond (default 2)"),
    ("--max-choices", int, "most choices (n) in one Chat Completions request, each a model call (default 8)"),
    ("--turn-wait", float, "seconds a turn waits for its busy session before it gives up (default 60)"),
)


def _port(text: str) -> int:
    """``--port``: a TCP port number, refused by argparse (a usage line, no traceback) when it is not one."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: ports go from 0 to 65535")
    return port


def _workers(text: str) -> int:
    """``--workers``: a positive number, or ``auto`` for one per core this process may run on."""
    if text.strip().lower() == "auto":
        if hasattr(os, "sched_getaffinity"):  # the cores it is allowed (a container's CPU set), not the machine's
            return max(1, len(os.sched_getaffinity(0)))
        return max(1, os.cpu_count() or 1)
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of workers (or 'auto'): {text!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"--workers must be at least 1 (or 'auto'), got {count}")
    return count


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
    try:
        from ..server import ServeSettings, run_server
        from ..server.http.access_log import LOGGER
    except ImportError as exc:
        raise ConfigError(f"agent-core serve needs the server extra: {install_hint('server')} ({exc})") from None
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
        max_choices=args.max_choices, turn_wait_s=args.turn_wait, max_blocks=args.max_blocks,
        max_tool_calls=args.max_tool_calls, tenant_max_concurrent=args.tenant_max_concurrent,
        max_actions=args.max_actions, tenant_max_actions=args.tenant_max_actions, paid_actions=args.paid_actions,
        facade_server_tools=args.facade_server_tools,
    )
    # the server says its config warnings as it starts; these words name where each key was set
    logging.getLogger(LOGGER).addFilter(SourcedConfigNotes(config_sources(args)))
    run_server(host=args.host, port=args.port, token=token, store_url=args.store, config=config, grace=args.grace,
               settings=settings, log_level=args.log_level, log_json=args.log_json, quiet=args.quiet,
               workers=args.workers,
               admin_token=args.admin_token or os.environ.get("AGENT_CORE_ADMIN_TOKEN") or None)
    return 0
