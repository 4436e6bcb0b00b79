"""``file_mentions``: @path completion and inlining, confined to ``files_root``."""

from __future__ import annotations

import pytest
from agent_core import AgentCore, Message
from agent_core.testing import PluginHarness, check_plugin
from agent_core_features.file_mentions import FileMentionsFeature, mentions
from agent_core_providers.echo import EchoProvider


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('app')\n")
    (root / "src" / "api.py").write_text("print('api')\n")
    (root / "README.md").write_text("# Demo\n" + "x" * 200 + "\n")
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    (root / "leak").symlink_to(tmp_path / "secret.txt")
    return root


class Spy:
    """Keeps what the provider is about to be sent."""

    name = "spy"
    priority = 500
    seen: list = []

    def initialize_request(self, native_messages, state):
        Spy.seen.append([dict(m) for m in native_messages])
        return native_messages, state


def test_file_mentions_keeps_the_hook_contract():
    check_plugin(FileMentionsFeature)


def test_mentions_are_found_once_without_trailing_punctuation():
    assert mentions("see @src/app.py, and @README.md; again @src/app.py. mail a@b.c") == ["src/app.py", "README.md"]


def test_completions_and_applying_one(tree):
    core = AgentCore(providers=[EchoProvider], features=[FileMentionsFeature])
    config = {"files_root": str(tree), "enabled_plugins": ["file_mentions"]}
    got = core.get_completions(config, "look at @src/a")
    assert [c["text"] for c in got] == ["@src/api.py", "@src/app.py"]
    assert all(c["plugin"] == "file_mentions" and c["kind"] == "file" for c in got)
    assert core.apply_completion(config, "look at @src/a", got[1]) == "look at @src/app.py "
    top = core.get_completions(config, "@")
    assert [c["text"] for c in top] == ["@README.md", "@src/"]  # the link leading outside is not offered
    assert core.apply_completion(config, "@s", top[1]) == "@src/"
    assert core.get_completions(config, "@../") == [] and core.get_completions(config, "no mention") == []


def test_mentioned_files_are_inlined_for_the_model_and_hostile_paths_refused(tree):
    Spy.seen = []
    core = AgentCore(providers=[EchoProvider], features=[FileMentionsFeature, Spy])
    text = "compare @src/app.py with @../../etc/passwd and @leak and @README.md"
    session = core.add_message(core.create_session(), Message(role="user", content=text))
    result = core.request(session, {"files_root": str(tree), "file_mentions_max_bytes": 50,
                                    "enabled_plugins": ["file_mentions"]})
    sent = Spy.seen[-1][0]["content"]
    assert sent.startswith(text + "\n\n")
    assert "<file path=\"src/app.py\">\nprint('app')\n\n</file>" in sent
    assert "'..' is not allowed" in sent and "a symlink leads outside files_root" in sent
    assert "[cut at 50 bytes]" in sent and "TOP SECRET" not in sent
    assert result.session.messages[0].content == text  # the user's message is kept as typed
    assert result.session.messages[1].content.startswith("Echo: compare")


def test_the_harness_leaves_messages_without_mentions_alone(tree):
    harness = PluginHarness(FileMentionsFeature, {"files_root": str(tree)})
    msgs = [{"role": "user", "content": "plain"}, {"role": "assistant", "content": "@src/app.py"}]
    assert harness.to_native(msgs) == msgs
