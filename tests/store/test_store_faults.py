"""The store when its database fails: a writer that will not let go, a full or read-only disk, a PostgreSQL restart.

Each failure reaches the caller as the store's own :class:`StoreUnavailableError`, never a
``sqlite3`` or ``psycopg`` exception, with a reason an operator can act on; nothing is
half-written, and the store works again once the database does.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from agent_core import Message, Session
from agent_core.errors import StoreError, StoreUnavailableError
from agent_core.store import open_store

from .conftest import _fresh_schema

WORKER = Path(__file__).with_name("_fault_worker.py")


def _turn(session: Session, text: str) -> Session:
    return session.with_message(Message("user", text)).with_message(Message("assistant", f"echo {text}"))


def test_a_writer_that_holds_sqlite_past_the_busy_timeout(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db?busy_timeout=0.2"
    with open_store(url) as store:
        session = Session("s")
        store.create(session)
        mine = _turn(session, "hi")
        blocker = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another process's writer, stuck
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailableError) as caught:
                store.put(mine, expected_revision=1)
            assert 0.15 < time.monotonic() - started < 5
            err = caught.value
            assert (err.reason, err.retry_after) == ("busy", 1.0)
            assert "0.2 s busy timeout" in str(err) and str(tmp_path / "s.db") in str(err)
            assert not isinstance(err.__cause__, sqlite3.Error) and err.__suppress_context__
            assert store.get("s").revision == 1  # readers never wait for a writer (WAL)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert store.put(mine, expected_revision=1) == 2  # the same value, once the writer let go
        assert [m.content for m in store.get("s").session.messages] == ["hi", "echo hi"]


def test_sqlite_url_parameters_are_checked(tmp_path: Path) -> None:
    from agent_core.errors import InvalidArgumentError

    with open_store(f"sqlite:///{tmp_path}/a.db?busy_timeout=1.5&lease_ttl=2") as store:
        assert store.leases.lease_ttl_s == 2.0
    for bad, named in [("busy_timeout=-1", "busy_timeout"), ("lease_ttl=0.1", "lease_ttl"),
                       ("busy_timeout=soon", "busy_timeout"), ("timeout=3", "'timeout'")]:
        with pytest.raises(InvalidArgumentError, match=named):
            open_store(f"sqlite:///{tmp_path}/b.db?{bad}")


def _in_own_mount(kind: str, size: str, tmp_path: Path) -> dict[str, Any]:
    """Run the fault worker in a user and mount namespace of its own, on a tmpfs of ``size``."""
    if shutil.which("unshare") is None:
        pytest.skip("needs util-linux's unshare for a file system of the test's own")
    where = tmp_path / "mnt"
    where.mkdir()
    script = f"mount -t tmpfs -o size={size} tmpfs {where} && exec {sys.executable} {WORKER} {kind} {where}"
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_full_disk(tmp_path: Path) -> None:
    out = _in_own_mount("full", "400k", tmp_path)
    assert (out["error"], out["module"]) == ("StoreUnavailableError", "agent_core.errors.store")
    assert (out["reason"], out["retry_after"]) == ("disk_full", None)
    assert "disk is full" in out["message"]
    assert out["saved_revision"] > 1  # some turns fitted before the disk filled
    # The turn that did not fit left nothing: the session is the last one saved, whole.
    assert out["after"] == {"revision": out["saved_revision"], "messages": out["saved_messages"]}


def test_a_read_only_file_system(tmp_path: Path) -> None:
    out = _in_own_mount("readonly", "4m", tmp_path)
    assert (out["error"], out["reason"], out["retry_after"]) == ("StoreUnavailableError", "read_only", None)
    assert out["after"] == {"error": "StoreUnavailableError", "reason": "read_only"}


def test_a_postgresql_restart(pg_server: Any) -> None:
    """While the server is down every call fails typed; once it is back the store works, without reopening."""
    url = pg_server.url(_fresh_schema(pg_server))
    with open_store(url) as store:
        session = Session("s")
        store.create(session)
        for i in range(4):  # fill the pool with more than one connection
            session = _turn(session, f"t{i}")
            store.put(session, expected_revision=i + 1)
        pg_server.halt()
        try:
            for call in (lambda: store.get("s"), lambda: store.put(_turn(session, "lost"), expected_revision=5)):
                with pytest.raises(StoreUnavailableError) as caught:
                    call()
                assert (caught.value.reason, caught.value.retry_after) == ("unreachable", 1.0)
                assert "psycopg" not in type(caught.value).__module__
        finally:
            pg_server.resume()
        failures = 0
        deadline = time.monotonic() + 20
        while True:  # the pool's idle connections died with the server; at most the first call may meet one
            try:
                revision = store.put(_turn(session, "after"), expected_revision=5)
                break
            except StoreUnavailableError:
                failures += 1
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert revision == 6 and failures <= 1
        got = store.get("s")
        assert got.revision == 6 and len(got.session.messages) == 10  # the lost turn left nothing


def test_an_unreachable_postgresql_on_open(pg_server: Any) -> None:
    port = pg_server.port + 1 if pg_server.port < 65535 else pg_server.port - 1
    with pytest.raises(StoreError) as caught:
        open_store(f"postgresql://postgres:s3cret-pw@127.0.0.1:{port}/postgres")
    assert isinstance(caught.value, StoreUnavailableError) and caught.value.reason == "unreachable"
    assert "s3cret-pw" not in str(caught.value)
