"""A config resolved before is replayed: the same hooks asked of new instances, the recorded outcome kept only
when every answer is the same (``agent_core.plugins.replay``).

What must hold: a plugin sees the calls a fresh resolution makes, on instances of its own request;
an answer that changes, a config that differs only in a value's type, a newly registered plugin and a
config with warnings all get a fresh resolution; secrets reach the new instances as before.
"""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Any

import pytest
from agent_core import AgentCore, ConfigError, PluginError
from agent_core.errors import UnknownConfigKeyWarning
from agent_core.plugins import replay as replay_module

CALLS: Counter[str] = Counter()


class Prov:
    name = "prov"

    def get_config_schema(self):
        return {"api_key": {"type": "string", "secret": True}, "flag": {"type": "boolean", "default": False}}

    def get_models(self, config):
        CALLS["get_models"] += 1
        return [{"id": "m1"}]

    def get_tags(self, config, models):
        CALLS["get_tags"] += 1
        return ["vision"] if config.get("flag") else []

    def call_api(self, native_messages, state):
        msg = {"role": "assistant", "content": "ok"}
        return [], [msg], [*native_messages, msg], state


class Seer:
    """A feature that needs the ``vision`` tag and says so through ``is_enabled`` when ``VERDICT`` is set."""

    name = "seer"
    VERDICT: Any = None

    def get_config_schema(self):
        return {"seer_token": {"type": "string"}}

    def required_tags(self):
        return ["vision"]

    def is_enabled(self, config, tags, models, context):
        CALLS["is_enabled"] += 1
        return Seer.VERDICT


@pytest.fixture(autouse=True)
def _fresh() -> None:
    CALLS.clear()
    Seer.VERDICT = None


def core() -> AgentCore:
    return AgentCore(providers=[Prov], features=[Seer])


def hook_calls(config: dict[str, Any], times: int) -> Counter[str]:
    """The hook calls ``times`` resolutions of ``config`` make on a new core."""
    c = core()
    CALLS.clear()
    for _ in range(times):
        c.resolve(config)
    return Counter(CALLS)


def test_a_replayed_resolution_equals_a_fresh_one_with_new_instances(monkeypatch: pytest.MonkeyPatch) -> None:
    fresh: list[Any] = []
    real = replay_module.resolve
    monkeypatch.setattr(replay_module, "resolve", lambda *a, **k: fresh.append(1) or real(*a, **k))
    c = core()
    config = {"flag": True, "api_key": "sk-one", "seer_token": "t"}
    first = c.resolve(config)
    assert not c._replays._kept, "a config seen once is not recorded"
    c.resolve(config)  # seen again: resolved afresh and recorded
    second = c.resolve(config)
    assert len(fresh) == 2, "the third resolution was a replay"
    for field in ("provider", "extensions", "features", "tools", "tags", "models", "reasons", "config", "warnings"):
        assert getattr(second, field) == getattr(first, field), field
    assert [str(f) for f in second.features] == ["seer"] and second.tags == ("vision",)
    assert set(second.live) == set(first.live) == {"prov", "seer"}
    for name in first.live:  # one request's instances are never another's
        assert second.live[name] is not first.live[name]
        assert second.live[name].instance is not first.live[name].instance
        assert second.live[name].secrets == first.live[name].secrets
    assert second.live["prov"].secrets == {"api_key": "sk-one"}  # the provider's own secret, handed anew
    assert second.config["api_key"] == "<redacted>"
    other = {**config, "api_key": "sk-other"}
    for _ in range(3):
        assert c.resolve(other).live["prov"].secrets == {"api_key": "sk-other"}
    assert len(fresh) == 4, "another key's config is another config, recorded on its second resolution"


def test_each_resolution_asks_the_hooks_a_fresh_one_would() -> None:
    config = {"flag": True}
    once = hook_calls(config, 1)
    assert once["get_models"] == 1 and once["get_tags"] == 1 and once["is_enabled"] >= 1
    assert hook_calls(config, 5) == Counter({k: 5 * v for k, v in once.items()})


