"""What every bundled provider and extension does to messages, as agent_snapshot text.

Each transform is snapshotted through the public toolkit, the way a plugin
author would: the harness for ``to_native`` / ``from_native`` on one sample
conversation (a tool call and its result included), and replay_provider for
what each real recorded answer turns into through the provider and its
extensions (final messages, the native history kept for the next turn, usage
and outcome). A change in any
bundled plugin's output shows up as a diff of ``__snapshots__/test_bundled_snapshots.ambr``.
"""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest
from agent_core import NATIVE_KEY, AgentCore, Message
from agent_core.testing import SAMPLES, PluginHarness, replay_provider, reply, scripted_provider, tool_call
from agent_core.testing.scripted import ScriptProvider
from agent_core_features.file_mentions import FileMentionsFeature
from agent_core_features.otel import OtelFeature
from agent_core_features.system_prompt import SystemPromptFeature
from agent_core_features.timestamps import TimestampsFeature
from agent_core_features.title import TitleFeature
from agent_core_features.tool_policy import ToolPolicyFeature
from agent_core_features.usage import UsageFeature
from agent_core_plugins.anthropic_thinking import AnthropicThinkingExtension
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_plugins.compact_history import CompactHistoryExtension
from agent_core_plugins.openai_reasoning import OpenAIReasoningExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_plugins.redact import RedactExtension
from agent_core_plugins.think_tags import ThinkTagsExtension
from agent_core_plugins.tool_output_budget import ToolOutputBudgetExtension
from agent_core_providers.anthropic import AnthropicProvider
from agent_core_providers.echo import EchoProvider
from agent_core_providers.openai import OpenAIProvider
from agent_core_providers.openai_responses import OpenAIResponsesProvider

from .conftest import RECORDINGS

PROVIDERS = {"echo": EchoProvider, "openai": OpenAIProvider, "anthropic": AnthropicProvider,
             "openai_responses": OpenAIResponsesProvider, "scripted": ScriptProvider}
EXTENSIONS = {  # extension -> the provider it runs with
    "openai_tools": (OpenAIToolsExtension, OpenAIProvider),
    "openai_reasoning": (OpenAIReasoningExtension, OpenAIProvider),
    "anthropic_tools": (AnthropicToolsExtension, AnthropicProvider),
    "anthropic_thinking": (AnthropicThinkingExtension, AnthropicProvider),
    "think_tags": (ThinkTagsExtension, OpenAIProvider),
    "redact": (RedactExtension, OpenAIProvider),
    "tool_output_budget": (ToolOutputBudgetExtension, AnthropicProvider),
    "compact_history": (CompactHistoryExtension, OpenAIProvider),
}
FEATURES = {  # feature -> the config that switches it on (scripted requests below)
    "system_prompt": (SystemPromptFeature, {"system_prompt": "Be brief."}),
    "usage": (UsageFeature, {"prices": {"*": {"input": 1.0, "output": 2.0}}}),
    "timestamps": (TimestampsFeature, {"enabled_plugins": ["timestamps"]}),
    "tool_policy": (ToolPolicyFeature, {"tool_policy": {"*": "deny"}}),
    "title": (TitleFeature, {"enabled_plugins": ["title"]}),
    "file_mentions": (FileMentionsFeature, {"enabled_plugins": ["file_mentions"], "files_root": "/nonexistent"}),
    "otel": (OtelFeature, {"enabled_plugins": ["otel"]}),  # spans only: the messages are untouched
}
CONFIG = {"model": "snap-model"}
CONVERSATION = SAMPLES["messages"][:4]  # system, user, assistant tool call, tool result
RECORDED = sorted(p.name for p in RECORDINGS.iterdir() if p.name != "README.md")


def test_every_bundled_plugin_has_snapshots_here():
    """A new bundled provider, extension or feature must join the tables above."""
    bundled = {ep.name for group in ("agent_core.providers", "agent_core.provider_extensions", "agent_core.features")
               for ep in entry_points(group=group)}
    assert bundled == set(PROVIDERS) | set(EXTENSIONS) | set(FEATURES)


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_feature_in_a_scripted_request(name, agent_snapshot):
    feature, config = FEATURES[name]
    provider = scripted_provider(
        reply(tool_calls=[tool_call("lookup", {"q": "x"})], usage={"input_tokens": 10, "output_tokens": 2}),
        reply("Done.", usage={"input_tokens": 20, "output_tokens": 3}),
    )
    core = AgentCore(providers=[provider], features=[feature])
    session = core.add_message(core.create_session("snap"), Message(role="user", content="Look up @x please"))
    done = list(core.stream_request(session, config))[-1]
    metadata = {k: v for k, v in done.session.metadata.items() if k != NATIVE_KEY}
    assert {"final_messages": done.final_messages, "session_metadata": metadata, "outcome": done.outcome} == (
        agent_snapshot)


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_provider_to_native(name, agent_snapshot):
    assert PluginHarness(PROVIDERS[name], CONFIG).to_native(CONVERSATION) == agent_snapshot


@pytest.mark.parametrize("name", sorted(EXTENSIONS))
def test_extension_to_native(name, agent_snapshot):
    ext, provider = EXTENSIONS[name]
    native = PluginHarness(provider, CONFIG).to_native(CONVERSATION)
    assert PluginHarness(ext, CONFIG, provider=provider).to_native(CONVERSATION, native) == agent_snapshot


def test_echo_streams_word_by_word(agent_snapshot):
    assert PluginHarness(EchoProvider).stream([{"delta": "Echo:"}, {"delta": " hi"}]) == agent_snapshot


@pytest.mark.parametrize("name", RECORDED)
def test_recorded_answer(name, agent_snapshot):
    provider = "anthropic" if name.startswith("anthropic") else "openai"
    extensions = [ext for ext, prov in EXTENSIONS.values() if prov is PROVIDERS[provider]]
    core = AgentCore(providers=[replay_provider(RECORDINGS / name, provider=provider)], extensions=extensions)
    session = core.add_message(core.create_session("snap"), Message(role="user", content="hi"))
    done = list(core.stream_request(session, {**CONFIG, "max_iterations": 1}))[-1]
    native = done.session.metadata.get(NATIVE_KEY, {}).get(provider, {}).get("messages")
    shown = {"final_messages": done.final_messages, "native_messages": native, "usage": done.usage,
             "outcome": done.outcome}
    assert shown == agent_snapshot
