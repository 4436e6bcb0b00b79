"""One turn, two drivers: sync and async turns give the same events, stored revisions and errors.

A turn is written once as a generator of effects (``agent_core.store.turns``)
and driven by the engine's ``drive_sync`` / ``drive_async``. Each scenario is
played in every mode on its own SQLite database, from the same starting
point, and what each mode left behind is compared: the events (streamed
turns), the result (run turns), the error, and every stored revision.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from agent_core import AgentCore, ErrorEvent, Message
from agent_core.errors import ConflictError, LLMError, ProviderRequestCancelled
from agent_core.store import (
    SqlSessionStore,
    TurnRetryEvent,
    arun_turn,
    astream_turn,
    open_store,
    run_turn,
    stream_turn,
)
from agent_core_providers.echo import EchoProvider

from .conftest import ECHO, interloping_core

RID = "turn-1"  # streamed turns name their request, so the events of two modes can be compared as they are


def _broken(other: SqlSessionStore) -> AgentCore:
    class Broken(EchoProvider):
        def stream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Iterator[Any]:
            raise LLMError("down", provider="echo")
            yield  # pragma: no cover

        def call_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Any:
            raise LLMError("down", provider="echo")

    return AgentCore(providers=[Broken])


def _cancelling(other: SqlSessionStore) -> AgentCore:
    """A provider that cancels its own request after the first word, as Ctrl-C or a hang-up would."""
    holder: list[AgentCore] = []

    class Cancelling(EchoProvider):
        def stream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Iterator[Any]:
            for i, chunk in enumerate(super().stream_api(native_messages, state, request_id=request_id)):
                if i == 1:
                    holder[0].cancel_request(request_id)  # type: ignore[arg-type]
                yield chunk

        def call_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Any:
            holder[0].cancel_request(request_id)  # type: ignore[arg-type]
            return super().call_api(native_messages, state, request_id=request_id)

    holder.append(AgentCore(providers=[Cancelling]))
    return holder[0]


# scenario -> (the core, given a second store object on the turn's database; retries)
SCENARIOS: dict[str, tuple[Callable[[SqlSessionStore], AgentCore], int]] = {
    "saved at once": (lambda other: AgentCore(providers=[EchoProvider]), 3),
    "a conflict, then saved": (lambda other: interloping_core(other, times=1)[0], 3),
    "gives up after retries": (lambda other: interloping_core(other, times=99)[0], 1),
    "the request fails": (_broken, 3),
    "the request is cancelled": (_cancelling, 3),
}


def _error(exc: BaseException) -> tuple[Any, ...]:
    rid = getattr(exc, "request_id", None)  # made up per request by a run turn
    return (type(exc).__name__, str(exc).replace(rid, "<id>") if rid else str(exc), getattr(exc, "current", None))


def _stored(store: SqlSessionStore) -> list[tuple[int, int, bool, list[Message]]]:
    return [(r.revision, r.first_index, r.replaced, r.messages) for r in store.history("s1")]


async def _collect(events: Any) -> list[Any]:
    return [e async for e in events]


def _play(tmp_path: Path, scenario: str, mode: str, *, keep_partial: bool = True) -> dict[str, Any]:
    """Play ``scenario`` in ``mode`` on a fresh database; what it returned, raised and stored."""
    make_core, retries = SCENARIOS[scenario]
    url = f"sqlite:///{tmp_path}/{mode}.db"
    with open_store(url) as store, open_store(url) as other:
        run_turn(AgentCore(providers=[EchoProvider]), store, "s1", "first", ECHO)
        core = make_core(other)
        played: dict[str, Any] = {"events": None, "result": None, "error": None}
        try:
            if mode == "stream_turn":
                played["events"] = list(stream_turn(core, store, "s1", "mine", ECHO, retries=retries, request_id=RID,
                                                    keep_partial=keep_partial))
            elif mode == "astream_turn":
                turn = astream_turn(core, store, "s1", "mine", ECHO, retries=retries, request_id=RID,
                                    keep_partial=keep_partial)
                played["events"] = asyncio.run(_collect(turn))
            elif mode == "run_turn":
                played["result"] = run_turn(core, store, "s1", "mine", ECHO, retries=retries)
            else:
                played["result"] = asyncio.run(arun_turn(core, store, "s1", "mine", ECHO, retries=retries))
        except Exception as exc:  # noqa: BLE001 - compared between the modes
            played["error"] = _error(exc)
        if played["result"] is not None:  # its request id is made up per request
            result = played["result"]
            played["result"] = msgspec.structs.replace(result, result=msgspec.structs.replace(result.result, request_id=""))
        played["stored"] = _stored(store)
    return played


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_streamed_turns_agree_sync_and_async(tmp_path: Path, scenario: str) -> None:
    sync, async_ = (_play(tmp_path, scenario, mode) for mode in ("stream_turn", "astream_turn"))
    assert sync == async_
    assert sync["events"] is not None or sync["error"] is not None


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_run_turns_agree_sync_and_async(tmp_path: Path, scenario: str) -> None:
    sync, async_ = (_play(tmp_path, scenario, mode) for mode in ("run_turn", "arun_turn"))
    assert sync == async_


def _contents(played: dict[str, Any]) -> list[str]:
    return [m.content for *_, messages in played["stored"] for m in messages]


def test_what_the_scenarios_leave_behind(tmp_path: Path) -> None:
    """The parity above compares like with like; this pins what that is, so two equal wrongs cannot pass."""
    conflict = _play(tmp_path / "c", "a conflict, then saved", "stream_turn")
    kinds = [e.type for e in conflict["events"]]
    assert kinds.count("retry") == 1 and kinds[-1] == "saved" and conflict["events"][-1].revision == 3
    assert isinstance(conflict["events"][kinds.index("retry")], TurnRetryEvent)
    assert _contents(conflict) == ["first", "Echo: first", "rival 1", "r", "mine", "Echo: mine"]

    ran = _play(tmp_path / "r", "a conflict, then saved", "run_turn")
    assert (ran["result"].revision, ran["result"].attempts) == (3, 2)
    assert _contents(ran) == _contents(conflict)

    gave_up = _play(tmp_path / "g", "gives up after retries", "run_turn")
    assert gave_up["error"] == _error(ConflictError("s1", expected=2, current=3))
    assert "mine" not in _contents(gave_up)

    failed = _play(tmp_path / "f", "the request fails", "stream_turn")
    assert isinstance(failed["events"][-2], ErrorEvent) and failed["events"][-1].type == "done"
    assert len(failed["stored"]) == 1  # nothing saved
    assert _play(tmp_path / "f2", "the request fails", "run_turn")["error"][0] == "LLMError"

    # A streamed turn keeps a cancelled request's message and (keep_partial) the words streamed before
    # the cancel, marked stopped; without keep_partial only the message; a run turn raises and saves nothing.
    cancelled = _play(tmp_path / "x", "the request is cancelled", "stream_turn")
    assert cancelled["events"][-2].outcome.reason == "cancelled" and cancelled["events"][-1].revision == 2
    streamed = "".join(e.message.content for e in cancelled["events"] if e.type == "partial")
    assert streamed and "Echo: mine".startswith(streamed) and streamed != "Echo: mine"
    assert _contents(cancelled) == ["first", "Echo: first", "mine", streamed]
    kept = cancelled["stored"][-1][-1][-1]
    assert (kept.role, dict(kept.metadata)) == ("assistant", {"stopped": "cancelled"})
    asked_only = _play(tmp_path / "x1", "the request is cancelled", "stream_turn", keep_partial=False)
    assert _contents(asked_only) == ["first", "Echo: first", "mine"]
    refused = _play(tmp_path / "x2", "the request is cancelled", "run_turn")
    assert refused["error"] == _error(ProviderRequestCancelled("<id>"))
    assert len(refused["stored"]) == 1
