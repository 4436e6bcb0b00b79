"""``agent-core``: run a prompt through the pipeline from a terminal.

    agent-core run "Hello there"                       # offline, echo provider
    agent-core run --provider openai --model M --base-url http://127.0.0.1:8080/v1 "Hi"
    agent-core plugins                                 # what is installed, and what runs

Plugins come from entry points (:meth:`AgentCore.discover`), the same path a
third-party plugin takes. Text streams to stdout; tool activity and errors go
to stderr so stdout stays the reply.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from .engine import AgentCore
from .errors import ConfigError, LLMError, PluginError, ProviderRequestCancelled
from .events import encode_event
from .types import Message

__all__ = ["main"]


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _config(args: argparse.Namespace) -> dict[str, Any]:
    config: dict[str, Any] = {"provider": args.provider}
    for flag, key in (("model", "model"), ("base_url", "base_url"), ("api_key", "api_key")):
        value = getattr(args, flag, None)
        if value is not None:
            config[key] = value
    for item in args.config or ():
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"-c expects KEY=VALUE, got {item!r}")
        config[key] = _value(raw)
    if args.no_stream:
        config["stream"] = False
    if args.max_iterations is not None:
        config["max_iterations"] = args.max_iterations
    return config


def _run(args: argparse.Namespace) -> int:
    core = AgentCore.discover()
    config = _config(args)
    session = core.create_session()
    if args.system:
        session = core.add_message(session, Message("system", args.system))
    session = core.add_message(session, Message("user", args.prompt))
    out, err = sys.stdout, sys.stderr
    streamed = False
    for event in core.stream_request(session, config):
        if args.json:
            out.write(encode_event(event).decode() + "\n")
            out.flush()
            continue
        t = event.type
        if t == "partial" and isinstance(event.message.content, str):
            out.write(event.message.content)
            out.flush()
            streamed = True
        elif t == "final" and event.message.role == "assistant":
            if not streamed and isinstance(event.message.content, str):
                out.write(event.message.content)
            if event.message.content or streamed:
                out.write("\n")
            streamed = False
        elif t == "tool_call":
            err.write(f"[tool] {event.tool_name}({json.dumps(event.payload)}) {event.preview}\n".rstrip() + "\n")
        elif t == "tool_result":
            content = event.message.content
            err.write(f"[tool] {event.tool_name} -> {content if isinstance(content, str) else json.dumps(content)}\n")
        elif t == "error":
            where = f" ({event.error.plugin}.{event.error.hook})" if event.error.plugin and event.error.hook else ""
            err.write(f"error{where}: {event.error.message}\n")
        elif t == "done":
            if not event.outcome.ok:
                if event.outcome.reason != "provider_error" and event.outcome.reason != "plugin_error":
                    err.write(f"stopped: {event.outcome.reason}: {event.outcome.detail}\n")
                return 1
    return 0


def _plugins(args: argparse.Namespace) -> int:
    core = AgentCore.discover()
    res = core.resolve({"provider": args.provider})
    for kind in ("provider", "extension", "feature", "tool"):
        for name in core.plugins(kind):
            print(f"{kind:9} {name:22} {res.reasons.get(name, 'not selected')}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-core", description="Run prompts through the agent-core pipeline.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="send one prompt and stream the reply")
    run.add_argument("prompt")
    run.add_argument("--provider", default="echo", help="provider plugin name (default: echo, offline)")
    run.add_argument("--model")
    run.add_argument("--base-url", dest="base_url")
    run.add_argument("--api-key", dest="api_key", help="prefer the provider's environment variable")
    run.add_argument("--system", help="a system message to send first")
    run.add_argument("-c", "--config", action="append", metavar="KEY=VALUE", help="any config key (JSON values)")
    run.add_argument("--no-stream", action="store_true", help="ask for the whole reply at once")
    run.add_argument("--max-iterations", type=int)
    run.add_argument("--json", action="store_true", help="print every event as a JSON line")
    run.set_defaults(func=_run)
    plugins = sub.add_parser("plugins", help="list installed plugins and whether they run")
    plugins.add_argument("--provider", default="echo")
    plugins.set_defaults(func=_plugins)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (ConfigError, PluginError, LLMError, ProviderRequestCancelled) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `agent-core run --json ... | head`
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
