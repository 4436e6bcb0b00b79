"""Where a store lives: ``open_store(url)`` and the default file under ``$AGENT_CORE_HOME``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

from ..errors import InvalidArgumentError
from .backends import PostgresBackend, SqliteBackend
from .sql_store import SqlSessionStore

__all__ = ["default_home", "open_store"]


def default_home() -> Path:
    """``$AGENT_CORE_HOME``, else the platform's per-user data directory plus ``agent-core``."""
    env = os.environ.get("AGENT_CORE_HOME")
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "agent-core"


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:<redacted>@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


#: the SQLite URL's parameters: name -> (default seconds, least, most)
_SQLITE_OPTIONS = {"busy_timeout": (60.0, 0.0, 3600.0), "lease_ttl": (10.0, 0.5, 3600.0)}


def _sqlite_options(query: str, url: str) -> dict[str, float]:
    """``?busy_timeout=S`` (a write waits this long for another writer) and ``?lease_ttl=S`` (a dead holder's session frees this late)."""
    params = parse_qs(query, keep_blank_values=True) if query else {}
    unknown = sorted(set(params) - set(_SQLITE_OPTIONS))
    if unknown:
        raise InvalidArgumentError(f"unknown SQLite store URL parameter {unknown[0]!r} in {url!r} "
                                   f"(known: {', '.join(_SQLITE_OPTIONS)})", argument="url")
    options = {}
    for name, (default, least, most) in _SQLITE_OPTIONS.items():
        if name not in params:
            options[name] = default
            continue
        raw = params[name][-1]
        try:
            seconds = float(raw)
        except ValueError:
            seconds = float("nan")
        if not least <= seconds <= most:
            raise InvalidArgumentError(f"{name} in {url!r} must be seconds from {least:g} to {most:g}, got {raw!r}",
                                       argument="url")
        options[name] = seconds
    return options


def open_store(url: str | None = None) -> SqlSessionStore:
    """Open (creating or upgrading as needed) a session store.

    Args:
        url: ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``
            (SQLite, WAL mode; ``?busy_timeout=SECONDS``, default 60, is how long a
            write waits for another writer, ``?lease_ttl=SECONDS``, default 10, how
            soon a dead turn holder's session frees itself); ``postgresql://user:pass@host:port/db`` (needs
            the ``postgres`` extra); ``None``: the SQLite file ``sessions.db``
            under :func:`default_home`, created with its directory.

    Raises:
        InvalidArgumentError: a URL of another scheme, or an SQLite URL without a path.
        SchemaVersionError: the database was written by a newer agent-core.
        ConfigError: a PostgreSQL URL without psycopg installed.
        StoreUnavailableError: the database is unreachable, busy, read-only or full.
        StoreError: the database cannot be opened for another reason.
    """
    if url is None:
        home = default_home()
        home.mkdir(parents=True, exist_ok=True)
        path = home / "sessions.db"
        return SqlSessionStore(SqliteBackend(str(path)), url=f"sqlite:///{path}")
    if not isinstance(url, str):
        raise InvalidArgumentError(f"url must be a string or None, got {type(url).__name__}", argument="url")
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "sqlite":
        if not url.startswith("sqlite:///") or url in ("sqlite:///", "sqlite:///:memory:"):
            raise InvalidArgumentError(
                f"an SQLite store URL is sqlite:///relative/path.db or sqlite:////absolute/path.db, got {url!r}",
                argument="url",
            )
        rest, _, query = url[len("sqlite:///"):].partition("?")
        path = Path(rest).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        options = _sqlite_options(query, url)
        store = SqlSessionStore(SqliteBackend(str(path), busy_timeout_s=options["busy_timeout"]), url=url)
        store.leases.lease_ttl_s = options["lease_ttl"]
        return store
    if scheme in ("postgresql", "postgres"):
        display = _redacted(url)
        return SqlSessionStore(PostgresBackend(url, display=display), url=display)
    raise InvalidArgumentError(
        f"unknown store URL scheme in {_redacted(url)!r}: use sqlite:///PATH or postgresql://...", argument="url"
    )
