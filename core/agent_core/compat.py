"""Every compatibility alias in one place: old module paths, and the original platform's method names.

The kernel was once one flat folder; its modules now live in sub-packages
(``agent_core.frozen`` is :mod:`agent_core.values.frozen`). Code written
against the old paths keeps working: :func:`install_module_aliases` registers
each old name as another name of the module that replaced it (the same module
object, so classes and identities are shared). New code imports the new paths,
or better, only :mod:`agent_core` and :mod:`agent_core.plugin_kit`.

:class:`PlatformNames` holds the methods ``AgentCore`` keeps under the original
platform's names (``send_request``, ``send_request_stream``,
``slice_session``), so the engine's own face stays the one documented API.
"""

from __future__ import annotations

import importlib
import sys
import uuid
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .values.events import Event
    from .values.messages import Session

__all__ = ["MODULE_ALIASES", "PlatformNames", "install_module_aliases"]

#: old module path -> the module that holds its code now
MODULE_ALIASES: dict[str, str] = {
    "agent_core.error_root": "agent_core.errors.root",
    "agent_core.llm_errors": "agent_core.errors.llm",
    "agent_core.store_errors": "agent_core.errors.store",
    "agent_core.frozen": "agent_core.values.frozen",
    "agent_core.vector": "agent_core.values.vector",
    "agent_core.json_values": "agent_core.values.json_values",
    "agent_core.views": "agent_core.values.views",
    "agent_core.events": "agent_core.values.events",
    "agent_core.native_history": "agent_core.values.native_history",
    "agent_core.effects": "agent_core.runtime.effects",
    "agent_core.guards": "agent_core.runtime.guards",
    "agent_core.flight": "agent_core.runtime.flight",
    "agent_core.contract": "agent_core.plugins.contract",
    "agent_core.plugin_base": "agent_core.plugins.base",
    "agent_core.tool_interop": "agent_core.plugins.tool_interop",
    "agent_core.tool_protocol": "agent_core.plugins.tool_protocol",
    "agent_core.protocols": "agent_core.plugins.protocols",
    "agent_core.hooks": "agent_core.plugins.hooks",
    "agent_core.config": "agent_core.plugins.config",
    "agent_core.config_policy": "agent_core.plugins.config_policy",
    "agent_core.plugin_core": "agent_core.plugins.core",
    "agent_core.plugin_selection": "agent_core.plugins.selection",
    "agent_core.resolution": "agent_core.plugins.resolution",
    "agent_core.chains": "agent_core.plugins.chains",
    "agent_core.lifecycle": "agent_core.plugins.lifecycle",
    "agent_core.stubs": "agent_core.plugins.stubs",
    "agent_core.tool_exec": "agent_core.tools.execute",
    "agent_core.tool_turn": "agent_core.tools.policy",
    "agent_core.tool_loop": "agent_core.tools.loop",
    "agent_core.tool_api": "agent_core.tools.api",
    "agent_core.approval": "agent_core.tools.approval",
    "agent_core.function_tool": "agent_core.tools.function",
    "agent_core.run": "agent_core.engine.run",
    "agent_core.calls": "agent_core.engine.calls",
    "agent_core.hot_loop": "agent_core.engine.hot_loop",
    "agent_core.finalize": "agent_core.engine.finalize",
    "agent_core.actions": "agent_core.engine.actions",
    "agent_core.request_injection": "agent_core.engine.request_injection",
    "agent_core.plugin_info": "agent_core.engine.info",
    # the plugin author's helpers moved into the public kit
    "agent_core.streaming": "agent_core.plugin_kit.markers",
}


def install_module_aliases() -> None:
    """Make each old module path import the module that replaced it (called once by ``agent_core``).

    The module is also set as an attribute of its parent package, as an import
    would: code that does ``import agent_core.streaming`` and then reads
    ``agent_core.streaming.MarkerScanner`` finds it.
    """
    for old, new in MODULE_ALIASES.items():
        if old not in sys.modules:
            sys.modules[old] = importlib.import_module(new)
        parent, _, child = old.rpartition(".")
        setattr(sys.modules[parent], child, sys.modules[old])


class PlatformNames:
    """``AgentCore`` methods under the original platform's names."""

    def send_request(self, session: Session, config: Mapping[str, Any] | None = None) -> tuple[Session, list[dict[str, Any]]]:
        """The original platform's name: ``(new_session, final message dicts)``."""
        result = self.request(session, config)  # type: ignore[attr-defined]
        return result.session, [m.to_dict() for m in result.final_messages]

    def send_request_stream(self, session: Session, config: Mapping[str, Any] | None = None) -> Iterator[Event]:
        """The original platform's name for ``stream_request``.

        The same events, except that every ``final`` event carries
        ``session``: the session up to and including its message, so code
        written for the original platform can take ``chunk["session"]`` from
        the last ``final``. (``done`` still comes last, with the outcome.)
        """
        return self._stream(session, config, None, final_sessions=True)  # type: ignore[attr-defined]

    def execute_session_action(self, *args: Any, **kwargs: Any) -> Any:
        """The original platform's name for ``execute_action``: the same arguments, the same ``ActionResult``."""
        return self.execute_action(*args, **kwargs)  # type: ignore[attr-defined]

    def slice_session(
        self, session: Session, start: int | None = None, end: int | None = None, *, session_id: str | None = None
    ) -> Session:
        """A temporary session holding ``session.messages[start:end]`` (the original platform's name).

        For a feature that asks the model something on the side (summarize the
        first half, classify the last message). The slice gets a fresh id (or
        ``session_id``) and the original's metadata without the stored native
        history, which describes the whole conversation and would not match.
        The original session is untouched.
        """
        from .errors import InvalidArgumentError
        from .values.messages import Session
        from .values.native_history import NATIVE_KEY

        if not isinstance(session, Session):  # checked here: this module stands below the engine
            raise InvalidArgumentError(f"slice_session expects a Session, got {type(session).__name__}",
                                       argument="session")
        meta = {k: v for k, v in session.metadata.items() if k != NATIVE_KEY}
        return Session(session_id or uuid.uuid4().hex, list(session.messages)[start:end], meta)