def test_an_answer_that_changes_is_heard() -> None:
    c = core()
    config = {"flag": True}
    for _ in range(3):  # seen, recorded, replayed
        assert [str(f) for f in c.resolve(config).features] == ["seer"]
    assert c._replays._kept
    Seer.VERDICT = False  # the same config, a different verdict: the recorded outcome no longer holds
    again = c.resolve(config)
    assert again.features == ()
    assert "is_enabled returned False" in again.reasons["seer"]
    Seer.VERDICT = "yes"  # a bad answer still fails as it does without a replay
    with pytest.raises(PluginError) as err:
        c.resolve(config)
    assert err.value.plugin == "seer" and err.value.hook == "is_enabled"


def test_a_value_of_another_type_is_another_config() -> None:
    c = core()
    for _ in range(3):
        assert c.resolve({"flag": True}).tags == ("vision",)
    with pytest.raises(ConfigError) as err:  # 1 == True, but a boolean key refuses an integer
        c.resolve({"flag": 1})
    assert err.value.key == "flag"
    assert c.resolve({"flag": False}).tags == ()
    with pytest.raises(ConfigError):
        c.resolve({"flag": 0})


def test_a_plugin_registered_later_takes_part() -> None:
    c = AgentCore(providers=[Prov])
    config = {"flag": True}
    for _ in range(3):
        assert c.resolve(config).features == ()
    c.register_feature(Seer)
    assert [str(f) for f in c.resolve(config).features] == ["seer"]


def test_warnings_are_given_every_time() -> None:
    c = core()
    for _ in range(3):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            res = c.resolve({"flgx": True})  # a key nothing declares
        assert res.warnings and any(issubclass(w.category, UnknownConfigKeyWarning) for w in seen)


def test_a_config_pickle_refuses_is_resolved_afresh_each_time() -> None:
    c = core()
    config = {"flag": True, "note": lambda: None}  # an undeclared key with a value pickle cannot write
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c.resolve(config)
        c.resolve(config)
    assert not c._replays._kept


def test_a_session_plugin_list_is_part_of_what_is_replayed() -> None:
    from agent_core import Session

    c = core()
    config = {"flag": True}
    only_provider = Session("s", [], {"plugins": []})
    for _ in range(3):
        assert [str(f) for f in c.resolve(config).features] == ["seer"]
        assert c.resolve(config, session=only_provider).features == ()


def test_a_replayed_resolution_runs_a_request() -> None:
    c = core()
    config = {"flag": True, "api_key": "sk-two"}
    session = c.create_session()
    for text in ("a", "b", "c", "d"):
        res = c.resolve(config)
        result = c.request(c.add_message(session, "user", text), config, resolution=res)
        assert result.session.messages[-1].content == "ok"


def test_configs_that_never_repeat_are_not_recorded_and_the_memory_stays_bounded() -> None:
    c = core()
    for i in range(3000):
        c.resolve({"flag": bool(i % 2), "api_key": f"sk-{i}"})
    assert not c._replays._kept
    assert len(c._replays._seen) <= 4 * 256


def test_a_kept_recording_holds_no_request_s_plugin_instances() -> None:
    import gc
    import weakref

    c = core()
    config = {"flag": True}
    c.resolve(config)
    recorded = c.resolve(config)  # the recording request's resolution
    gone = weakref.ref(recorded.live["prov"].instance)
    del recorded
    gc.collect()
    assert gone() is None, "the kept recording still holds the instances of the request it was made in"
    assert [str(f) for f in c.resolve(config).features] == ["seer"]


def test_a_config_whose_answers_keep_changing_is_resolved_afresh_not_recorded_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fresh: list[Any] = []
    real = replay_module.resolve
    monkeypatch.setattr(replay_module, "resolve", lambda *a, **k: fresh.append(k.get("on_live")) or real(*a, **k))
    c = core()
    config = {"flag": True}
    for _ in range(3):  # seen, recorded, replayed
        c.resolve(config)
    assert len(fresh) == 2
    for i in range(6):  # a verdict that changes from one request to the next
        Seer.VERDICT = (False, True)[i % 2]
        assert bool(c.resolve(config).features) is Seer.VERDICT
    assert len(fresh) == 8, "each request after the change is one fresh resolution"
    assert [f for f in fresh[2:] if f is not None] == [], "none of them records again"
    assert not c._replays._kept
