"""The public surface, locked, with a reason per name: adding or removing one is a deliberate act.

Three lists: ``agent_core`` (what an application uses), ``agent_core.plugin_kit`` (what a
plugin author builds with) and ``agent_core.host_kit`` (semi-public: what only code hosting
the engine needs, the testing kit's harness, the store and the server). A name without a
reason a user of its list would give does not belong on that list.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import agent_core
import agent_core.host_kit as host_kit
import agent_core.plugin_kit as plugin_kit
import pytest

PUBLIC: dict[str, str] = {
    # running requests
    "AgentCore": "the engine an application holds: requests, actions, sessions, plugin info",
    "RequestResult": "what a non-streamed request returns: the new session, its events and outcome",
    "ActionResult": "what a session action returns",
    "RequestObserver": "the callbacks an application hands a request to watch it (metrics, traces)",
    "ApprovalRequest": "what an approval callback is asked before a tool call runs",
    "ConfigPolicy": "which keys of a request's own config may override the operator's",
    "Resolution": "which plugins run for a config, and why: what resolve() answers",
    "PluginRef": "one plugin of a Resolution, comparing equal to its name",
    "PluginCore": "what a plugin reaches through context['core']: sessions and side requests",
    # values
    "Message": "one message of a conversation, frozen",
    "PartialMessage": "a streamed piece of a message, carried by a partial event",
    "Session": "a conversation: frozen messages and metadata, the unit every request takes",
    "ToolDescriptor": "a tool's schema as offered for one request",
    "Role": "the type of a message's role",
    "ROLES": "the roles a message may have, for code that checks one",
    "NATIVE_KEY": "the session metadata key that holds a provider's stored native history",
    "FrozenDict": "the mapping every value hands a plugin: reads as a dict, refuses writes",
    "FrozenList": "the list every value hands a plugin: reads as a list, refuses writes",
    "FrozenVector": "a session's messages: persistent, shares structure as a session grows",
    "freeze": "makes any JSON-like value frozen, for code that builds values by hand",
    "thaw": "gives plain dicts and lists back, for code that must mutate a copy",
    # events
    "Event": "the union a streamed request yields",
    "StartEvent": "first event of every request",
    "PartialEvent": "a streamed piece of an answer",
    "RetractEvent": "the partials before it are void: the stream started over",
    "RetryingEvent": "a failed provider call will be tried again after a delay",
    "AnsweredEvent": "the upstream API has answered: its first chunk arrived",
    "FinalEvent": "a message the request adds to the session",
    "ToolCallEvent": "a tool call about to run",
    "ToolProgressEvent": "a part streamed by a running tool",
    "ToolResultEvent": "a tool call's result, as stored",
    "UserMessageEvent": "a message for the user (not the model) from a tool_pre action",
    "ErrorEvent": "the request failed: the error, typed",
    "DoneEvent": "last event of every request: the new session and the outcome",
    "Outcome": "how a request ended (finished, or stopped with a reason), carried by done",
    "ErrorInfo": "an error as an event carries it: type, message, what to do",
    "Usage": "tokens summed over a request's provider calls",
    "StreamRetry": "what a provider's stream yields to start over, so the engine voids the partials",
    "encode_event": "an event as JSON, for a transport",
    "decode_event": "JSON back into an event, for a client",
    # plugin protocols and the provider base
    "ProviderPlugin": "the provider hooks as a Protocol, for type checking a provider",
    "ProviderExtensionPlugin": "the extension hooks as a Protocol, for type checking",
    "FeaturePlugin": "the feature hooks as a Protocol, for type checking",
    "ToolPlugin": "the tool hooks as a Protocol, for type checking",
    "BaseProvider": "the one way to write a provider: subclass it, write the hooks you need",
    "BasePlugin": "the defaults every kind shares; the kit classes build on it",
    "BaseProviderExtension": "the extension defaults the kit's Extension builds on",
    "BaseFeature": "the feature defaults the kit's Feature builds on",
    "BaseTool": "the tool defaults the kit's Tool builds on",
    "InspectedToolCall": "a tool call as the interop table reads it, handed to tools that route",
    "ToolInteropContribution": "what a plugin adds to the tool interop table",
    # errors and warnings
    "AgentCoreError": "the root of every error agent-core raises",
    "ConfigError": "a config that cannot be used, naming the key",
    "ConfigNotAllowedError": "a client set a config key its policy does not allow",
    "PluginError": "a plugin's hook failed or answered wrong, naming plugin and hook",
    "SecretInSessionError": "a declared secret found in what a call or tool would add to the session",
    "AsyncOnlyHookError": "a sync request met a hook that only runs async",
    "InvalidValueError": "a value that cannot be frozen or carried as JSON",
    "MissingFieldError": "a serialised value without a field it needs",
    "InvalidArgumentError": "a call to AgentCore with an argument it cannot take",
    "ActionInputError": "an action's input that its schema refuses",
    "RequestInFlightError": "a request id already running",
    "LLMError": "the root of what a provider reports of the model's API",
    "AuthenticationError": "the API refused the key",
    "RateLimitError": "the API asks to slow down",
    "RedirectError": "the API answered a redirect, never followed: its status and Location",
    "QuotaExceededError": "the account is out of quota",
    "ContextLengthError": "the conversation is too long for the model",
    "ContentFilterError": "the API's filter refused the content",
    "InvalidRequestError": "the API refused the request as malformed",
    "MalformedResponseError": "the API answered something that is not its protocol",
    "EmptyResponseError": "the API answered nothing",
    "LLMTimeoutError": "the API did not answer in time",
    "ProviderUnavailableError": "the API cannot be reached or is down",
    "MissingAPIKeyError": "no key configured for a provider that needs one",
    "ProviderRequestCancelled": "the request was cancelled while the provider was calling",
    "UpstreamDetail": "the API's own account of a failure, kept on the LLMError",
    "StoreError": "the root of the session store's errors",
    "StoreUnavailableError": "the store's database cannot be reached",
    "SessionNotFoundError": "no stored session by that id",
    "ConflictError": "a write based on a revision no longer the latest; nothing written",
    "CorruptRecordError": "a stored record that cannot be read back",
    "SchemaVersionError": "a store written by a newer agent-core",
    "UnknownConfigKeyWarning": "a config key no plugin declares (with the closest name)",
    "UnknownHookWarning": "a plugin method named almost like a hook",
    "__version__": "the package version",
}

KIT: dict[str, str] = {
    # the kit classes: the one way to write each kind (a provider subclasses agent_core.BaseProvider)
    "Extension": "the class a provider extension subclasses; fixed hooks as class attributes",
    "Feature": "the class a feature subclasses; fixed hooks as class attributes",
    "Tool": "the class a tool subclasses; its hooks take one ToolCall",
    "ToolCall": "the one value a kit tool's hooks take",
    "success": "a tool's successful result",
    "failure": "a tool's error result",
    # streamed text
    "Hit": "a marker MarkerScanner found",
    "MarkerScanner": "finds markers in text cut at any point (think tags, say)",
    "push": "adds a streamed piece to accumulated text at O(1)",
    "pushed": "a state with one key's text grown by a piece, kept frozen when handed in frozen",
    "text_of": "the text of accumulated pieces",
    # finals and metadata
    "replace_final": "one final replaced, the native history in step",
    "rewrite_finals": "finals rewritten, the native history in step",
    "rewrite_last_assistant": "the last assistant final rewritten",
    "annotate": "extras read from native messages put in the finals' metadata",
    "reasoning_partial": "a partial that carries reasoning, not content",
    # a history as a tool extension sends it
    "ToolTurn": "one history message with the tool calls it made and whether it answers a cut call",
    "tool_turns": "walks a history, leaving out calls never made and marking their results",
    # hook signatures
    "ChunkOutput": "what process_chunk returns, for a signature",
    "Dict": "a message, state or config mapping, for a signature",
    "Msgs": "a list of messages, for a signature",
    # tool formats
    "ANTHROPIC": "the name of Anthropic's tool schema format",
    "OPENAI_CHAT": "the name of OpenAI's Chat Completions tool format",
    "JSON_SCHEMA": "the name of a bare JSON Schema tool format",
    "SchemaAdapter": "what a plugin adds to convert a schema to a format it accepts",
    "ToolCallReader": "what a plugin adds to read tool calls in a format it emits",
    "adapt_schema": "a schema converted between the built-in formats",
    "detect_schema_format": "tells which format a schema is in",
    # a plugin that does I/O (a provider)
    "Call": "the effect a flow yields to call a function (sync or awaited)",
    "OpenIter": "the effect that opens an iterator (sync or async), for a Pump to read",
    "Pump": "the effect that feeds every item of an open iterator to a step",
    "EffectCancelled": "raised into a flow when a guarded effect stopped waiting on a cancel",
    "EffectTimeout": "raised into a flow when a guarded effect overran its time limit",
    "drive_sync": "runs a flow synchronously",
    "drive_async": "runs the same flow on an event loop",
    "FlowStream": "a provider's flow handed to the engine as an async iterator it reads in batches",
    # declared UI and tool policy
    "ConfigElement": "a config control a plugin declares for a UI",
    "MessageFooter": "a footer a plugin declares under messages",
    "SessionAction": "an action button a plugin declares for a session",
    "StatusBar": "a status item a plugin declares",
    "TOOL_PRE_VERDICTS": "what a tool_pre action may answer",
}

HOST: dict[str, str] = {
    "HotLoop": "the engine's per-chunk loop, which the harness runs a plugin's chunks through",
    "CancellationToken": "the flag the harness hands a hot loop, as a request does",
    "NativeView": "the natives read in the core shape, as the closing step hands them",
    "viewing": "builds that view for the harness",
    "RequestConfig": "the mapping a request's config is, whose miss names the fix",
    "effective_config": "a config with a schema's defaults filled in and types checked",
    "parse_schema": "a plugin's declared config schema read",
    "final_fault": "why a value cannot be a final, in the engine's words (contract checks)",
    "read_verdict": "what the engine says of a tool_pre answer (contract checks)",
    "misread_natives": "what the engine tells an extension that read natives as core messages (contract checks)",
    "ui_element_fault": "why a value is no UI element, in the engine's words (contract checks)",
    "ENGINE_KEYS": "the config keys the engine reads itself (the server)",
    "DEFAULT_CLIENT_KEYS": "the keys a client may set unless told otherwise (the server)",
    "complete_sync": "runs a flow of effects for its value on this thread (the store's lease wait)",
    "complete_async": "runs the same flow for its value on an event loop",
    "prefix_digest": "which stored native history a session's messages continue (the store)",
    "without_native_history": "a session without that record (the server)",
}

def test_agent_cores_names_are_locked_each_with_its_reason() -> None:
    assert len(agent_core.__all__) == len(set(agent_core.__all__)), "duplicate names in agent_core.__all__"
    assert sorted(agent_core.__all__) == sorted(PUBLIC)


def test_the_plugin_kits_names_are_locked_each_with_its_reason() -> None:
    assert sorted(plugin_kit.__all__) == sorted(KIT)


def test_the_host_kits_names_are_locked_each_with_its_reason() -> None:
    assert sorted(host_kit.__all__) == sorted(HOST)


def test_a_name_has_one_home_and_every_reason_says_something() -> None:
    assert set(PUBLIC) & set(KIT) == set() and set(KIT) & set(HOST) == set() and set(PUBLIC) & set(HOST) == set()
    assert [n for lst in (PUBLIC, KIT, HOST) for n, why in lst.items() if len(why.split()) < 3] == []


@pytest.mark.parametrize("module, names", [("agent_core", PUBLIC), ("agent_core.plugin_kit", KIT),
                                           ("agent_core.host_kit", HOST)])
def test_every_name_imports_and_star_import_gives_the_list(module: str, names: dict[str, str]) -> None:
    mod = importlib.import_module(module)
    namespace: dict[str, object] = {}
    exec(f"from {module} import *", namespace)
    assert set(names) <= {k for k in namespace if k != "__builtins__"} == set(mod.__all__)
    assert all(namespace[n] is getattr(mod, n) for n in names)


@pytest.mark.parametrize(
    "module",
    ["agent_core.errors", "agent_core.values.frozen", "agent_core.plugins.protocols", "agent_core.store",
     "agent_core.plugins.tool_interop", "agent_core.types"],
)
def test_module_all_entries_exist(module: str) -> None:
    mod = importlib.import_module(module)
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert missing == []


def test_the_original_platforms_method_names_stay_on_agent_core() -> None:
    """``PlatformNames`` is the original platform's documented API: its names stay on AgentCore."""
    for name in ("send_request", "send_request_stream", "slice_session", "execute_session_action"):
        assert callable(getattr(agent_core.AgentCore, name))


def test_the_installed_distribution_has_the_version_the_package_says() -> None:
    """The version is written once, in ``agent_core.__version__``; the build reads it from there."""
    from importlib.metadata import version

    assert version("agent-core") == agent_core.__version__
