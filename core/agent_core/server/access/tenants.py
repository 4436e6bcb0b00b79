"""Who is asking: bearer tokens, the tenant each one names, and a store seen through a tenant's eyes.

Theory of operation. Every request is answered for one :class:`Tenant`. With no
token configured the server is open and everyone is the *default* tenant
(name ``""``); ``--token`` makes that tenant's token required; a tokens file
names further tenants, each with its own tokens and, optionally, its own
allowed models and config keys.

Isolation is by construction rather than by checks sprinkled over routes: a
named tenant's session ``chat-1`` is stored as ``alice/chat-1`` and its request
``r1`` runs in the engine as ``alice/r1``. Ids a client sends can never hold a
``/`` (:data:`ID_PATTERN`), so no id of one tenant can be spelled by another:
another tenant's session is simply not there (404). The default tenant's ids
are stored as they are, so ``agent-core chat --session work`` and the server
see the same sessions.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import tomllib
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from ... import ConfigPolicy, Session
from ...errors import (
    ConfigError,
    ConflictError,
    SessionNotFoundError,
    StoreError,
    StoreUnavailableError,
)
from ...store import Revision, SessionInfo, Stored

__all__ = ["ID_PATTERN", "TENANT_PATTERN", "Tenant", "TenantStore", "TokenTable", "load_tokens_file"]

#: What a session id or request id sent by a client must look like: 1 to 128 characters of
#: letters, digits, ``_``, ``-``, ``.`` and ``:``, not starting with ``.`` or ``:``. No slash, no
#: space, nothing a URL path would need to escape, so every id is reachable by its route.
ID_PATTERN = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.:-]{0,127}")
#: A tenant's name: 1 to 64 letters, digits, ``_`` and ``-``.
TENANT_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")


class Tenant(msgspec.Struct, frozen=True):
    """One party the server answers for: its name (``""`` for the default tenant) and its config policy."""

    name: str
    policy: ConfigPolicy
    limits: Any = None  # an agent_core.store.Limits from the tokens file (see agent_core.server.metering.limits), or None

    def scope(self, client_id: str) -> str:
        """The id the store and the engine use for this tenant's ``client_id``."""
        return f"{self.name}/{client_id}" if self.name else client_id

    def unscope(self, stored_id: str) -> str:
        return stored_id[len(self.name) + 1:] if self.name else stored_id


class _Entry(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    token: str | None = None
    token_sha256: str | None = None
    models: list[str] | None = None
    allow_config: list[str] | None = None
    limits: dict[str, Any] | None = None  # checked by agent_core.store.parse_limits


class _TokensFile(msgspec.Struct, forbid_unknown_fields=True):
    tenants: list[_Entry] = msgspec.field(default_factory=list)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class TokenTable:
    """Tokens and the tenants they open; a lookup compares with every entry in constant time.

    Only SHA-256 digests are kept, so the table holds no token; ``find`` hashes the
    token it is given and compares it with every digest (``hmac.compare_digest``)
    without stopping at the first match, so the time taken says nothing about
    which entry (if any) matched.
    """

    def __init__(self, entries: Iterable[tuple[bytes, Tenant]]) -> None:
        self._entries = tuple(entries)
        if not self._entries:
            raise ConfigError("a token table needs at least one token")

    @classmethod
    def single(cls, token: str, tenant: Tenant) -> TokenTable:
        if not token:
            raise ConfigError("the server's token must not be empty")
        return cls([(_digest(token), tenant)])

    def find(self, token: str) -> Tenant | None:
        given = _digest(token)
        found = None
        for digest, tenant in self._entries:
            if hmac.compare_digest(given, digest) and found is None:
                found = tenant
        return found

    def __len__(self) -> int:
        return len(self._entries)

    def tenants(self) -> list[str]:
        return sorted({t.name for _, t in self._entries})

    def limited(self) -> bool:
        """Whether any tenant has limits (:mod:`agent_core.server.metering.limits`)."""
        return any(t.limits is not None for _, t in self._entries)


def load_tokens_file(path: str, base: ConfigPolicy) -> list[tuple[bytes, Tenant]]:
    """The entries of a tokens file (TOML: one ``[[tenants]]`` table per token).

    Each entry has ``name`` (the tenant) and ``token`` or ``token_sha256`` (the hex SHA-256
    of the token, so the file need not hold the token itself); ``models`` and
    ``allow_config``, when given, replace the server's for that tenant (``allow_config`` is
    added to the default client keys, as ``--allow-config`` is).

    Raises:
        ConfigError: the file cannot be read, is not TOML, or an entry is wrong (names it).
    """
    try:
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"tokens file {path!r} cannot be read ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"tokens file {path!r} is not valid TOML: {exc}") from None
    try:
        parsed = msgspec.convert(raw, _TokensFile)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"tokens file {path!r}: {exc}") from None
    if not parsed.tenants:
        raise ConfigError(f"tokens file {path!r} lists no [[tenants]]")
    out = []
    for i, entry in enumerate(parsed.tenants):
        where = f"tokens file {path!r}, tenants[{i}]"
        if not TENANT_PATTERN.fullmatch(entry.name):
            raise ConfigError(f"{where}: name must be 1 to 64 letters, digits, '_' or '-', got {entry.name!r}")
        if (entry.token is None) == (entry.token_sha256 is None):
            raise ConfigError(f"{where} ({entry.name}): give exactly one of token and token_sha256")
        if entry.token is not None:
            if len(entry.token) < 16:
                raise ConfigError(f"{where} ({entry.name}): a token must be at least 16 characters long")
            digest = _digest(entry.token)
        else:
            try:
                digest = bytes.fromhex(entry.token_sha256 or "")
            except ValueError:
                digest = b""
            if len(digest) != 32:
                raise ConfigError(f"{where} ({entry.name}): token_sha256 must be 64 hex digits")
        limits = None
        if entry.limits is not None:
            from ...store import parse_limits

            limits = parse_limits(entry.limits, f"{where} ({entry.name})")
        out.append((digest, Tenant(entry.name, tenant_policy(base, entry.models, entry.allow_config), limits)))
    return out


