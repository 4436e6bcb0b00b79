"""Plugin resolution: which plugins run for a config, in which order, and why.

The enablement matrix (tags, forbidden tags, ``is_enabled``, disabled / forced
/ opt-in), the tag fixed point, oscillation, and ordering by priority then
name whatever the registration order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from agent_core import AgentCore, ConfigError, Message, PluginError, Session
from agent_core.testing import scripted_provider

# -- small plugin builders -------------------------------------------------------


def provider(tags: Sequence[str] = (), models: Sequence[dict[str, Any]] = ({"id": "m1"},)) -> type:
    """A provider contributing ``tags`` and ``models``; it answers "ok"."""

    class Prov:
        name = "prov"

        def get_models(self, config):
            return [dict(m) for m in models]

        def get_tags(self, config, models):
            return list(tags)

        def call_api(self, native_messages, state):
            msg = {"role": "assistant", "content": "ok"}
            return [], [msg], [*native_messages, msg], state

    return Prov


def plugin(
    name: str,
    *,
    tags: Sequence[str] = (),
    required: Sequence[str] = (),
    forbidden: Sequence[str] = (),
    priority: int = 100,
    default_enabled: bool = True,
    is_enabled: Callable[..., Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> type:
    """A duck-typed extension/feature/tool: only the resolution hooks."""
    attrs: dict[str, Any] = {
        "name": name,
        "priority": priority,
        "default_enabled": default_enabled,
        "get_tags": lambda self, config, models: list(tags),
        "required_tags": lambda self: list(required),
        "forbidden_tags": lambda self: list(forbidden),
    }
    if is_enabled is not None:
        attrs["is_enabled"] = lambda self, config, tags, models, context: is_enabled(config, tags, models, context)
    attrs.update(extra or {})
    return type(f"Plugin_{name}", (), attrs)


def names(refs: Sequence[Any]) -> list[str]:
    return [str(r) for r in refs]


def enabled(core: AgentCore, config: dict[str, Any] | None = None) -> set[str]:
    res = core.resolve(config or {})
    return set(names(res.extensions)) | set(names(res.features)) | set(names(res.tools))


# -- defaults and tag rules ----------------------------------------------------------


def test_a_plugin_without_rules_is_enabled_by_default() -> None:
    core = AgentCore(providers=[provider()], features=[plugin("plain")])
    res = core.resolve({})
    assert names(res.features) == ["plain"]
    assert str(res.provider) == "prov"
    assert res.reasons["plain"].startswith("on")
    assert res.reasons["prov"] == "selected provider"


@pytest.mark.parametrize(
    ("provider_tags", "required", "on"),
    [
        (["a", "b"], ["a", "b"], True),
        (["a", "b", "c"], ["a"], True),
        (["a"], ["a", "b"], False),
        ([], ["a"], False),
    ],
)
def test_required_tags_must_all_be_present(provider_tags: list[str], required: list[str], on: bool) -> None:
    core = AgentCore(providers=[provider(provider_tags)], features=[plugin("needs", required=required)])
    res = core.resolve({})
    assert ("needs" in names(res.features)) is on
    if not on:
        missing = sorted(set(required) - set(provider_tags))
        assert res.reasons["needs"].startswith("off")
        assert "required" in res.reasons["needs"]
        assert all(t in res.reasons["needs"] for t in missing)


@pytest.mark.parametrize(
    ("provider_tags", "forbidden", "on"),
    [
        (["a"], ["b"], True),
        (["a", "b"], ["b"], False),
        (["a", "b"], ["x", "a"], False),
        ([], ["a"], True),
    ],
)
def test_any_forbidden_tag_switches_a_plugin_off(provider_tags: list[str], forbidden: list[str], on: bool) -> None:
    core = AgentCore(providers=[provider(provider_tags)], extensions=[plugin("picky", forbidden=forbidden)])
    res = core.resolve({})
    assert ("picky" in names(res.extensions)) is on
    if not on:
        assert "forbidden" in res.reasons["picky"]


def test_required_and_forbidden_together() -> None:
    core = AgentCore(
        providers=[provider(["tools", "vision"])],
        tools=[
            plugin("ok", required=["tools"], forbidden=["audio"]),
            plugin("blocked", required=["tools"], forbidden=["vision"]),
        ],
    )
    assert names(core.resolve({}).tools) == ["ok"]


def test_tags_are_the_union_of_provider_and_every_enabled_plugin_of_each_kind() -> None:
    core = AgentCore(
        providers=[provider(["p"])],
        extensions=[plugin("e", tags=["from-ext"])],
        features=[plugin("f", tags=["from-feature"])],
        tools=[plugin("t", tags=["from-tool", "p"])],
    )
    res = core.resolve({})
    assert res.tags == ("from-ext", "from-feature", "from-tool", "p")
    assert core.get_tags({}) == ["from-ext", "from-feature", "from-tool", "p"]


def test_tags_of_a_disabled_plugin_do_not_count() -> None:
    core = AgentCore(
        providers=[provider(["p"])],
        extensions=[plugin("e", tags=["from-ext"])],
        features=[plugin("f", tags=["from-feature"], is_enabled=lambda *a: False)],
    )
    assert core.resolve({"disabled_plugins": ["e"]}).tags == ("p",)


# -- is_enabled -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verdict", "provider_tags", "on", "reason_word"),
    [
        (True, [], True, "is_enabled"),  # True wins over missing required tags
        (True, ["no"], True, "is_enabled"),  # ... and over a forbidden tag
        (False, ["need"], False, "is_enabled"),  # False wins over satisfied tags
        (None, ["need"], True, "tag"),  # None: the tag rules decide (satisfied)
        (None, [], False, "required"),  # None: the tag rules decide (missing)
        (None, ["need", "no"], False, "forbidden"),  # None: the tag rules decide (forbidden)
    ],
)
def test_is_enabled_decides_when_it_returns_a_bool_and_falls_back_on_none(
    verdict: bool | None, provider_tags: list[str], on: bool, reason_word: str
) -> None:
    core = AgentCore(
        providers=[provider(provider_tags)],
        features=[plugin("f", required=["need"], forbidden=["no"], is_enabled=lambda *a: verdict)],
    )
    res = core.resolve({})
    assert ("f" in names(res.features)) is on
    assert reason_word in res.reasons["f"]
    assert res.reasons["f"].startswith("on" if on else "off")


def test_is_enabled_receives_config_tags_models_and_the_resolution_context() -> None:
    seen: list[tuple[Any, ...]] = []

    def record(config, tags, models, context):
        seen.append((dict(config), list(tags), [dict(m) for m in models], context))
        return None

    core = AgentCore(
        providers=[provider(["p"], models=[{"id": "m-x"}])],
        extensions=[plugin("e", tags=["e-tag"])],
        features=[plugin("watcher", is_enabled=record), plugin("other")],
        tools=[plugin("t")],
    )
    config = {"disabled_plugins": ["ghost"], "force_enabled_plugins": ["t"], "custom": 7}
    core.resolve(config)
    assert seen, "is_enabled was never called"
    cfg, tags, models, context = seen[-1]
    assert cfg["custom"] == 7
    assert sorted(tags) == ["e-tag", "p"]
    assert models == [{"id": "m-x"}]
    ids = context["enabled_plugin_ids"]
    assert list(ids["extensions"]) == ["e"]
    assert sorted(ids["features"]) == ["other", "watcher"]
    assert list(ids["tools"]) == ["t"]
    assert list(context["disabled_plugins"]) == ["ghost"]
    assert list(context["force_enabled_plugins"]) == ["t"]


def test_is_enabled_can_depend_on_which_other_plugins_are_enabled() -> None:
    def only_with_partner(config, tags, models, context):
        return "partner" in context["enabled_plugin_ids"]["features"]

    core = AgentCore(providers=[provider()], features=[plugin("partner"), plugin("follower", is_enabled=only_with_partner)])
    assert enabled(core) == {"partner", "follower"}
    assert enabled(core, {"disabled_plugins": ["partner"]}) == set()


def test_is_enabled_returning_something_else_is_a_plugin_error() -> None:
    core = AgentCore(providers=[provider()], features=[plugin("odd", is_enabled=lambda *a: "yes")])
    with pytest.raises(PluginError) as info:
        core.resolve({})
    assert info.value.plugin == "odd"
    assert info.value.hook == "is_enabled"


# -- disabled, forced, opt-in -----------------------------------------------------------


def test_disabled_plugins_switches_a_plugin_off_whatever_its_rules_say() -> None:
    core = AgentCore(
        providers=[provider(["need"])],
        extensions=[plugin("e", is_enabled=lambda *a: True)],
        features=[plugin("f", required=["need"])],
        tools=[plugin("t")],
    )
    res = core.resolve({"disabled_plugins": ["e", "f", "t"]})
    assert (res.extensions, res.features, res.tools) == ((), (), ())
    for n in ("e", "f", "t"):
        assert res.reasons[n].startswith("off")
        assert "disabled_plugins" in res.reasons[n]


def test_force_enabled_plugins_switches_a_plugin_on_whatever_its_rules_say() -> None:
    core = AgentCore(
        providers=[provider(["no"])],
        extensions=[plugin("e", is_enabled=lambda *a: False)],
        features=[plugin("f", required=["missing"])],
        tools=[plugin("t", forbidden=["no"])],
    )
    assert enabled(core) == set()
    res = core.resolve({"force_enabled_plugins": ["e", "f", "t"]})
    assert (names(res.extensions), names(res.features), names(res.tools)) == (["e"], ["f"], ["t"])
    for n in ("e", "f", "t"):
        assert "force_enabled_plugins" in res.reasons[n]


def test_force_wins_when_a_plugin_is_both_disabled_and_forced() -> None:
    core = AgentCore(providers=[provider()], features=[plugin("both")])
    res = core.resolve({"disabled_plugins": ["both"], "force_enabled_plugins": ["both"]})
    assert names(res.features) == ["both"]
    assert res.reasons["both"].startswith("on")


def test_an_opt_in_plugin_runs_only_when_named() -> None:
    core = AgentCore(providers=[provider()], features=[plugin("optin", default_enabled=False), plugin("normal")])
    res = core.resolve({})
    assert names(res.features) == ["normal"]
    assert "enabled_plugins" in res.reasons["optin"]
    assert enabled(core, {"enabled_plugins": ["optin"]}) == {"optin", "normal"}
    assert enabled(core, {"force_enabled_plugins": ["optin"]}) == {"optin", "normal"}


def test_naming_an_opt_in_plugin_still_applies_its_tag_rules() -> None:
    core = AgentCore(providers=[provider()], tools=[plugin("optin", default_enabled=False, required=["x"])])
    res = core.resolve({"enabled_plugins": ["optin"]})
    assert res.tools == ()
    assert "required" in res.reasons["optin"]


def test_disabled_beats_enabled_plugins_for_an_opt_in_plugin() -> None:
    core = AgentCore(providers=[provider()], features=[plugin("optin", default_enabled=False)])
    assert enabled(core, {"enabled_plugins": ["optin"], "disabled_plugins": ["optin"]}) == set()


# -- the tag fixed point --------------------------------------------------------------


def test_a_plugin_tag_can_enable_another_plugin() -> None:
    core = AgentCore(
        providers=[provider()],
        extensions=[plugin("vision_ext", tags=["vision"])],
        features=[plugin("image_feature", required=["vision"])],
    )
    assert enabled(core) == {"vision_ext", "image_feature"}
    res = core.resolve({"disabled_plugins": ["vision_ext"]})
    assert res.features == ()
    assert "vision" in res.reasons["image_feature"]


def test_switching_a_plugin_off_propagates_along_a_chain_of_tags() -> None:
    # c -> provides t0; b needs t0, provides t1; a needs t1, provides t2; d forbids t2
    core = AgentCore(
        providers=[provider()],
        features=[
            plugin("a", required=["t1"], tags=["t2"]),
            plugin("b", required=["t0"], tags=["t1"]),
            plugin("c", tags=["t0"]),
            plugin("d", forbidden=["t2"]),
        ],
    )
    assert enabled(core) == {"a", "b", "c"}
    res = core.resolve({"disabled_plugins": ["c"]})
    assert names(res.features) == ["d"]
    assert res.tags == ()


def test_resolution_starts_with_every_candidate_enabled() -> None:
    # A plugin whose own tag satisfies its own requirement keeps itself on,
    # because resolution starts from "all candidates enabled".
    core = AgentCore(providers=[provider()], features=[plugin("self_sustaining", tags=["me"], required=["me"])])
    res = core.resolve({})
    assert names(res.features) == ["self_sustaining"]
    assert res.tags == ("me",)


def test_a_forbidden_tag_from_another_plugin_switches_a_plugin_off() -> None:
    core = AgentCore(
        providers=[provider()],
        extensions=[plugin("native_search", tags=["web_search"])],
        tools=[plugin("search_tool", forbidden=["web_search"])],
    )
    assert enabled(core) == {"native_search"}
    assert enabled(core, {"disabled_plugins": ["native_search"]}) == {"search_tool"}


def test_resolution_is_deterministic() -> None:
    core = AgentCore(
        providers=[provider(["p"])],
        features=[plugin("a", tags=["x"]), plugin("b", required=["x"], tags=["y"]), plugin("c", forbidden=["y"])],
    )
    first = core.resolve({})
    for _ in range(3):
        again = core.resolve({})
        assert (again.features, again.tags, dict(again.reasons)) == (first.features, first.tags, dict(first.reasons))


def test_plugins_that_switch_each_other_off_raise_a_config_error_naming_them() -> None:
    core = AgentCore(
        providers=[provider()],
        features=[
            plugin("ping", tags=["ping"], forbidden=["pong"]),
            plugin("pong", tags=["pong"], forbidden=["ping"]),
            plugin("bystander"),
        ],
    )
    with pytest.raises(ConfigError) as info:
        core.resolve({})
    assert set(info.value.plugins) == {"ping", "pong"}
    assert "ping" in str(info.value) and "pong" in str(info.value)
    assert "bystander" not in str(info.value)


def test_is_enabled_verdicts_that_never_settle_raise_a_config_error_naming_the_plugins() -> None:
    # leader is on only while follower is off; follower is on only while leader is on
    def leader(config, tags, models, context):
        return "follower" not in context["enabled_plugin_ids"]["tools"]

    def follower(config, tags, models, context):
        return "leader" in context["enabled_plugin_ids"]["features"]

    core = AgentCore(
        providers=[provider()],
        features=[plugin("leader", is_enabled=leader), plugin("calm")],
        tools=[plugin("follower", is_enabled=follower)],
    )
    with pytest.raises(ConfigError) as info:
        core.resolve({})
    assert set(info.value.plugins) == {"leader", "follower"}


def test_a_plugin_that_forbids_its_own_tag_oscillates() -> None:
    core = AgentCore(providers=[provider()], tools=[plugin("flip", tags=["flip"], forbidden=["flip"])])
    with pytest.raises(ConfigError) as info:
        core.resolve({})
    assert info.value.plugins == ("flip",)


def test_forcing_one_side_of_an_oscillation_settles_it() -> None:
    core = AgentCore(
        providers=[provider()],
        features=[plugin("ping", tags=["ping"], forbidden=["pong"]), plugin("pong", tags=["pong"], forbidden=["ping"])],
    )
    assert enabled(core, {"force_enabled_plugins": ["ping"]}) == {"ping"}


def test_an_oscillating_config_fails_the_request_without_touching_the_session() -> None:
    core = AgentCore(providers=[provider()], tools=[plugin("flip", tags=["flip"], forbidden=["flip"])])
    session = Session("s", [Message("user", "hi")])
    with pytest.raises(ConfigError):
        core.request(session, {})
    events = list(core.stream_request(session, {}))
    assert [e.type for e in events] == ["start", "error", "done"]
    assert events[-1].outcome.status == "stopped"
    assert events[-1].session == session


# -- ordering -----------------------------------------------------------------------------

ORDER_SPECS = [("zeta", 50), ("alpha", 100), ("mid", 50), ("beta", 100), ("first", 1)]
EXPECTED_ORDER = ["first", "mid", "zeta", "alpha", "beta"]


@pytest.mark.parametrize("perm", list(itertools.islice(itertools.permutations(range(len(ORDER_SPECS))), 0, 120, 17)))
def test_chains_are_ordered_by_priority_then_name_whatever_the_registration_order(perm: tuple[int, ...]) -> None:
    specs = [ORDER_SPECS[i] for i in perm]
    core = AgentCore(
        providers=[provider()],
        extensions=[plugin(f"e_{n}", priority=p) for n, p in specs],
        features=[plugin(n, priority=p) for n, p in specs],
        tools=[plugin(f"t_{n}", priority=p) for n, p in specs],
    )
    res = core.resolve({})
    assert names(res.features) == EXPECTED_ORDER
    assert names(res.extensions) == [f"e_{n}" for n in EXPECTED_ORDER]
    assert names(res.tools) == [f"t_{n}" for n in EXPECTED_ORDER]


def test_requests_run_the_chain_in_resolved_order() -> None:
    calls: list[str] = []

    def recording(name: str, priority: int) -> type:
        def init(self, config, state):
            calls.append(name)
            return state

        return plugin(name, priority=priority, extra={"init": init})

    regs = [recording("late", 200), recording("b_early", 10), recording("a_early", 10), recording("mid", 100)]
    core = AgentCore(providers=[scripted_provider("hi")], features=regs)
    result = core.request(Session("s", [Message("user", "hi")]))
    assert result.outcome.ok
    assert calls == ["a_early", "b_early", "mid", "late"]
    start = next(iter(core.stream_request(Session("s", [Message("user", "hi")]))))
    assert start.features == ["a_early", "b_early", "mid", "late"]


# -- what resolve returns -------------------------------------------------------------------


def test_resolve_returns_provider_chains_tags_models_and_reasons() -> None:
    def narrow(self, config, models):
        return [m for m in models if m["id"] != "drop-me"]

    core = AgentCore(
        providers=[provider(["p"], models=[{"id": "keep"}, {"id": "drop-me"}])],
        extensions=[plugin("ext", extra={"get_models": narrow})],
        features=[plugin("feat", tags=["f"])],
        tools=[plugin("tool", required=["nope"])],
    )
    res = core.resolve({})
    assert str(res.provider) == "prov" and res.provider.kind == "provider"
    assert names(res.extensions) == ["ext"] and res.extensions[0].kind == "extension"
    assert names(res.features) == ["feat"] and res.features[0].kind == "feature"
    assert res.tools == ()
    assert res.tags == ("f", "p")
    assert [m["id"] for m in res.models] == ["keep"]
    assert set(res.reasons) == {"prov", "ext", "feat", "tool"}
    assert res.reasons["tool"].startswith("off") and "nope" in res.reasons["tool"]
    assert core.get_models({}) == [{"id": "keep"}]


def test_plugins_switched_off_do_not_run_during_a_request() -> None:
    ran: list[str] = []

    def init(self, config, state):
        ran.append(self.name)
        return state

    core = AgentCore(
        providers=[scripted_provider("hi")],
        features=[plugin("on", extra={"init": init}), plugin("off", required=["absent"], extra={"init": init})],
    )
    core.request(Session("s", [Message("user", "hi")]))
    assert ran == ["on"]
