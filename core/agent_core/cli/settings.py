"""Where the CLI's request config comes from: a TOML file, the environment, then flags.

Each layer overrides the one before it, key by key:

1. a TOML file: ``--config FILE`` (an argument without ``=``), or the file
   named by ``$AGENT_CORE_CONFIG`` when no file is given on the command line,
   else the default file :func:`default_config_path` when it exists; its
   top-level keys are config keys, tables are values (``[prices."m"]``);
2. the environment: ``$AGENT_CORE_PROVIDER``, ``$AGENT_CORE_MODEL``,
   ``$AGENT_CORE_BASE_URL`` (API keys come from each provider's own
   variable, such as ``OPENAI_API_KEY``, never from a file you might commit);
3. flags: ``--provider``, ``--model``, ... and ``-c KEY=VALUE`` (JSON values).

Without any of them the provider is ``echo``, so every command works offline.
A file that is missing or is not TOML is a :class:`ConfigError` naming the
file (and the line, for a syntax error).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .notes import warn

__all__ = ["ENV_KEYS", "FILE_ENV", "SERVE_TABLE", "STORE_HELP", "config_files", "default_config_path", "config_sources", "layered_config", "parse_pairs", "read_toml",
           "serve_table"]

#: every command's ``--store`` help: where the sessions live when no URL is given
STORE_HELP = ("session store URL (default: sessions.db in $AGENT_CORE_HOME, or when that is unset in the user data "
              "directory: ~/.local/share/agent-core on Linux, ~/Library/Application Support/agent-core on macOS)")

#: The table of a config file that holds ``agent-core serve``'s own settings, not request config.
SERVE_TABLE = "serve"

#: environment variable -> config key
ENV_KEYS = (("AGENT_CORE_PROVIDER", "provider"), ("AGENT_CORE_MODEL", "model"), ("AGENT_CORE_BASE_URL", "base_url"))
#: the variable naming a TOML config file
FILE_ENV = "AGENT_CORE_CONFIG"

# (flag attribute, config key) for the options that are config keys
_FLAG_KEYS = (
    ("provider", "provider"),
    ("model", "model"),
    ("base_url", "base_url"),
    ("api_key", "api_key"),
    ("max_tokens", "max_tokens"),
    ("temperature", "temperature"),
    ("seed", "seed"),
    ("max_iterations", "max_iterations"),
)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def read_toml(path: str) -> dict[str, Any]:
    """The config keys in a TOML file.

    Raises:
        ConfigError: the file cannot be read or is not valid TOML (names the file).
    """
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file {path!r} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path!r} is a directory") from None
    except OSError as exc:
        raise ConfigError(f"config file {path!r} cannot be read ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path!r} is not valid TOML: {exc}") from None


def parse_pairs(items: list[str]) -> tuple[list[str], dict[str, Any]]:
    """``--config`` arguments split into TOML file paths and ``KEY=VALUE`` pairs."""
    files, pairs = [], {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            files.append(item)
        elif not key:
            raise ConfigError(f"-c expects KEY=VALUE or a TOML file, got {item!r}")
        else:
            pairs[key] = _value(raw)
    return files, pairs


def default_config_path() -> Path:
    """The config file read when none is named: ``config.toml`` in the per-user config directory.

    That directory is ``$AGENT_CORE_HOME`` when it is set (one variable moves everything
    agent-core keeps, as tests and throwaway setups want), else the platform's: the XDG
    rule on Linux (``$XDG_CONFIG_HOME``, else ``~/.config``), ``~/Library/Application
    Support`` on macOS, ``%APPDATA%`` on Windows, each with ``agent-core`` added.
    """
    home = os.environ.get("AGENT_CORE_HOME")
    if home:
        return Path(home).expanduser() / "config.toml"
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME", "")
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".config"  # the rule ignores a relative one
    return base / "agent-core" / "config.toml"


def config_files(args: argparse.Namespace) -> tuple[list[str], dict[str, Any]]:
    """The TOML files named (else ``$AGENT_CORE_CONFIG``, else the default file if present) and the ``KEY=VALUE`` pairs."""
    files, pairs = parse_pairs(list(getattr(args, "config", None) or ()))
    if not files and os.environ.get(FILE_ENV):
        files = [os.environ[FILE_ENV]]
    if not files and (default := default_config_path()).is_file():
        files = [str(default)]
    return files, pairs


def serve_table(args: argparse.Namespace) -> dict[str, Any]:
    """The ``[serve]`` tables of the config files, merged (later files win)."""
    merged: dict[str, Any] = {}
    for path in config_files(args)[0]:
        table = read_toml(path).get(SERVE_TABLE, {})
        if not isinstance(table, dict):
            raise ConfigError(f"config file {path!r}: {SERVE_TABLE!r} must be a table ([serve])")
        merged.update(table)
    return merged


def config_sources(args: argparse.Namespace) -> dict[str, str]:
    """Where each config key's value came from, the last layer winning: for an error or warning about that key.

    Only asked when there is something to say, so the layers are read again rather than
    tracked on the way in.
    """
    files, pairs = config_files(args)
    sources: dict[str, str] = {}
    for path in files:
        sources.update((key, f"config file {path}") for key in read_toml(path) if key != SERVE_TABLE)
    sources.update((key, f"${env}") for env, key in ENV_KEYS if os.environ.get(env))
    sources.update((key, f"--{flag.replace('_', '-')}") for flag, key in _FLAG_KEYS
                   if getattr(args, flag, None) is not None)
    sources.update((key, "-c") for key in pairs)
    return sources


def layered_config(args: argparse.Namespace, *, default_provider: str | None = "echo") -> dict[str, Any]:
    """The request config: file, then environment, then flags (see the module docstring)."""
    files, pairs = config_files(args)
    config: dict[str, Any] = {}
    for path in files:
        config.update({k: v for k, v in read_toml(path).items() if k != SERVE_TABLE})
    for env, key in ENV_KEYS:
        if os.environ.get(env):
            config[key] = os.environ[env]
    for flag, key in _FLAG_KEYS:
        value = getattr(args, flag, None)
        if value is not None:
            config[key] = value
    config.update(pairs)
    if getattr(args, "no_stream", False):
        config["stream"] = False
    if default_provider is not None and "provider" not in config:
        if config.get("model") and default_provider == "echo":  # the model would be silently ignored
            warn(f"model {config['model']!r} is set but no provider is, so the offline echo provider answers and "
                 "ignores it; name one with --provider (agent-core plugins lists them)",
                 config_sources(args).get("model"))
        config["provider"] = default_provider
    return config
