"""What ``AgentCore``'s calls accept, checked where they enter, with errors that name the argument.

Each check raises the typed error a caller can act on (which argument, what it got) before any
plugin runs, so a bad call changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ActionInputError, ConfigError, InvalidArgumentError
from ..plugins.hooks import KINDS
from ..plugins.lifecycle import REQUEST_TRIGGERS
from ..values.messages import Session

__all__ = ["check_action", "check_config", "check_kind", "check_lifecycle", "check_session", "check_tool_calls"]


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


def check_tool_calls(tool_calls: Any) -> None:
    if isinstance(tool_calls, (str, bytes, Mapping)) or not isinstance(tool_calls, Sequence) or not all(
        isinstance(c, Mapping) for c in tool_calls
    ):
        raise InvalidArgumentError(
            f"tool_calls must be a list of tool-call dicts, got {type(tool_calls).__name__}", argument="tool_calls"
        )


def _check_context(context: Any) -> None:
    if context is not None and not isinstance(context, Mapping):
        raise InvalidArgumentError(f"context must be a mapping, got {type(context).__name__}", argument="context")


def check_action(session: Any, action_id: Any, params: Any, context: Any, config: Any) -> None:
    """The arguments of ``execute_action``."""
    check_session(session, "execute_action")
    if not isinstance(action_id, str) or not action_id:
        raise ActionInputError(
            f"action_id must be a non-empty string naming an action, got {action_id!r}", action=repr(action_id)
        )
    if params is not None and not isinstance(params, Mapping):
        raise ActionInputError(
            f"params for action {action_id!r} must be a mapping, got {type(params).__name__}", action=action_id
        )
    _check_context(context)
    check_config(config)


def check_lifecycle(session: Any, trigger: Any, context: Any, config: Any) -> None:
    """The arguments of ``execute_lifecycle_actions``: a trigger an application may fire."""
    check_session(session, "execute_lifecycle_actions")
    if not isinstance(trigger, str) or not trigger:
        raise ActionInputError(f"trigger must be a lifecycle name, got {trigger!r}", action=repr(trigger))
    _check_context(context)
    check_config(config)
    if trigger in REQUEST_TRIGGERS:
        raise ActionInputError(
            f"lifecycle {trigger!r} runs inside requests; execute_lifecycle_actions runs the others",
            action=trigger,
        )
