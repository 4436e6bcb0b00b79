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
import os
import stat
import sys
import uuid
from typing import Any

import msgspec

from ..engine.core import AgentCore
from ..errors import InvalidArgumentError
from ..tools.function import function_tool, load_function
from ..values.events import encode_event
from ..values.messages import Message
from ..values.native_history import without_native_history
from .notes import resolve_noted
from .sessions import open_cli_store
from .settings import STORE_HELP, config_sources, layered_config

__all__ = ["add_commands", "make_core", "show_on_stderr"]


def make_core(args: argparse.Namespace, approval: Any = None, provider: str | None = None,
              config: Any = None, keep_going: bool = False) -> AgentCore:
    """The plugins installed by entry point, plus ``--tool`` functions (and ``--record``'s provider).

    A broken installed plugin stops the command, naming its package, unless ``config``'s
    ``disabled_plugins`` names it or ``keep_going`` (``agent-core plugins`` lists it instead).
    """
    tools = [function_tool(load_function(spec)) for spec in getattr(args, "tool", None) or ()]
    providers = []
    if getattr(args, "record", None):  # the provider, writing each raw response body to the file
        from ..testing.replay import recording_provider

        providers.append(recording_provider(provider or args.provider or "echo", args.record))
    disabled = (config or {}).get("disabled_plugins") or ()
    return AgentCore.discover(providers=providers, tools=tools, approval=approval,
                              disabled=[d for d in disabled if isinstance(d, str)], keep_going=keep_going)


def _piped_stdin() -> str | None:
    """What was piped or redirected into stdin; None for a terminal (or no usable stdin).

    Only a pipe or a file is read: a terminal would wait for typing, and a socket or a
    stdin nobody closes (some job runners) would wait forever.
    """
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # replaced (pytest), closed, or io.UnsupportedOperation
        return None
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return None
    if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        return None
    return sys.stdin.read()


def prompt_of(args: argparse.Namespace) -> str:
    """The prompt: the argument, stdin for ``-``, or piped input followed by the argument (as ``llm`` does)."""
    if args.prompt == "-":
        text = sys.stdin.read()
    else:
        piped = _piped_stdin()
        parts = [p for p in (piped.strip() if piped else "", args.prompt or "") if p]
        text = "\n\n".join(parts)
    if not text.strip():
        raise InvalidArgumentError("no prompt: give one as an argument, or pipe it in (echo hi | agent-core run)",
                                   argument="prompt")
    return text


def _run(args: argparse.Namespace) -> int:
    config = layered_config(args)
    core = make_core(args, provider=config["provider"], config=config)
    resolve_noted(core, config, config_sources(args))  # a config that cannot work fails here, before the prompt
    prompt = prompt_of(args)
    if args.system and (args.cont or args.session):
        raise InvalidArgumentError("--system starts a new conversation; it cannot go with --continue or --session",
                                   argument="system")
    store = None if args.no_log and not (args.cont or args.session) else open_cli_store(args.store)
    try:
        if args.cont or args.session:
            session_id = args.session or _latest(store)
            session = store.get(session_id).session  # SessionNotFoundError names the id
        else:
            session_id = uuid.uuid4().hex[:12]
            session = core.create_session(session_id)
            if args.system:
                session = core.add_message(session, Message("system", args.system))
                if not args.no_log:
                    store.create(session)
        if args.no_log:
            events = core.stream_request(core.add_message(session, Message("user", prompt)), config)
        else:
            from ..store import stream_turn

            events = stream_turn(core, store, session_id, prompt, config)
        return _print_run(events, args.json)
    finally:
        if store is not None:
            store.close()


def _latest(store: Any) -> str:
    """The id of the session saved last (``--continue``)."""
    from .sessions import recent

    latest = recent(store, 1)
    if not latest:
        raise InvalidArgumentError("--continue: no earlier run is stored yet", argument="continue")
    return str(latest[0].session_id)


def _print_run(events: Any, as_json: bool) -> int:
    """Stream a request's events: the reply's text to stdout, notes and tool activity to stderr."""
    out, err = sys.stdout, sys.stderr
    streamed = False  # text of the current answer is already on stdout
    failed = False  # an error event was printed: the done event adds nothing to it
    asked_wrong = False  # that error says the request could not run as given (the config, an argument)
    for event in events:
        t = event.type
        if as_json:
            if t == "done":  # the engine's native record stays in the store, out of what people read
                event = msgspec.structs.replace(event, session=without_native_history(event.session))
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
        elif t == "retract":  # stdout cannot be taken back: end the broken line, say why on stderr
            if streamed:
                out.write("\n")
                streamed = False
            show_on_stderr(event, err)
        else:
            show_on_stderr(event, err)
        if t == "error":
            failed = True
            asked_wrong = asked_wrong or _asked_wrong(event.error.type)
        if t == "done" and not event.outcome.ok:
            if not failed and not as_json:
                err.write(f"stopped: {event.outcome.reason}: {event.outcome.detail}\n")
            return 2 if asked_wrong else 1
    return 0


def _asked_wrong(error_type: str) -> bool:
    """Whether an ``error`` event's class says the request could not run as given (exit code 2, not 1)."""
    from .. import errors

    cls = getattr(errors, error_type, None)
    return isinstance(cls, type) and issubclass(cls, (errors.ConfigError, errors.InvalidArgumentError,
                                                      errors.InvalidValueError, errors.ActionInputError))


