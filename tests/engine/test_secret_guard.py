"""A declared secret's value never reaches a session, an event or the native history it keeps.

Only the plugin declaring a secret key is handed its value; a provider that keeps it in the shared
state lets a feature copy it anywhere. The engine looks for each secret value in what every provider
call adds (finals, their native form, response_finalize metadata) and stops the request with a
SecretInSessionError naming the declaring plugin and the key, leaving the caller's session as it was.
"""

from __future__ import annotations

import pytest
from agent_core import AgentCore, Message, encode_event
from agent_core.errors import PluginError, SecretInSessionError
from agent_core.plugin_kit import Feature, Tool, ToolCall, failure
from agent_core.testing import reply, scripted_provider, tool_call

KEY = "sk-live-0123456789abcdef"


class Keeper:
    """A provider that keeps its whole config, secret included, in the shared state (the mistake)."""

    name = "keeper"
    leak_native = False

    def get_config_schema(self):
        return {"keeper_api_key": {"type": "string", "secret": True, "default": ""}}

    def init(self, config):
        return {"config": dict(config)}

    def stream_api(self, native_messages, state):
        yield {"text": "hello"}

    def process_chunk(self, chunk, native_messages, state):
        return [{"role": "assistant", "content": chunk["text"]}], [], native_messages, {**state, "said": chunk["text"]}

    def call_api(self, native_messages, state):
        return [], [], native_messages, {**state, "said": "hello"}

    def finalize(self, native_messages, state):
        final = {"role": "assistant", "content": state["said"]}
        if self.leak_native:
            final["sent_with"] = state["config"]["keeper_api_key"]
        return [final], [*native_messages, final], state


class LeaksNative(Keeper):
    leak_native = True


class CopiesIt(Feature):
    """Copies what it finds in the provider's state into the final's metadata, as a debugging feature might."""

    name = "copies_it"

    def finalize(self, final_messages, native_messages, state, *, context=None):
        config = dict(state.get("config") or {})
        return [{**m, "metadata": {**(m.get("metadata") or {}), "seen_config": config}} for m in final_messages], \
            native_messages, state


class NotesIt(Feature):
    """A response_finalize action that writes the provider's config into the session metadata."""

    name = "notes_it"
    actions = [{"id": "note", "label": "note", "trigger": "response_finalize"}]

    def execute_action(self, action_id, session, native_messages, params, context, state):
        return {"session_metadata": {"provider_config": dict(state.get("config") or {})}}


def run(provider, features=(), config=None, *, stream=True):
    core = AgentCore(providers=[provider], features=list(features))
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    events = list(core.stream_request(session, {"keeper_api_key": KEY, "stream": stream, **(config or {})}))
    return session, events


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(("provider", "features", "where"), [
    (Keeper, [CopiesIt], "a final message"),
    (LeaksNative, [], "the native history"),
    (Keeper, [NotesIt], "the session metadata a response_finalize action set"),
])
def test_a_secret_in_what_a_call_adds_stops_the_request_without_reaching_an_event(provider, features, where, stream):
    session, events = run(provider, features, stream=stream)
    done = events[-1]
    assert (done.outcome.status, done.outcome.reason) == ("stopped", "plugin_error")
    assert done.session == session  # the caller's session, untouched
    assert "keeper_api_key" in done.outcome.detail and where in done.outcome.detail
    assert all(e.type != "final" for e in events)
    assert not any(KEY.encode() in encode_event(e) for e in events)


def test_request_raises_the_typed_error_naming_the_declaring_plugin_and_the_key():
    core = AgentCore(providers=[Keeper], features=[CopiesIt])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    with pytest.raises(SecretInSessionError) as got:
        core.request(session, {"keeper_api_key": KEY})
    err = got.value
    assert isinstance(err, PluginError)
    assert (err.plugin, err.key) == ("keeper", "keeper_api_key") and err.where.startswith("a final message")
    assert "keep the secret on the plugin instance" in str(err) and KEY not in str(err)


class OnTheInstance(Keeper):
    """The fix: the key stays on the instance, and the state holds the rest of the config."""

    name = "keeper"

    def init(self, config):
        self._key = config["keeper_api_key"]
        return {"config": {k: v for k, v in config.items() if k != "keeper_api_key"}}


def test_a_provider_keeping_its_key_on_the_instance_runs_with_the_same_features():
    _, events = run(OnTheInstance, [CopiesIt, NotesIt])
    done = events[-1]
    assert done.outcome.status == "finished"
    assert done.session.messages[-1].metadata["seen_config"]["stream"] is True
    assert KEY not in repr(done.session.to_dict())


def test_a_short_secret_is_not_searched_for_ordinary_text_would_match_it():
    _, events = run(Keeper, [CopiesIt], {"keeper_api_key": "hel"})
    assert events[-1].outcome.status == "finished"


class Lookup(Tool):
    """A tool with a key of its own that echoes its request URL into an error, key and all (the mistake)."""

    name = "lookup"
    config_schema = {"lookup_api_key": {"type": "string", "secret": True, "default": ""}}

    def get_tool_schemas(self, state):
        return [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]

    def run(self, call: ToolCall):
        return failure(f"GET https://api.example/find?key={call.config['lookup_api_key']} answered 500")


def test_a_secret_in_a_tool_result_stops_the_request_before_its_event():
    model = scripted_provider(reply(tool_calls=[tool_call("lookup", {})]), reply("Done."))
    core = AgentCore(providers=[model], tools=[Lookup])
    session = core.add_message(core.create_session(), Message(role="user", content="find it"))
    events = list(core.stream_request(session, {"lookup_api_key": KEY}))
    done = events[-1]
    assert (done.outcome.status, done.outcome.reason) == ("stopped", "plugin_error")
    assert "'lookup'" in done.outcome.detail and "'execute_tool'" in done.outcome.detail
    assert "lookup_api_key" in done.outcome.detail and done.session == session
    assert all(e.type != "tool_result" for e in events)
    assert not any(KEY.encode() in encode_event(e) for e in events)
