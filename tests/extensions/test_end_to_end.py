"""think_tags + redact end to end: a loopback OpenAI-compatible server streams inline reasoning and a leaked key."""

from __future__ import annotations

from agent_core import AgentCore, Message
from providers._wire import oa_text

KEY = "sk-proj-9fQ2xLmN4pR7tV1wY3zA"
# cut inside the tags, inside the key's prefix and inside the key itself
PIECES = ["<th", "ink>The user pasted s", "k-proj-9fQ2x", "LmN4pR7tV1", "wY3zA; never repeat it.</t", "hink>",
          "Done. Your key s", "k-", "proj-9fQ2xLmN4pR7", "tV1wY3zA is set", ". Bye"]




def test_reasoning_in_metadata_and_the_key_masked_everywhere(server):
    server.enqueue(oa_text(*PIECES))
    core = AgentCore.discover()  # the bundled extensions load by entry point, as a user's would
    config = {"provider": "openai", "base_url": server.url + "/v1", "api_key": "sk-test-not-a-real-key-000",
              "model": "qwen3", "enabled_plugins": ["redact"], "max_retries": 0}
    reasons = core.resolve(config).reasons
    assert reasons["think_tags"].startswith("on") and reasons["redact"].startswith("on")
    session = core.add_message(core.create_session(), Message(role="user", content="set my key"))
    events = list(core.stream_request(session, config))

    partials = [e.message for e in events if e.type == "partial"]
    assert partials, "the answer streamed"
    for p in partials:
        assert "9fQ2x" not in p.content and "9fQ2x" not in str(p.metadata), p
        assert "<" not in p.content and ">" not in p.content, p
    answer = "".join(p.content for p in partials)
    reasoning = "".join(p.metadata.get("reasoning", "") for p in partials)
    assert answer == "Done. Your key [REDACTED] is set. Bye"
    assert reasoning == "The user pasted [REDACTED]; never repeat it."

    done = events[-1]
    final = done.session.messages[-1]
    assert final.role == "assistant" and final.content == answer
    assert final.metadata["reasoning"] == reasoning
    assert KEY.encode() not in done.session.to_json()  # nor in the stored native history
