"""Where a store lives: ``open_store(url)`` and the default file under ``$AGENT_CORE_HOME``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

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


def open_store(url: str | None = None) -> SqlSessionStore:
    """Open (creating or upgrading as needed) a session store.

    Args:
        url: ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``
            (SQLite, WAL mode); ``postgresql://user:pass@host:port/db`` (needs
            the ``postgres`` extra); ``None``: the SQLite file ``sessions.db``
            under :func:`default_home`, created with its directory.

    Raises:
        InvalidArgumentError: a URL of another scheme, or an SQLite URL without a path.
        SchemaVersionError: the database was written by a newer agent-core.
        ConfigError: a PostgreSQL URL without psycopg installed.
        StoreError: the database cannot be opened or reached.
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
        path = Path(url[len("sqlite:///"):]).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        return SqlSessionStore(SqliteBackend(str(path)), url=url)
    if scheme in ("postgresql", "postgres"):
        display = _redacted(url)
        return SqlSessionStore(PostgresBackend(url, display=display), url=display)
    raise InvalidArgumentError(
        f"unknown store URL scheme in {_redacted(url)!r}: use sqlite:///PATH or postgresql://...", argument="url"
    )