def tenant_policy(base: ConfigPolicy, models: Sequence[str] | None, allow: Sequence[str] | None) -> ConfigPolicy:
    policy = base
    if models is not None:
        policy = msgspec.structs.replace(policy, models=tuple(models))
    if allow is not None:
        from ...host_kit import DEFAULT_CLIENT_KEYS

        policy = msgspec.structs.replace(policy, allow=DEFAULT_CLIENT_KEYS | frozenset(allow))
    return policy


class TenantStore:
    """A session store as one tenant sees it: its own sessions, under the ids it gave them.

    Wraps the server's store; ids are scoped on the way in and unscoped on the way out,
    and errors that name a session name the tenant's id. Only the async methods the
    server uses are offered.
    """

    def __init__(self, store: Any, tenant: Tenant) -> None:
        self._store = store
        self._tenant = tenant

    def _in(self, session: Session) -> Session:
        if not self._tenant.name:
            return session
        return Session(self._tenant.scope(session.session_id), session.messages, session.metadata)

    def _out(self, stored: Stored, client_id: str) -> Stored:
        if not self._tenant.name:
            return stored
        s = stored.session
        return Stored(Session(client_id, s.messages, s.metadata), stored.revision)

    def _error(self, exc: StoreError, client_id: str) -> StoreError:
        if not self._tenant.name:
            return exc
        if isinstance(exc, SessionNotFoundError):
            return SessionNotFoundError(client_id)
        if isinstance(exc, ConflictError):
            return ConflictError(client_id, expected=exc.expected, current=exc.current)
        if isinstance(exc, StoreUnavailableError):  # the kind and the wait stay: a client retries on them
            return StoreUnavailableError(f"the session store is unavailable ({exc.reason}) for session {client_id!r}",
                                         reason=exc.reason, retry_after=exc.retry_after, session_id=client_id)
        return StoreError(f"the session store failed on session {client_id!r} ({type(exc).__name__})",
                          session_id=client_id)

    async def acreate(self, session: Session) -> int:
        try:
            return int(await self._store.acreate(self._in(session)))
        except StoreError as exc:
            raise self._error(exc, session.session_id) from None

    async def aget(self, session_id: str) -> Stored:
        try:
            return self._out(await self._store.aget(self._tenant.scope(session_id)), session_id)
        except StoreError as exc:
            raise self._error(exc, session_id) from None

    async def aput(self, session: Session, *, expected_revision: int) -> int:
        try:
            return int(await self._store.aput(self._in(session), expected_revision=expected_revision))
        except StoreError as exc:
            raise self._error(exc, session.session_id) from None

    async def adelete(self, session_id: str, *, expected_revision: int | None = None) -> None:
        try:
            await self._store.adelete(self._tenant.scope(session_id), expected_revision=expected_revision)
        except StoreError as exc:
            raise self._error(exc, session_id) from None

    async def ahistory(self, session_id: str) -> list[Revision]:
        try:
            return list(await self._store.ahistory(self._tenant.scope(session_id)))
        except StoreError as exc:
            raise self._error(exc, session_id) from None

    async def alist(self, *, limit: int = 100, after: str | None = None) -> list[SessionInfo]:
        """The tenant's sessions by id; the default tenant's exclude every named tenant's (``x/...``)."""
        name = self._tenant.name
        if name:
            prefix = f"{name}/"
            rows = await self._store.alist(limit=limit, after=prefix + (after or ""), prefix=prefix)
            return [msgspec.structs.replace(r, session_id=r.session_id[len(prefix):]) for r in rows]
        out: list[SessionInfo] = []
        cursor = after
        while len(out) < limit:  # skip named tenants' rows, a page at a time
            rows = await self._store.alist(limit=limit, after=cursor)
            out.extend(r for r in rows if "/" not in r.session_id)
            if len(rows) < limit:
                break
            cursor = rows[-1].session_id
        return out[:limit]
