"""Test helpers for plugin authors (and for agent-core's own tests).

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
here imports syrupy or hypothesis; ``docs/writing-plugins.md`` is the guide.
"""

from agent_core.errors import PluginContractError

from .contract import SAMPLES, check_plugin
from .harness import FinalizeResult, HookCall, PluginHarness, StreamRecord, plugin_kind
from .render import render
from .replay import recording_provider, replay_provider
from .scripted import ScriptedTurn, reply, scripted_provider, tool_call

__all__ = [
    "SAMPLES",
    "FinalizeResult",
    "HookCall",
    "PluginContractError",
    "PluginHarness",
    "ScriptedTurn",
    "StreamRecord",
    "check_plugin",
    "plugin_kind",
    "recording_provider",
    "render",
    "replay_provider",
    "reply",
    "scripted_provider",
    "tool_call",
]
