"""``agent-core paths``: where the config file, the default session store and the logs are; a starter config.

A newcomer's first question after "it runs" is where things went; this answers it
without opening anything (the store is not created by asking where it would be).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from ..errors import ConfigError
from .settings import FILE_ENV, default_config_path

__all__ = ["STARTER", "add_paths"]

#: What ``agent-core paths --init`` writes: every line a comment, so the file changes nothing until edited.
STARTER = """\
# agent-core's default config file: read by run, chat, plugins, models and serve when no
# --config FILE and no $AGENT_CORE_CONFIG names another. Flags and -c KEY=VALUE win over it.
# `agent-core plugins` lists the keys the installed plugins read.

# provider = "openai"                          # the offline "echo" answers when none is set
# model = "llama3.2"
# base_url = "http://127.0.0.1:11434/v1"       # Ollama; llama.cpp's llama-server: http://127.0.0.1:8080/v1
# enabled_plugins = ["file_mentions"]          # @path mentions in chat, with Tab completion

# [serve]                                      # agent-core serve's own settings
# models = ["openai/*"]
"""


def _store_location() -> str:
    from ..store.location import default_home

    return f"sqlite:///{default_home() / 'sessions.db'}"


def _config_location() -> tuple[Path, str]:
    """(the config file commands read, why that one)."""
    named = os.environ.get(FILE_ENV)
    if named:
        return Path(named), f"${FILE_ENV}"
    return default_config_path(), "default"


def _paths(args: argparse.Namespace) -> int:
    config, why = _config_location()
    if args.init:
        if config.exists():
            raise ConfigError(f"config file {str(config)!r} already exists; edit it, or remove it first")
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(STARTER, encoding="utf-8")
    store = _store_location()
    state = "exists" if config.is_file() else "not there yet: agent-core paths --init writes a commented one"
    if args.json:
        print(json.dumps({"config": str(config), "config_exists": config.is_file(), "store": store,
                          "logs": store}))
        return 0
    print(f"config  {config} ({why}; {state})")
    print(f"store   {store} (the default; --store URL names another)")
    print(f"logs    {store} holds every run and chat (agent-core logs lists them); serve logs to stderr")
    return 0


def add_paths(sub: argparse._SubParsersAction) -> None:
    from . import add_command

    paths = add_command(
        sub, "paths", help="where the config file, the session store and the logs are",
        examples=(("agent-core paths", "the config file, the store, the logs"),
                  ("agent-core paths --init", "write a commented config file there")))
    paths.add_argument("--init", action="store_true", help="write a commented starter config file if there is none")
    paths.add_argument("--json", action="store_true", help="one JSON object")
    paths.set_defaults(func=_paths)
