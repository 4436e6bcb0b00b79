"""What a plugin's UI elements may say: one msgspec Struct per kind, checked where the element enters.

Applications build their screens from ``get_ui_elements`` (or the kit's ``ui_elements``
attribute): the web console puts ``status_bar`` elements in its status line,
``message_footer`` elements under each message, ``session_action`` elements as buttons
and ``config`` elements in its settings panel. An element is a mapping (or one of the
Structs below) whose ``ui_type`` picks the kind (``config`` when missing). The fields
listed here are read by the applications and are checked: a field of the wrong type,
a missing required one, a field or ``ui_type`` spelt almost like a known one (``templte``,
``status_bra``) is refused, naming the plugin and the element, with the name it
probably meant. Other keys are a plugin's own extras and pass untouched, as does an
element of a ``ui_type`` no application here knows.

Checked once: a declared ``ui_elements`` when the plugin is registered, what
``get_ui_elements`` returns each time an application asks for the UI schema.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, Union

import msgspec

from ..errors import ConfigError

__all__ = ["ConfigElement", "MessageFooter", "SessionAction", "StatusBar", "UI_TYPES", "as_mapping", "check_declared_ui",
           "ui_element_fault"]


class _Element(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True, tag_field="ui_type"):
    plugin: str | None = None  # filled in with the contributing plugin's name when left out
    label: str | None = None  # a short caption
    description: str | None = None  # longer help


class ConfigElement(_Element, tag="config"):
    """An editable setting: the console's settings panel shows it (when the operator lets clients set ``key``)."""

    key: str  # the config key it edits
    type: str = "text"  # the control: text, number, checkbox, select, json, ...
    options: list[Any] | None = None  # for a select: values, or {"value", "label"} mappings
    default: Any = None
    value: Any = None


class StatusBar(_Element, tag="status_bar"):
    """A value shown in the status line: ``data`` is a dotted path from ``session`` (``session.metadata.title``)."""

    data: str
    template: str | None = None  # "{{data}}" (or "{{data.key}}") stands for the value found at ``data``


class MessageFooter(_Element, tag="message_footer"):
    """A line under each message: ``data`` is a dotted path into the message (``metadata.timestamp``)."""

    data: str
    template: str | None = None


class SessionAction(_Element, tag="session_action"):
    """A button running one of the plugin's actions on the session: ``action`` names its id."""

    action: str
    action_owner: str | None = None  # the plugin whose action it is (the engine fills it in)


_KINDS: dict[str, type[_Element]] = {k.__struct_config__.tag: k for k in  # type: ignore[misc]
                                     (ConfigElement, StatusBar, MessageFooter, SessionAction)}
#: the ``ui_type`` values whose fields are checked
UI_TYPES = tuple(_KINDS)
_ANY = Union[ConfigElement, StatusBar, MessageFooter, SessionAction]  # noqa: UP007 - msgspec reads a Union
_OTHER_KNOWN = ("message_action",)  # read by some applications, not checked here


def _meant(name: str, among: Any, cutoff: float = 0.75) -> str | None:
    close = difflib.get_close_matches(name, list(among), n=1, cutoff=cutoff)
    return close[0] if close else None


def ui_element_fault(element: Any) -> str | None:
    """Why ``element`` is no valid UI element (the sentence to show), or None when it is one."""
    if isinstance(element, _Element):
        return None
    if not isinstance(element, Mapping):
        return f"a UI element is a mapping (or agent_core.plugin_kit's StatusBar, ...), got {type(element).__name__}"
    kind = element.get("ui_type") or "config"
    if not isinstance(kind, str):
        return f"ui_type must be a string, got {kind!r}"
    if kind not in _KINDS:
        meant = _meant(kind, (*UI_TYPES, *_OTHER_KNOWN))
        return None if meant is None or meant == kind else f"ui_type {kind!r} is no kind of element; did you mean {meant!r}?"
    fields = _KINDS[kind].__struct_fields__
    for key in element:  # a key of the plugin's own is an extra, unless it looks like a field left out
        if key != "ui_type" and key not in fields and (meant := _meant(str(key), fields, 0.6)) and meant not in element:
            return f"a {kind} element has no field {key!r}; did you mean {meant!r}?"
    try:
        msgspec.convert({**element, "ui_type": kind}, _ANY, strict=False)
    except msgspec.ValidationError as exc:
        return f"a {kind} element: {exc} (its fields: {', '.join(fields)})"
    return None


def as_mapping(element: Any) -> Any:
    """A Struct element as the plain mapping applications read; anything else as it is."""
    return msgspec.to_builtins(element) if isinstance(element, _Element) else element


def check_declared_ui(cls: type, name: str) -> None:
    """A plugin's declared ``ui_elements`` (the kit's class attribute), checked when it is registered.

    Raises:
        ConfigError: naming the plugin, the element and the fault.
    """
    declared = getattr(cls, "ui_elements", None)
    if declared is None or callable(declared) or not isinstance(declared, (list, tuple)):
        return
    for i, element in enumerate(declared):
        fault = ui_element_fault(element)
        if fault is not None:
            raise ConfigError(f"plugin {name!r}: ui_elements[{i}]: {fault}", plugins=[name])