def show_on_stderr(event: Any, err: Any) -> None:
    """Tool activity and errors, one line each."""
    t = event.type
    if t == "tool_call":
        err.write(f"[tool] {event.tool_name}({json.dumps(event.payload)}) {event.preview}".rstrip() + "\n")
    elif t == "tool_result":
        content = event.message.content
        err.write(f"[tool] {event.tool_name} -> {content if isinstance(content, str) else json.dumps(content)}\n")
    elif t == "retract":
        why = f" ({event.error.message})" if event.error is not None else ""
        err.write(f"[retry] the answer broke off{why}; the next answer replaces it\n")
    elif t == "retrying":
        err.write(retrying_line(event) + "\n")
    elif t == "error":
        where = f" ({event.error.plugin}.{event.error.hook})" if event.error.plugin and event.error.hook else ""
        err.write(f"error{where}: {event.error.message}\n")


def retrying_line(event: Any) -> str:
    """``rate limited by openai; retrying in 3 s (attempt 2 of 3)``: why the terminal is quiet for a while."""
    error = event.error
    who = (error.plugin if error is not None else None) or "the provider"
    if error is not None and error.type == "RateLimitError":
        why = f"rate limited by {who}"
    elif error is not None:
        why = f"{who} failed ({error.message})"
    else:
        why = f"{who} failed"
    wait = event.delay_s
    when = "now" if not wait else f"in {wait:g} s" if wait >= 1 else f"in {wait * 1000:.0f} ms"
    of = f" of {event.attempts}" if event.attempts else ""
    return f"[retry] {why}; retrying {when} (attempt {event.attempt}{of})"


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
    config = layered_config(args)
    core = make_core(args, config=config, keep_going=True)
    res = resolve_noted(core, config, config_sources(args))
    declared: dict[str, list[tuple[str, Any]]] = {}
    for entry in core.get_config_schema():
        declared.setdefault(entry["plugin"], []).append((entry["key"], entry.get("default")))
    for kind in ("provider", "extension", "feature", "tool"):
        for name in core.plugins(kind):
            reason = res.reasons.get(name)
            settings = _settings(declared.get(name, []), res.config) if reason else ""
            if reason and reason.startswith("off: is_enabled returned False") and declared.get(name):
                keys = ", ".join(key for key, _ in declared[name])
                reason = f"off: it switched itself off for these settings ({keys}: -c KEY=VALUE sets them)"
            mine = " (yours, in place of the installed one)" if name in core.replaced(kind) else ""
            print(f"{kind:9} {name:22} {reason or 'off: not the selected provider'}{settings}{mine}")
    broken = core.broken()
    for name, why in broken.items():  # left out: the listing still runs, and says what to fix
        print(f"{'broken':9} {name:22} off: {why}")
    return 1 if any(name not in (config.get("disabled_plugins") or ()) for name in broken) else 0


def add_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """``run`` and ``plugins`` (``serve`` is :mod:`agent_core.cli.serve`)."""
    from . import add_command

    run = add_command(
        sub, "run", parents=[common], help="send one prompt and stream the reply",
        description="Send one prompt and stream the reply to stdout. The exchange is kept in the session "
                    "store (--no-log to skip), so --continue can go on from it.",
        examples=(
            ('agent-core run "Hello, agent"', "offline, the echo provider"),
            ('echo "a question" | agent-core run', "the prompt from stdin"),
            ('git diff | agent-core run "review this"', "piped text, then the argument"),
            ('agent-core run --continue "and then?"', "go on from the last run"),
            ('agent-core run --no-log "not kept"', "leave the store alone"),
            ('agent-core run --provider openai --model gpt-4o-mini "Hi"', "needs OPENAI_API_KEY"),
        ))
    run.add_argument("prompt", nargs="?", help="the prompt; '-' reads it from stdin, and piped input comes "
                                                "before it when both are given")
    run.add_argument("--system", help="a system message to send first (a new conversation only)")
    run.add_argument("--no-stream", action="store_true", help="ask for the whole reply at once")
    run.add_argument("--max-iterations", type=int, metavar="N",
                     help="most model calls in one request, tool rounds included (default 10)")
    run.add_argument("--json", action="store_true", help="print every event as a JSON line")
    run.add_argument("--no-log", action="store_true", help="do not keep this exchange in the session store")
    run.add_argument("--continue", dest="cont", action="store_true",
                     help="go on from the conversation saved last (-c is --config)")
    run.add_argument("--session", metavar="ID", help="go on from the stored session with this id")
    run.add_argument("--store", metavar="URL", help=STORE_HELP)
    run.add_argument(
        "--record", metavar="FILE",
        help="write the raw response body to FILE, for agent_core.testing.replay_provider (any provider with "
             "using(client=...): the bundled HTTP ones and yours)",
    )
    run.set_defaults(func=_run)
    plugins = add_command(
        sub, "plugins", parents=[common], help="list installed plugins and whether they run",
        examples=(("agent-core plugins", "for the default config (echo)"),
                  ("agent-core plugins --provider anthropic -c thinking_budget=2048", "what that config runs")))
    plugins.set_defaults(func=_plugins)
