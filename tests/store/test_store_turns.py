"""run_turn and its twins: load, add, request, save; a conflict reruns the turn from the new revision.

Conflicts are made for real: a provider that, while the model "answers",
saves a competing turn through a second store object on the same database,
exactly as another handler process would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from agent_core import AgentCore, DoneEvent, ErrorEvent, Message, StartEvent
from agent_core.errors import ConflictError, InvalidArgumentError, LLMError
from agent_core.store import (
    SqlSessionStore,
    TurnResult,
    TurnRetryEvent,
    TurnSavedEvent,
    arun_turn,
    astream_turn,
    open_store,
    run_turn,
    stream_turn,
)
from agent_core_providers.echo import EchoProvider

from .conftest import ECHO, interloping_core


def _contents(store: SqlSessionStore) -> list[str]:
    return [m.content for m in store.get("s1").session.messages]


def test_run_turn_keeps_a_conversation_across_store_objects(store_url: str, core: AgentCore) -> None:
    for i in range(3):
        with open_store(store_url) as store:  # a new handler each time
            turn = run_turn(core, store, "s1", f"hello {i}", ECHO)
            assert isinstance(turn, TurnResult)
            assert (turn.revision, turn.attempts) == (i + 1, 1)
            assert turn.result.final_messages[-1].content == f"Echo: hello {i}"
    with open_store(store_url) as store:
        assert _contents(store) == ["hello 0", "Echo: hello 0", "hello 1", "Echo: hello 1", "hello 2", "Echo: hello 2"]
        assert store.get("s1").session == turn.session


def test_a_conflict_reruns_the_turn_from_the_new_revision(store: SqlSessionStore, extra_store: Callable[[], SqlSessionStore]) -> None:
    run_turn(AgentCore(providers=[EchoProvider]), store, "s1", "first", ECHO)
    core, calls = interloping_core(extra_store(), times=1)
    turn = run_turn(core, store, "s1", "mine", ECHO)
    assert turn.attempts == 2 and turn.revision == 3  # 2 is the rival's turn, saved while we waited
    assert calls == ["mine", "mine"]  # the conflict cost a second model call
    assert _contents(store) == ["first", "Echo: first", "rival 1", "r", "mine", "Echo: mine"]
    assert [r.revision for r in store.history("s1")] == [1, 2, 3]
    assert turn.revision == store.get("s1").revision


def test_run_turn_gives_up_after_retries_and_saves_nothing_of_its_own(store: SqlSessionStore, extra_store: Callable[[], SqlSessionStore]) -> None:
    run_turn(AgentCore(providers=[EchoProvider]), store, "s1", "first", ECHO)
    core, calls = interloping_core(extra_store(), times=99)
    with pytest.raises(ConflictError) as info:
        run_turn(core, store, "s1", "mine", ECHO, retries=2)
    assert len(calls) == 3
    assert info.value.current == store.get("s1").revision == 4
    assert "mine" not in _contents(store)


def test_a_failed_request_saves_nothing(store: SqlSessionStore) -> None:
    run_turn(AgentCore(providers=[EchoProvider]), store, "s1", "first", ECHO)

    class Broken(EchoProvider):
        def stream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Iterator[Any]:
            raise LLMError("down", provider="echo")
            yield  # pragma: no cover

        def call_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Any:
            raise LLMError("down", provider="echo")

    with pytest.raises(LLMError):
        run_turn(AgentCore(providers=[Broken]), store, "s1", "lost", ECHO)
    assert store.get("s1").revision == 1 and "lost" not in _contents(store)
    events = list(stream_turn(AgentCore(providers=[Broken]), store, "s1", "lost", ECHO))
    assert isinstance(events[-2], ErrorEvent) and isinstance(events[-1], DoneEvent)
    assert not any(isinstance(e, TurnSavedEvent) for e in events)
    assert store.get("s1").revision == 1


def test_arun_turn_is_the_async_twin(
    store: SqlSessionStore, extra_store: Callable[[], SqlSessionStore], core: AgentCore
) -> None:
    async def main() -> None:
        first = await arun_turn(core, store, "s1", "a", ECHO)
        assert (first.revision, first.attempts) == (1, 1)
        rival_core, calls = interloping_core(extra_store(), times=1)
        turn = await arun_turn(rival_core, store, "s1", Message("user", "b"), ECHO)
        assert (turn.revision, turn.attempts, calls) == (3, 2, ["b", "b"])

    asyncio.run(main())
    assert _contents(store) == ["a", "Echo: a", "rival 1", "r", "b", "Echo: b"]


def _check_stream(events: list[Any]) -> None:
    kinds = [e.type for e in events]
    assert kinds.count("start") == 2 and kinds.count("retry") == 1 and kinds.count("done") == 2
    retry = events[kinds.index("retry")]
    assert isinstance(retry, TurnRetryEvent) and retry.attempt == 2 and retry.current_revision == 2
    assert kinds.index("retry") == kinds.index("done") + 1  # the losing attempt ran to its end first
    assert isinstance(events[kinds.index("retry") + 1], StartEvent)
    assert events[-1] == TurnSavedEvent("s1", 3, 2)


def test_stream_turn_streams_each_attempt_and_ends_with_saved(store: SqlSessionStore, extra_store: Callable[[], SqlSessionStore]) -> None:
    run_turn(AgentCore(providers=[EchoProvider]), store, "s1", "first", ECHO)
    core, _ = interloping_core(extra_store(), times=1)
    events = list(stream_turn(core, store, "s1", "mine", ECHO))
    _check_stream(events)
    partial = "".join(e.message.content for e in events[events.index(next(e for e in events if e.type == "retry")):]
                      if e.type == "partial")
    assert partial == "Echo: mine"
    assert _contents(store)[-2:] == ["mine", "Echo: mine"]


def test_astream_turn_is_the_async_twin(store: SqlSessionStore, extra_store: Callable[[], SqlSessionStore]) -> None:
    run_turn(AgentCore(providers=[EchoProvider]), store, "s1", "first", ECHO)
    core, _ = interloping_core(extra_store(), times=1)

    async def collect() -> list[Any]:
        return [e async for e in astream_turn(core, store, "s1", "mine", ECHO)]

    _check_stream(asyncio.run(collect()))
    assert _contents(store)[-2:] == ["mine", "Echo: mine"]


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [({"session_id": ""}, "session_id"), ({"message": 3}, "message"), ({"retries": -1}, "retries")],
)
def test_run_turn_names_a_bad_argument(store: SqlSessionStore, core: AgentCore, kwargs: dict, argument: str) -> None:
    call: dict[str, Any] = {"session_id": "s1", "message": "hi", **kwargs}
    runners: list[Callable[[], Any]] = [
        lambda: run_turn(core, store, call["session_id"], call["message"], ECHO, retries=call.get("retries", 3)),
        lambda: list(stream_turn(core, store, call["session_id"], call["message"], ECHO, retries=call.get("retries", 3))),
    ]
    for run in runners:
        with pytest.raises(InvalidArgumentError) as info:
            run()
        assert info.value.argument == argument
    assert store.list() == []


def test_the_store_s_stream_events_encode_like_the_engine_s(store: SqlSessionStore, core: AgentCore) -> None:
    from agent_core import encode_event

    events = list(stream_turn(core, store, "s1", "hi", ECHO))
    assert encode_event(events[-1]) == b'{"type":"saved","session_id":"s1","revision":1,"attempts":1}'
    retry = encode_event(TurnRetryEvent("s1", 2, 5))
    assert retry == b'{"type":"retry","session_id":"s1","attempt":2,"current_revision":5}'
