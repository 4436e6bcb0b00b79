"""Metadata an extension puts on a final reaches the session, and a rewrite keeps the native history in step
whatever the chain order."""

from __future__ import annotations

from typing import Any

from agent_core import NATIVE_KEY, AgentCore
from agent_core.plugin_kit import rewrite_finals
from agent_core_providers.echo import EchoProvider


class Tagger:
    """Marks each final it sees in the closing step (metadata only)."""

    name = "tagger"
    priority = 10

    def process_chunk(self, native_chunk: Any, partials: Any, finals: Any, native: Any, state: Any) -> Any:
        if native_chunk is not None or not finals:
            return partials, finals, native, state
        tagged, native = rewrite_finals(finals, native, lambda m: {**m, "metadata": {"checked_by": "tagger"}})
        return partials, tagged, native, state


class Upper:
    """Rewrites the finals but not the native history (as a careless extension might)."""

    name = "upper"
    priority = 10

    def process_chunk(self, native_chunk: Any, partials: Any, finals: Any, native: Any, state: Any) -> Any:
        if native_chunk is not None or not finals:
            return partials, finals, native, state
        return partials, [{**m, "content": str(m.get("content", "")).upper()} for m in finals], native, state


class Mask:
    """Masks a word in the finals and keeps the native history in step, with the kit."""

    name = "mask"
    priority = 20

    def process_chunk(self, native_chunk: Any, partials: Any, finals: Any, native: Any, state: Any) -> Any:
        if native_chunk is not None or not finals:
            return partials, finals, native, state
        masked, native = rewrite_finals(
            finals, native, lambda m: {**m, "content": str(m.get("content", "")).replace("SECRET", "******")})
        return partials, masked, native, state


def _run(*extensions: Any) -> Any:
    core = AgentCore(providers=[EchoProvider], extensions=list(extensions))
    return core.request(core.add_message(core.create_session(), "user", "the secret word"), {"provider": "echo"})


def test_metadata_an_extension_sets_on_a_final_survives_the_default_conversion() -> None:
    result = _run(Tagger)
    assert result.session.messages[-1].metadata.get("checked_by") == "tagger"


def test_a_rewrite_reaches_the_native_history_even_after_another_extension_changed_the_final() -> None:
    result = _run(Upper, Mask)
    assert result.session.messages[-1].content == "ECHO: THE ****** WORD"
    native = result.session.metadata[NATIVE_KEY]["echo"]["messages"]
    assert native[-1]["content"] == "ECHO: THE ****** WORD"  # not the unmasked word, whatever ran first
