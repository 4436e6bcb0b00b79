"""The engine's calls outside requests: tools, UI, completions and actions.

:class:`AgentCore` inherits these from :class:`EngineCalls`; each checks its
arguments, resolves the plugins for the config (``self.resolve``) and hands
the work to the module that does it (:mod:`agent_core.tools.api`,
:mod:`agent_core.engine.info`, :mod:`agent_core.engine.actions`); contexts carry
the engine's narrow face (:class:`~agent_core.plugins.core.PluginCore`) as
``core``, never the engine itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ActionInputError, ConfigError, InvalidArgumentError
from ..plugins.core import PluginCore
from ..plugins.hooks import KINDS, PluginSpec
from ..plugins.lifecycle import REQUEST_TRIGGERS
from ..plugins.resolution import Resolution
from ..tools.api import catalog, run_calls, tool_schemas
from ..values.messages import Message, Session, ToolDescriptor
from .actions import ActionResult, execute_action, execute_lifecycle, list_actions
from .info import apply_completion, completions, config_schema, ui_schema

__all__ = ["EngineCalls", "check_config", "check_kind", "check_session"]


class EngineCalls:
    """Calls an application makes outside requests (mixed into :class:`~agent_core.AgentCore`)."""

    _specs: dict[str, tuple[PluginSpec, ...]]

    def resolve(self, config: Mapping[str, Any] | None = None, *, session: Session | None = None) -> Resolution:
        raise NotImplementedError  # AgentCore.resolve

    def _in_flight(self, request_id: str, config: Mapping[str, Any] | None) -> Any:
        raise NotImplementedError  # AgentCore._in_flight

    # -- tools ----------------------------------------------------------------

    def get_tool_descriptors(self, config: Mapping[str, Any] | None = None) -> list[ToolDescriptor]:
        """The tools a request with ``config`` would offer, after features' ``prepare_tools``.

        Each :class:`ToolDescriptor` names its plugin and keeps the schema in
        the tool's own format.

        Raises:
            ConfigError: two offered tools share a name, or a schema is unreadable.
        """
        return list(catalog(self.resolve(config), PluginCore(self), prepare=True)[1])

    def get_tool_schemas(self, config: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The tool schemas a request with ``config`` sends (the original platform's shape).

        Plain dicts, adapted to a format the provider accepts, exactly as they
        reach the provider in ``config["tools"]``. :meth:`get_tool_descriptors`
        gives the same tools with their plugins.
        """
        return tool_schemas(self.resolve(config), PluginCore(self))

    def execute_tool_calls(
        self, session: Any, tool_calls: Any = None, config: Mapping[str, Any] | None = None
    ) -> Any:
        """Run tool calls outside a request, for applications with their own loop.

        ``execute_tool_calls(session, calls, config)`` returns one ``tool``
        :class:`Message` per call (append them with ``session.with_messages``).
        The original platform's two-argument form ``execute_tool_calls(calls,
        config)`` returns message dicts (``role``, ``content``, ``metadata``)
        for ``add_message(session, m["role"], m["content"], m.get("metadata"))``.
        Failures become error results, as in a request. Lifecycle actions do
        not run here.

        Raises:
            InvalidArgumentError: the arguments fit neither form, or ``tool_calls``
                is not a list of tool-call mappings.
            ConfigError: ``config`` is not a mapping or cannot work.
        """
        if not isinstance(session, Session):
            if config is not None:
                raise InvalidArgumentError(
                    "execute_tool_calls takes (session, tool_calls, config) or (tool_calls, config)",
                    argument="session",
                )
            messages = self._execute_tool_calls(Session("execute_tool_calls"), session, tool_calls)
            return [m.to_dict() for m in messages]
        return self._execute_tool_calls(session, tool_calls or (), config)

    def _execute_tool_calls(
        self, session: Session, tool_calls: Sequence[Mapping[str, Any]], config: Mapping[str, Any] | None
    ) -> list[Message]:
        if isinstance(tool_calls, (str, bytes, Mapping)) or not isinstance(tool_calls, Sequence) or not all(
            isinstance(c, Mapping) for c in tool_calls
        ):
            raise InvalidArgumentError(
                f"tool_calls must be a list of tool-call dicts, got {type(tool_calls).__name__}", argument="tool_calls"
            )
        check_config(config)
        return run_calls(self.resolve(config, session=session), session, tool_calls, PluginCore(self))

    # -- UI, completions, config ------------------------------------------------

    def get_ui_schema(self, config: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every enabled plugin's UI elements, normalized into one flat list.

        Missing ``ui_type`` becomes ``"config"``; ``plugin`` is added when
        absent; config elements are de-duplicated on ``key`` (first wins);
        action elements from extensions and features get ``action_owner``.
        """
        return ui_schema(self.resolve(config), PluginCore(self))

    def get_config_schema(self) -> list[dict[str, Any]]:
        """Every registered plugin's config keys, one flat entry per key, with ``plugin``."""
        return config_schema(spec for kind in KINDS for spec in self._specs[kind])

    def get_completions(self, config: Mapping[str, Any] | None, text: str) -> list[dict[str, Any]]:
        """Completions from every enabled feature for ``text``; each names its ``plugin``."""
        return completions(self.resolve(config), text)

    def apply_completion(self, config: Mapping[str, Any] | None, text: str, completion: Mapping[str, Any]) -> str:
        """Ask the feature that offered ``completion`` for replacement text ("" for none)."""
        return apply_completion(self.resolve(config), text, completion)

    # -- actions --------------------------------------------------------------

    def get_actions(self, config: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Action definitions of the enabled extensions and features, each with ``plugin``."""
        return list_actions(self.resolve(config))

    def execute_action(
        self,
        session: Session,
        action_id: str,
        params: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        context: Mapping[str, Any] | None = None,
        request_id: str | None = None,
        side_requests: bool = True,
    ) -> ActionResult:
        """Run a session-scoped action of an enabled extension or feature.

        With ``request_id`` the action is in flight under that id while it runs:
        ``cancel_request(request_id)`` cancels the model calls it makes through
        ``context["core"].side_request`` and refuses any it would start after.
        ``side_requests=False`` refuses those calls outright (a server that does
        not let clients spend money through actions).

        ``action_id`` may be qualified as ``"plugin:action"`` when two plugins
        declare the same id. Params are checked against the action's
        ``inputs`` before the plugin runs.

        Returns:
            ActionResult: the new session (metadata merged, native history
            replaced), the native history, and the result's other keys.

        Raises:
            ActionInputError: unknown action (``action_id`` not a string included), or a
                missing/ill-typed/unknown input, or ``params`` not a mapping.
            InvalidArgumentError: ``session`` is not a Session or ``context`` not a mapping.
            ConfigError: ``config`` is not a mapping or cannot work.
            PluginError: the plugin failed.
        """
        check_session(session, "execute_action")
        if not isinstance(action_id, str) or not action_id:
            raise ActionInputError(
                f"action_id must be a non-empty string naming an action, got {action_id!r}", action=repr(action_id)
            )
        if params is not None and not isinstance(params, Mapping):
            raise ActionInputError(
                f"params for action {action_id!r} must be a mapping, got {type(params).__name__}", action=action_id
            )
        if context is not None and not isinstance(context, Mapping):
            raise InvalidArgumentError(
                f"context must be a mapping, got {type(context).__name__}", argument="context"
            )
        check_config(config)
        resolution = self.resolve(config, session=session)
        if request_id is None:
            return execute_action(resolution, session, action_id, params, context,
                                  PluginCore(self, config=config or {}, side_requests=side_requests))
        with self._in_flight(request_id, config):
            return execute_action(resolution, session, action_id, params, context,
                                  PluginCore(self, request_id, side_requests=side_requests))

    def execute_lifecycle_actions(
        self,
        session: Session,
        trigger: str,
        config: Mapping[str, Any] | None = None,
        *,
        context: Mapping[str, Any] | None = None,
    ) -> Session:
        """Run every enabled extension's and feature's action bound to ``trigger``; return the new session.

        For the lifecycle points an application decides (``session_created``,
        ``session_saved``, ...): actions run in chain order, each seeing the
        session and native history the previous one left; ``session_metadata``
        is merged and ``native_messages`` replaces the stored native history.
        The points a request drives itself (``llm_request``,
        ``response_finalize``, ``tool_pre``, ``tool_post``) run only inside requests.

        Raises:
            ActionInputError: ``trigger`` is not a string or is one the engine runs during requests.
            InvalidArgumentError: ``session`` is not a Session or ``context`` not a mapping.
            ConfigError: ``config`` is not a mapping or cannot work.
            PluginError: an action failed (or ``get_actions`` returned a bad shape); the input
                session is untouched.
        """
        check_session(session, "execute_lifecycle_actions")
        if not isinstance(trigger, str) or not trigger:
            raise ActionInputError(f"trigger must be a lifecycle name, got {trigger!r}", action=repr(trigger))
        if context is not None and not isinstance(context, Mapping):
            raise InvalidArgumentError(f"context must be a mapping, got {type(context).__name__}", argument="context")
        check_config(config)
        if trigger in REQUEST_TRIGGERS:
            raise ActionInputError(
                f"lifecycle {trigger!r} runs inside requests; execute_lifecycle_actions runs the others",
                action=trigger,
            )
        return execute_lifecycle(self.resolve(config, session=session), session, trigger, context,
                                 PluginCore(self, config=config or {}))


def check_session(session: Any, call: str) -> None:
    if not isinstance(session, Session):
        raise InvalidArgumentError(f"{call} expects a Session, got {type(session).__name__}", argument="session")


def check_config(config: Any) -> None:
    if config is not None and not isinstance(config, Mapping):
        raise ConfigError(f"config must be a mapping, got {type(config).__name__}")


def check_kind(kind: Any) -> str:
    """``kind`` as the engine names it: ``"providers"`` is taken for ``"provider"``; any other word is refused.

    Raises:
        InvalidArgumentError: not a plugin kind, naming the four.
    """
    single = kind[:-1] if isinstance(kind, str) and kind.endswith("s") and kind[:-1] in KINDS else kind
    if not isinstance(single, str) or single not in KINDS:  # a list is not a kind (nor hashable)
        raise InvalidArgumentError(f"no plugin kind {kind!r}: use one of {', '.join(map(repr, KINDS))}",
                                   argument="kind")
    return single  # type: ignore[no-any-return]
