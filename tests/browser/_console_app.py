"""The server the console's browser tests drive: a model written in the test, real features, a real store.

The model (:func:`answer`) reads the last message: ``calculate ...`` asks for the ``echo``
tool, which the operator's ``tool_policy`` wants approved; ``slow`` streams long enough to be
cancelled; ``think`` answers with reasoning; ``xss`` answers with markup, and its tool echoes markup back;
``markdown`` answers in Markdown with a code block, ``hostile markdown`` with Markdown that would run
code were it parsed as HTML; ``flaky ...`` fails the first time a text is sent and answers the second;
anything else is answered in words. Every answer carries usage, so the ``usage`` feature has numbers
to add up. The model lists three models and says on each reply which one answered. :class:`Shortcuts` is a feature written here for what no bundled feature offers without
files on disk: completions for ``/`` commands, and a session action the console shows as a
button.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent_core import AgentCore
from agent_core.errors import LLMError
from agent_core.plugin_kit import Feature, Tool, ToolCall, success
from agent_core.testing import function_provider, reply, tool_call
from agent_core_features.timestamps import TimestampsFeature
from agent_core_features.title import TitleFeature
from agent_core_features.tool_policy import ToolPolicyFeature
from agent_core_features.usage import UsageFeature

__all__ = ["HOSTILE_MARKDOWN", "MARKDOWN", "MARKUP", "OPERATOR_CONFIG", "build_core"]

#: what a hostile model or tool would like a page to run
MARKUP = '<img src=x onerror="document.title=\'pwned\'">'

#: a reply in the Markdown models write: emphasis, a list, inline code, a link and a fenced block
MARKDOWN = (
    "The answer is **355**, and *that* is `final`.\n\n"
    "## Steps\n\n"
    "1. Read the [docs](https://example.org/docs).\n"
    "2. Run the code:\n\n"
    "```python\n"
    "def area(r):\n"
    "    return 3.14 * r * r  # **not bold**\n"
    "```\n\n"
    "| name | value |\n|---|---|\n| pi | 3.14 |\n"
)

#: Markdown whose links, images and raw HTML would run code if any of it were taken as HTML or followed
HOSTILE_MARKDOWN = (
    "Click [here](javascript:document.title='pwned') or ![x](javascript:alert(1)).\n\n"
    f"**{MARKUP}** and <script>document.title='pwned'</script>\n\n"
    "[data](data:text/html,<script>alert(1)</script>) [ok](https://example.org/\"onmouseover=\"x)\n\n"
    "```html\n</code></pre><img src=x onerror=alert(1)>\n```\n"
)

_FAILED_ONCE: set[str] = set()  # the flaky texts that have failed once already

USAGE = {"input_tokens": 12, "output_tokens": 5}
MODEL = {"model": "scripted-1"}  # the answer's model, which the usage feature prices
MODELS = ("scripted-1", "scripted-2", "scripted-3")  # what the model lists

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
    if text.startswith("markdown"):
        return reply(MARKDOWN, usage=USAGE, metadata=MODEL)
    if text.startswith("hostile markdown"):
        return reply(HOSTILE_MARKDOWN, usage=USAGE, metadata=MODEL)
    if text.startswith("flaky") and text not in _FAILED_ONCE:
        _FAILED_ONCE.add(text)
        raise LLMError("the model's upstream is overloaded (a scripted failure)", provider="model", status_code=529)
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

    A turn is cancelled between two chunks, so a slow turn has to keep sending them. A reply
    names the model the request chose (``config["model"]``), as a real provider's does.
    """

    def get_models(self, config: Any) -> list[dict[str, Any]]:
        return [{"id": name} for name in MODELS]

    def get_config_schema(self) -> dict[str, Any]:
        return {"model": {"type": "string", "default": MODELS[0], "description": "The model that answers."}}

    async def astream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Any:
        chosen = (state.get("config") or {}).get("model")
        if not str(native_messages[-1].get("content") or "").startswith("slow"):
            async for chunk in super().astream_api(native_messages, state, request_id=request_id):
                if chosen and "final" in chunk:
                    final = chunk["final"]
                    chunk = {**chunk, "final": {**final, "metadata": {**(final.get("metadata") or {}), "model": chosen}}}
                yield chunk
            return
        for i in range(600):
            yield {"delta": f"word{i}" + ("\n\n" if i % 6 == 5 else " ")}  # paragraphs: the reply grows downwards
            await asyncio.sleep(0.1)
        yield {"end": True, "final": {"role": "assistant", "content": "never reached"}}


def build_core() -> AgentCore:
    return AgentCore(providers=[Model], tools=[EchoTool],
                     features=[ToolPolicyFeature, TimestampsFeature, UsageFeature, TitleFeature, Shortcuts])
