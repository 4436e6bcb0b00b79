"""Test helpers for plugin authors (and for agent-core's own tests).

* :func:`function_provider`: a provider whose turns a function computes from the messages;
* :func:`scripted_provider` / :func:`reply` / :func:`tool_call`: a provider
  that plays scripted model turns, to drive the whole pipeline offline;
* :class:`PluginHarness`: one plugin's hooks in isolation, plain values in and out;
* :func:`check_plugin`: the hook contract in one line, failing with
  :class:`PluginContractError` (an ``AssertionError``);
* :func:`render`: the stable text the ``agent_snapshot`` fixture stores;
* :func:`replay_provider`: a bundled provider answering from a recorded body;
* :mod:`agent_core.testing.strategies`: hypothesis strategies (import it
  explicitly; it needs the ``testing`` extra).

The ``agent_snapshot`` pytest fixture comes from
:mod:`agent_core.testing.pytest_plugin`, registered by entry point. Nothing
here imports syrupy or hypothesis, and httpx only once a replay is asked for
(the pytest plugin loads this package in every pytest run, and the engine
itself does no I/O); ``docs/writing-plugins.md`` is the guide.
"""

from ..errors import PluginContractError
from .contract import SAMPLES, check_plugin
from .harness import FinalizeResult, HookCall, PluginHarness, StreamRecord, plugin_kind
from .render import render
from .scripted import ScriptedTurn, function_provider, reply, scripted_provider, tool_call

__all__ = [
    "SAMPLES",
    "FinalizeResult",
    "HookCall",
    "PluginContractError",
    "PluginHarness",
    "ScriptedTurn",
    "StreamRecord",
    "check_plugin",
    "function_provider",
    "plugin_kind",
    "recording_provider",
    "render",
    "replay_provider",
    "reply",
    "scripted_provider",
    "tool_call",
]


def __getattr__(name: str) -> object:
    if name in ("recording_provider", "replay_provider"):
        from . import replay

        return getattr(replay, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
