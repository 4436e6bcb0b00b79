"""The server the console's browser tests drive: a model written in the test, real features, a real store.

The model (:func:`answer`) reads the last message: ``calculate ...`` asks for the ``echo``
tool, which the operator's ``tool_policy`` wants approved; ``slow`` streams long enough to be
cancelled; ``think`` answers with reasoning; ``xss`` answers with markup, and its tool echoes markup back; anything else is
answered in words. Every answer carries usage, so the ``usage`` feature has numbers to add
up. :class:`Shortcuts` is a feature written here for what no bundled feature offers without
files on disk: completions for ``/`` commands, and a session action the console shows as a
button.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent_core import AgentCore
from agent_core.plugin_kit import Feature, Tool, ToolCall, success
from agent_core.testing import function_provider, reply, tool_call
from agent_core_features.timestamps import TimestampsFeature
from agent_core_features.title import TitleFeature
from agent_core_features.tool_policy import ToolPolicyFeature
from agent_core_features.usage import UsageFeature

__all__ = ["MARKUP", "OPERATOR_CONFIG", "build_core"]

#: what a hostile model or tool would like a page to run
MARKUP = '<img src=x onerror="document.title=\'pwned\'">'

USAGE = {"input_tokens": 12, "output_tokens": 5}
MODEL = {"model": "scripted-1"}  # the answer's model, which the usage feature prices

#: the operator's config: the model here, its tool asks first; clients may set the approval timeout
OPERATOR_CONFIG: dict[str, Any] = {
    "provider": "model", "tool_policy": {"echo": "ask"}, "enabled_plugins": ["echo", "timestamps", "title"],
    "prices": {"scripted-1": {"input": 1.0, "output": 2.0}},
}


async def answer(messages: list[dict[str, Any]]) -> Any:
    last = messages[-1]
    text = str(last.get("content") or "")
    if last["role"] == "tool":
        return reply(f"The tool said: {text}", usage=USAGE, metadata=MODEL)
    if text.startswith("calculate"):
        return reply("Let me ask the tool.", tool_calls=[tool_call("echo", {"text": "6 * 7 = 42"}, id="call_1")],
                     usage=USAGE, metadata=MODEL)
    if text.startswith("think"):
        return reply("Forty-two.", usage=USAGE, metadata={**MODEL, "reasoning": "Six times seven is forty-two."})
    if text.startswith("xss"):
        return reply(f"Here is markup: {MARKUP}",
                     tool_calls=[tool_call("echo", {"text": MARKUP}, id="call_x")], usage=USAGE, metadata=MODEL)
    return reply(f"You said: {text}", usage=USAGE, metadata=MODEL)


class EchoTool(Tool):
    name = "echo"
    default_enabled = False

    def get_tool_schemas(self, state: Any) -> list[dict[str, Any]]:
        return [{"type": "function", "function": {"name": "echo", "description": "Say the text back.", "parameters": {
            "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}]

    def run(self, call: ToolCall) -> Any:
        return success(str(call.arguments.get("text")))


class Shortcuts(Feature):
    name = "shortcuts"
    version = "1.0.0"
    ui_elements = ({"ui_type": "status_bar", "data": "session.metadata.pinned", "template": "pinned",
                    "label": "Pin"},)
    actions = ({"id": "pin", "label": "Pin this session"},)

    def get_completions(self, config: Any, text: str) -> list[dict[str, Any]]:
        word = text.rsplit(" ", 1)[-1]
        if not word.startswith("/"):
            return []
        return [{"text": c, "label": c, "replace": word} for c in ("/calculate", "/clear") if c.startswith(word)]

    def apply_completion(self, config: Any, text: str, completion: Any) -> str:
        return ""  # the console replaces the word itself (the completion's "replace")

    def execute_action(self, action_id: str, session: Any, native_messages: Any, params: Any, context: Any,
                       state: Any) -> dict[str, Any]:
        return {"native_messages": list(native_messages), "session_metadata": {"pinned": True}}


class Model(function_provider(answer, name="model")):  # type: ignore[misc]
    """:func:`answer`, except that ``slow`` streams a word every tenth of a second for a minute.

    A turn is cancelled between two chunks, so a slow turn has to keep sending them.
    """

    async def astream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Any:
        if not str(native_messages[-1].get("content") or "").startswith("slow"):
            async for chunk in super().astream_api(native_messages, state, request_id=request_id):
                yield chunk
            return
        for i in range(600):
            yield {"delta": f"word{i} "}
            await asyncio.sleep(0.1)
        yield {"end": True, "final": {"role": "assistant", "content": "never reached"}}


def build_core() -> AgentCore:
    return AgentCore(providers=[Model], tools=[EchoTool],
                     features=[ToolPolicyFeature, TimestampsFeature, UsageFeature, TitleFeature, Shortcuts])
