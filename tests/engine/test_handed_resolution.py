"""A request handed the resolution its caller already made (``resolution=``) does not resolve again.

The plugins are counted where resolution makes them (a fresh instance per candidate), so
"resolved once" is something the test can see fail. A resolution for another core, another
config, another session plugin list, an older registration, or one already used is refused
at the call, for every request method, with an error naming the argument.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from agent_core import (
    AgentCore,
    InvalidArgumentError,
    Message,
    Resolution,
    Session,
    encode_event,
)
from agent_core.testing import scripted_provider

MADE: list[str] = []


class Counted:
    """An extension that notes each instance made (resolution makes one per request)."""

    name = "counted"

    def __init__(self) -> None:
        MADE.append(self.name)

    def get_config_schema(self) -> dict[str, Any]:
        return {"level": {"type": "integer", "default": 1}, "stop": {"type": "array", "default": []},
                "api_key": {"type": "string", "default": "", "secret": True}}


def _core() -> AgentCore:
    return AgentCore(providers=[scripted_provider("hello", "again", name="prov")], extensions=[Counted])


def _session(metadata: dict[str, Any] | None = None) -> Session:
    return Session("s1", [Message("user", "hi")], metadata or {})


CONFIG = {"provider": "prov", "level": 2, "stop": ["x", "y"]}


@pytest.fixture(autouse=True)
def _reset() -> None:
    MADE.clear()


def _run(core: AgentCore, how: str, res: Resolution | None, config: dict[str, Any] = CONFIG,
         session: Session | None = None) -> list[dict[str, Any]]:
    """The events of one request run ``how`` (their JSON, request ids fixed), handed ``res``."""
    s = session or _session()
    kw: dict[str, Any] = {"request_id": "r1"} if res is None else {"request_id": "r1", "resolution": res}

    async def collect_async() -> list[Any]:
        if how == "astream":
            return [e async for e in core.astream_request(s, config, **kw)]
        return [await core.arequest(s, config, **kw)]

    if how == "stream":
        got = list(core.stream_request(s, config, **kw))
    elif how == "request":
        got = [core.request(s, config, **kw)]
    else:
        got = asyncio.run(collect_async())
    return [_plain(x) for x in got]


def _plain(value: Any) -> Any:
    if hasattr(value, "type"):
        return msgspec.json.decode(encode_event(value))
    return [value.outcome.status, [(m.role, m.content) for m in value.final_messages], value.request_id]


@pytest.mark.parametrize("how", ["stream", "request", "astream", "arequest"])
def test_a_handed_resolution_is_used_instead_of_resolving_again(how: str) -> None:
    core = _core()
    expected = _run(core, how, None)
    assert MADE == ["counted"]  # one resolution without a hand-over
    MADE.clear()
    core = _core()
    res = core.resolve(CONFIG)
    assert MADE == ["counted"]
    assert _run(core, how, res) == expected  # the same events and result...
    assert MADE == ["counted"]  # ...and no second instance: the request took the one resolve made


def test_sync_and_async_give_the_same_events_with_a_handed_resolution() -> None:
    core = _core()
    sync = _run(core, "stream", core.resolve(CONFIG))
    core = _core()
    assert _run(core, "astream", core.resolve(CONFIG)) == sync
    assert sync[0]["type"] == "start"


def _refused(call: Callable[[], Any], why: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert info.value.argument == "resolution"
    assert why in str(info.value)


def _each_method(core: AgentCore, res: Any, config: dict[str, Any], session: Session | None = None
                 ) -> list[Callable[[], Any]]:
    s = session or _session()
    return [
        lambda: core.request(s, config, resolution=res),
        lambda: core.stream_request(s, config, resolution=res),
        lambda: asyncio.run(core.arequest(s, config, resolution=res)),
        lambda: core.astream_request(s, config, resolution=res),
    ]


@pytest.mark.parametrize("case", ["other core", "other config", "edited in place", "nested edit",
                                  "session plugins", "registered since", "not a resolution"])
def test_a_resolution_not_made_for_this_request_is_refused_by_every_method(case: str) -> None:
    core = _core()
    config = {**CONFIG, "stop": ["x", "y"]}
    session = None
    if case == "other core":
        res, why = _core().resolve(config), "another AgentCore"
    elif case == "other config":
        res, why = core.resolve(config), "different config"
        config = {**config, "level": 3}
    elif case == "edited in place":
        res, why = core.resolve(config), "different config"
        config["level"] = 3
    elif case == "nested edit":  # the basis is a deep copy: an edit inside a list is seen too
        res, why = core.resolve(config), "different config"
        config["stop"].append("z")
    elif case == "session plugins":
        res, why = core.resolve(config), "session plugin list"
        session = _session({"plugins": []})
    elif case == "registered since":
        res, why = core.resolve(config), "plugins registered"
        core.register_feature(type("Late", (), {"name": "late"}))
    else:
        res, why = "counted", "must be a Resolution"
    for call in _each_method(core, res, config, session):
        _refused(call, why)
    assert core.request(_session(), config).outcome.status == "finished"  # the core itself is fine


def test_a_resolution_serves_one_request() -> None:
    core = _core()
    res = core.resolve(CONFIG)
    assert core.request(_session(), CONFIG, resolution=res).final_messages[-1].content == "hello"
    for call in _each_method(core, res, CONFIG):
        _refused(call, "already used")


def test_a_resolution_made_with_the_session_fits_that_session() -> None:
    core = _core()
    session = _session({"plugins": ["counted"]})
    res = core.resolve(CONFIG, session=session)
    assert [str(e) for e in res.extensions] == ["counted"]
    assert core.request(session, CONFIG, resolution=res).outcome.status == "finished"
    assert MADE == ["counted"]


def test_a_config_equal_by_value_is_accepted_and_the_resolution_is_never_shown() -> None:
    core = _core()
    config = {**CONFIG, "api_key": "sk-secret-value"}
    res = core.resolve(dict(config))  # another dict, the same values (a tuple where a list was is the same too)
    assert "sk-secret-value" not in repr(res)
    assert core.request(_session(), {**config, "stop": ("x", "y")}, resolution=res).outcome.status == "finished"
