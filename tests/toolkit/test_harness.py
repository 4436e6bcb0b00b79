"""PluginHarness runs one plugin's hooks as the engine would, with plain values in and out."""

from __future__ import annotations

import pytest
from agent_core import BaseFeature, ConfigError, Message, Session
from agent_core.testing import PluginContractError, PluginHarness, plugin_kind
from agent_core.testing.scripted import scripted_provider
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.echo import EchoProvider
from agent_core_providers.openai import OpenAIProvider
from seed_plugins import DummyCalc, PrefixExt, TagFeature

from .conftest import RECORDINGS


def test_kinds_are_read_from_the_hooks_a_plugin_defines():
    assert [plugin_kind(p) for p in (EchoProvider, PrefixExt, TagFeature, DummyCalc)] == [
        "provider", "extension", "feature", "tool"]
    assert plugin_kind(type("F", (BaseFeature,), {"process_chunk": lambda *a: a})) == "feature"  # base class wins


def test_schema_defaults_fill_the_config_and_init_gets_the_providers_state():
    h = PluginHarness(PrefixExt)
    assert h.config == {"prefix": "[EXT]"}
    assert h.state == {"config": {"prefix": "[EXT]"}}
    assert PluginHarness(PrefixExt, {"prefix": ">"}).state["config"]["prefix"] == ">"


def test_a_config_of_the_wrong_type_is_the_engines_config_error():
    with pytest.raises(ConfigError, match="prefix"):
        PluginHarness(PrefixExt, {"prefix": 3})


def test_stream_ends_with_the_closing_none_call_carrying_the_finals():
    record = PluginHarness(PrefixExt).stream([{"n": 1}, {"n": 2}], partials=["a", ["b", {"role": "assistant",
                                                                                       "content": "c"}]],
                                             finals=[Message(role="assistant", content="abc")])
    assert [c.chunk for c in record.calls] == [{"n": 1}, {"n": 2}, None]
    assert record.calls[-1].inputs["final_messages"] == [{"role": "assistant", "content": "abc"}]
    assert record.text == "abc"
    assert record.finals == [{"role": "assistant", "content": "[EXT] abc"}]
    assert type(record.finals[0]) is dict  # thawed: plain values


def test_partials_must_line_up_with_chunks():
    with pytest.raises(ValueError, match="one per chunk"):
        PluginHarness(PrefixExt).stream([{}, {}], partials=["only one"])


def test_hooks_get_frozen_inputs_so_mutation_fails_as_in_the_engine():
    class Appends:
        name = "appends"

        def process_chunk(self, chunk, partials, finals, native, state):
            finals.append({"role": "assistant", "content": "x"})
            return partials, finals, native, state

    with pytest.raises(TypeError, match=r"\[\*"):
        PluginHarness(Appends).stream(finals=["hi"])


def test_a_wrong_shape_is_a_contract_error_naming_the_hook():
    class ThreeTuple:
        name = "three"

        def process_chunk(self, chunk, partials, finals, native, state):
            return partials, finals, native

    with pytest.raises(PluginContractError, match=r"'process_chunk': must return a 4-tuple") as err:
        PluginHarness(ThreeTuple).stream()
    assert err.value.hook == "process_chunk" and err.value.plugin == "three"


def test_hooks_with_fewer_parameters_and_missing_hooks_work():
    class Narrow:
        name = "narrow"

        def process_chunk(self, chunk, partials, finals, native, state):
            return partials, finals, native, state

        def finalize(self, finals, native, state):  # no context
            return [{**m, "content": m["content"] + "!"} for m in finals], native, state

    h = PluginHarness(Narrow)
    assert h.finalize(["hi"]).finals == [{"role": "assistant", "content": "hi!"}]
    assert h.to_native([{"role": "user", "content": "x"}]) == [{"role": "user", "content": "x"}]  # the default
    assert h.from_native([{"role": "assistant", "content": "y"}], [{"role": "assistant", "content": "z"}]) == [
        {"role": "assistant", "content": "z"}]


def test_a_feature_finalize_and_transforms():
    result = PluginHarness(TagFeature).finalize(["done"], native=[{"role": "assistant", "content": "done"}])
    assert result.finals == [{"role": "assistant", "content": "done", "metadata": {"tag": True}}]
    assert result.native_messages == [{"role": "assistant", "content": "done"}]
    with pytest.raises(TypeError, match="no process_chunk"):
        PluginHarness(TagFeature).stream()


