"""``agent-core``: the pipeline from a terminal.

    agent-core run "Hello there"                       # offline, echo provider
    echo "a question" | agent-core run                 # the prompt from stdin; kept in the store
    agent-core run --continue "and then?"              # go on from the last run (agent-core logs lists them)
    agent-core run --provider openai --model M --base-url http://127.0.0.1:8080/v1 "Hi"
    agent-core run --config agent.toml -c seed=1 "Hi"  # a TOML file, then KEY=VALUE on top
    agent-core chat                                    # a conversation, kept in the session store
    agent-core chat --session 3f2a9c                   # ... resumed later, after a restart
    agent-core sessions list | show ID | export ID | delete ID
    agent-core plugins --provider anthropic -c thinking_budget=2048   # what runs, and why
    agent-core serve --port 8000                       # OpenAI-compatible + sessions API, and the console
    agent-core models                                  # what each provider offers; the default model
    agent-core paths                                   # where the config file, the store and the logs are
    eval "$(agent-core completion bash)"               # Tab completion (bash or zsh)

Where config comes from (a TOML file, the environment, flags) is
:mod:`agent_core.cli.settings`; every warning is one ``warning:`` line naming
where its value was set (:mod:`agent_core.cli.notes`). A user's mistake (a bad flag value, an
unknown session, an unreachable API) ends in one ``error:`` line on stderr,
never a traceback. Exit codes: 0 done; 1 the request ran and failed (the
model's API, a plugin, a stop); 2 what was asked cannot run as given (a flag,
the config, an unknown session); 130 interrupted.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from ..errors import AgentCoreError, ConfigError, UnknownConfigKeyWarning
from .chat import add_chat
from .commands import add_commands
from .completion import add_completion
from .models import add_models
from .notes import show_python_warning
from .paths import add_paths
from .serve import add_serve
from .sessions import add_sessions
from .tenants import add_tenants
from .settings import config_sources

__all__ = ["build_parser", "main"]


def examples_epilog(*pairs: tuple[str, str]) -> str:
    """An ``examples:`` block for a command's help: each command line, then its comment in one column."""
    width = max(len(command) for command, _ in pairs) + 2
    return "examples:\n" + "\n".join(f"  {command.ljust(width)}# {what}" for command, what in pairs)


def add_command(sub: Any, name: str, *, examples: Sequence[tuple[str, str]], **options: Any) -> argparse.ArgumentParser:
    """A subcommand of ``sub`` whose help ends in an ``examples:`` block (:func:`examples_epilog`), kept as laid out.

    ``options`` go to ``add_parser`` as they are (``help``, ``parents``, ``description``).
    """
    return sub.add_parser(name, epilog=examples_epilog(*examples), formatter_class=argparse.RawDescriptionHelpFormatter,
                          **options)


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--provider", help="provider plugin name (default: echo, offline)")
    common.add_argument("--model", help="the model to ask (default: the provider's own; echo needs none)")
    common.add_argument("--base-url", dest="base_url",
                        help="the API's URL, e.g. http://127.0.0.1:8080/v1 (default: the provider's public API)")
    common.add_argument("--api-key", dest="api_key", help="prefer the provider's environment variable")
    common.add_argument("--max-tokens", dest="max_tokens", type=int, help="upper bound on generated tokens")
    common.add_argument("--temperature", type=float, help="sampling temperature (default: the API's)")
    common.add_argument("--seed", type=int, help="sampling seed (providers that declare `seed`)")
    common.add_argument(
        "-c", "--config", action="append", metavar="KEY=VALUE|FILE",
        help="a config key the plugins declare (JSON values: -c seed=1), or a TOML file of them",
    )
    common.add_argument(
        "--tool", action="append", metavar="MODULE:FUNCTION", help="offer a Python function to the model as a tool"
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="agent-core", description="Run prompts through the agent-core pipeline.",
        epilog=examples_epilog(
            ('agent-core run "Hello, agent"', "offline: the echo provider answers"),
            ("echo hi | agent-core run", "the prompt from stdin"),
            ('agent-core run --continue "and then?"', "go on from the last run"),
            ("agent-core logs", "the latest runs and chats"),
            ("agent-core chat", "a conversation in the terminal"),
            ("agent-core plugins", "what runs for a config, and why"),
            ("agent-core serve", "OpenAI-compatible HTTP and the console on 127.0.0.1:8000"),
            ("agent-core models", "what each provider offers"),
            ("agent-core paths", "where the config file and the store are"),
        ) + "\n\n'agent-core COMMAND --help' says more about each.\n\n"
        "exit codes: 0 done; 1 the request failed (the model's API, a plugin, a stop); 2 a mistake in what\n"
        "was asked (a flag, the config, an unknown session); 130 interrupted.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"agent-core {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    common = _common()
    add_commands(sub, common)
    add_serve(sub)
    add_chat(sub, common)
    add_sessions(sub)
    add_tenants(sub)
    add_models(sub, common)
    add_paths(sub)
    add_completion(sub)
    return parser


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)command's own parser: its usage and its flags are the ones a mistyped flag is compared with."""
    while True:
        action = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, action.dest, None) if action is not None else None
        if action is None or name not in action.choices:
            return parser
        parser = action.choices[name]


def _unrecognized(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """The error for arguments no flag of ``parser`` takes, with the flag a mistyped one most likely meant."""
    flags = [flag for action in parser._actions for flag in action.option_strings]
    hints = []
    for extra in extras:
        if extra.startswith("-"):
            close = difflib.get_close_matches(extra.partition("=")[0], flags, n=1, cutoff=0.6)
            if close:
                hints.append(f"{extra.partition('=')[0]}: did you mean {close[0]}?")
    return f"unrecognized arguments: {' '.join(extras)}" + (f" ({'; '.join(hints)})" if hints else "")


def _source_note(exc: AgentCoreError, args: argparse.Namespace) -> str:
    """`` (set by $AGENT_CORE_PROVIDER)``: where the config key an error names got its value, when known."""
    key = getattr(exc, "key", None)
    if not isinstance(exc, ConfigError) or not isinstance(key, str):
        return ""
    try:
        source = config_sources(args).get(key)
    except AgentCoreError:  # the layers themselves are broken: the error already says so
        return ""
    return f" (set by {source})" if source else ""


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:  # said by the command's own parser (its usage), with a did-you-mean; exits 2
        command = _chosen(parser, args)
        command.error(_unrecognized(command, extras))
    try:
        with warnings.catch_warnings():
            # A command says its config warnings once, with their source (.notes.resolve_noted); each
            # request raising them again would repeat them. Any other warning is one line too.
            warnings.simplefilter("ignore", UnknownConfigKeyWarning)
            warnings.showwarning = show_python_warning
            return int(args.func(args))
    except AgentCoreError as exc:
        print(f"error: {exc}{_source_note(exc, args)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `agent-core run --json ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