def test_a_provider_streams_recorded_chunks_through_process_chunk_and_finalize():
    chunks = [line for line in (RECORDINGS / "groq-tool-call.chunks.txt").read_text().splitlines() if line.strip()]
    import json

    h = PluginHarness(OpenAIProvider, {"model": "m"})
    record = h.stream([json.loads(c) for c in chunks])
    assert [c.hook for c in record.calls][-1] == "finalize"
    assert len(record.calls) == len(chunks) + 1
    assert record.finals and record.finals[-1]["role"] == "assistant"
    assert record.native_messages[-1] == record.finals[-1]
    with pytest.raises(ValueError, match="only chunks"):
        h.stream([], finals=["x"])


def test_provider_and_extension_transforms_of_a_tool_call():
    call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
    msgs = [Message(role="user", content="add"),
            {"role": "assistant", "content": "", "metadata": {"tool_calls": [call]}}]
    native = PluginHarness(OpenAIProvider, {"model": "m"}).to_native(msgs)
    out = PluginHarness(OpenAIToolsExtension, {"model": "m"}).to_native(msgs, native)
    assert out[-1]["tool_calls"][0]["function"]["name"] == "add"


def test_action_gets_session_params_and_state():
    class Act:
        name = "act"

        def process_chunk(self, chunk, partials, finals, native, state):
            return partials, finals, native, state

        def execute_action(self, action_id, session, native_messages, params, context, state):
            return {"native_messages": list(native_messages),
                    "session_metadata": {"ran": action_id, "n": params["n"], "sid": session.session_id,
                                         "source": context["trigger_source"]}}

    out = PluginHarness(Act).action("go", {"n": 2}, Session(session_id="s9"))
    assert out == {"native_messages": [], "session_metadata": {"ran": "go", "n": 2, "sid": "s9",
                                                                "source": "application"}}


def test_scripted_provider_still_imports_from_the_package():
    from agent_core.testing import reply, tool_call
    from agent_core.testing import scripted_provider as again

    assert again is scripted_provider and reply("x").content == "x" and tool_call("f")["function"]["name"] == "f"


def test_a_stream_runs_the_engines_hot_loop_so_it_ends_as_a_request_does():
    """PrefixExt behind the bundled echo provider: the harness's finals and text are the request's."""
    from agent_core import AgentCore

    chunks = [{"delta": w} for w in ("Echo:", " hi")]
    record = PluginHarness(PrefixExt, provider=EchoProvider).stream(
        chunks, native=[{"role": "user", "content": "hi"}])
    result = AgentCore(providers=[EchoProvider], extensions=[PrefixExt]).request(
        Session("s", [Message(role="user", content="hi")]), {"stream": True})
    assert record.finals[-1]["content"] == result.final_messages[-1].content == "[EXT] Echo: hi"
    assert [c.chunk for c in record.calls] == [*chunks, None]
    assert record.text == "Echo: hi"


def test_what_the_engine_refuses_per_chunk_is_refused_here_too():
    from agent_core import PluginError

    class Robot:
        name = "robot"

        def process_chunk(self, chunk, partials, finals, native, state):
            return [{"role": "robot", "content": "beep"}], finals, native, state

    with pytest.raises(PluginError, match="invalid partial") as err:
        PluginHarness(Robot).stream([{"n": 1}], partials=["a"])
    assert (err.value.plugin, err.value.hook) == ("robot", "process_chunk")


def test_an_invalid_partial_the_test_gave_is_blamed_on_the_test_not_the_extension():
    from agent_core import PluginError

    class Passes:
        name = "passes"

        def process_chunk(self, chunk, partials, finals, native, state):
            return partials, finals, native, state

    with pytest.raises(PluginError, match="invalid partial") as err:
        PluginHarness(Passes).stream([{"n": 1}], partials=[{"role": "robot", "content": "x"}])
    assert err.value.plugin == "the test's partials="


def test_an_exception_a_hook_raises_at_the_closing_call_comes_out_as_it_is():
    class Fails:
        name = "fails"

        def process_chunk(self, chunk, partials, finals, native, state):
            if chunk is None:
                raise KeyError("closing")
            return partials, finals, native, state

    with pytest.raises(KeyError, match="closing"):
        PluginHarness(Fails).stream([{"n": 1}], partials=["a"])
