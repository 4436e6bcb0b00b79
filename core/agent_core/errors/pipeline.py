"""The errors the pipeline itself raises: about plugins, config, values and calls (see :mod:`agent_core.errors`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .root import AgentCoreError, RebuiltByKeywords
from .root import rebuild as _rebuild

__all__ = [
    "ActionInputError",
    "AsyncOnlyHookError",
    "ConfigError",
    "ConfigNotAllowedError",
    "InvalidArgumentError",
    "InvalidValueError",
    "MissingAPIKeyError",
    "MissingFieldError",
    "PluginContractError",
    "PluginError",
    "ProviderRequestCancelled",
    "RepeatedToolCallWarning",
    "RequestInFlightError",
    "SecretInSessionError",
    "UndeclaredConfigKeyError",
    "UnknownConfigKeyWarning",
    "UnknownHookWarning",
]


class PluginError(AgentCoreError):
    """A plugin hook raised. Names the plugin and hook; ``original`` is the cause."""

    def __init__(self, plugin: str, hook: str, original: BaseException, *, detail: str | None = None) -> None:
        self.plugin = plugin
        self.hook = hook
        self.original = original
        self.detail = detail
        what = detail or f"{type(original).__name__}: {original}"
        super().__init__(f"plugin {plugin!r} failed in hook {hook!r}: {what}")

    def __reduce__(self) -> Any:
        return _rebuild, (type(self), (self.plugin, self.hook, self.original), {"detail": self.detail}), self.__dict__


class SecretInSessionError(PluginError):
    """The value of a declared secret turned up in what a request was about to keep or send on.

    Found in a provider call's final messages, their native form or the session
    metadata a ``response_finalize`` action set (``hook`` is ``finalize``), or in a
    tool's result (``execute_tool``), before any of it reaches an event or the session. Only the plugin that declares a secret is handed its
    value, so ``plugin`` (that plugin) put it there or handed it on; the request
    stops and the caller's session is left as it was. The value itself is never
    in the message.

    Attributes:
        plugin: the plugin that declares the secret key.
        key: the secret config key.
        where: what held the value (``"a final message"``, ``"the native history"``, ...).
    """

    def __init__(self, plugin: str, key: str, where: str, hook: str = "finalize") -> None:
        self.key = key
        self.where = where
        super().__init__(plugin, hook, ValueError(f"secret {key!r} in {where}"), detail=(
            f"the value of its secret config key {key!r} is in {where}, which would go into the session and its "
            "events; keep the secret on the plugin instance and add it only where the request is sent (never in "
            "the state, a message, its metadata or the native history)"))

    def __reduce__(self) -> Any:
        return type(self), (self.plugin, self.key, self.where, self.hook), self.__dict__


class ConfigError(AgentCoreError, ValueError):
    """The configuration or the registered plugin set cannot work as given.

    Attributes:
        key: the config key at fault, when one is.
        plugins: the plugins involved, when any are.
    """

    _keywords = ("key", "plugins")

    def __init__(self, message: str, *, key: str | None = None, plugins: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.key = key
        self.plugins = tuple(plugins)


class AsyncOnlyHookError(ConfigError):
    """An async-only hook (a tool, a provider call) was reached from a sync call
    made inside a running event loop, where it cannot be run: use the async API."""


class ConfigNotAllowedError(ConfigError):
    """A request's own config set a key its caller may not choose (see :class:`~agent_core.ConfigPolicy`).

    The operator of a server decides where requests go, with which credentials
    and what they may touch; a client's config may only pick among what the
    operator allows. ``key`` names the refused key (``"model"`` when the model
    asked for is not one of the allowed ones); the message says how the
    operator can allow it. Nothing ran.
    """


class MissingAPIKeyError(ConfigError):
    """A provider would call its public API without a key, so nothing was sent.

    Whose fault it is depends on who runs the pipeline: on the command line it
    is the user's to fix; behind ``agent-core serve`` it is the operator's, so
    the server answers a 500 in its own words instead of the CLI's advice.
    ``env`` names the variable the provider reads the key from.
    """

    _keywords = ("key", "plugins", "env")

    def __init__(self, message: str, *, key: str | None = "api_key", plugins: Sequence[str] = (),
                 env: str | None = None) -> None:
        super().__init__(message, key=key, plugins=plugins)
        self.env = env


class InvalidArgumentError(AgentCoreError, TypeError, ValueError):
    """A public call got an argument it cannot use (wrong type or value); ``argument`` names it.

    A ``TypeError`` for code that checks for one, and a ``ValueError`` because
    the caller's input, not the program, is wrong.
    """

    _keywords = ("argument",)

    def __init__(self, message: str, *, argument: str) -> None:
        super().__init__(message)
        self.argument = argument


class RequestInFlightError(InvalidArgumentError):
    """``request_id`` names a request that is still running; ids must be unique while in flight."""

    def __init__(self, request_id: str) -> None:
        super().__init__(
            f"a request with id {request_id!r} is already in flight; wait for it to end or use another id",
            argument="request_id",
        )
        self.request_id = request_id

    def __reduce__(self) -> Any:
        return type(self), (self.request_id,), self.__dict__


class InvalidValueError(AgentCoreError, ValueError):
    """A value cannot be frozen into a message, session or tool result.

    Either it is nested deeper than :data:`agent_core.values.frozen.MAX_DEPTH` (a
    value that contains itself always is), or JSON cannot carry it exactly
    (bytes, NaN or infinity, a non-string key, text that is not valid
    Unicode, an object of another type). ``path`` says where, e.g.
    ``Message.metadata['usage']['cost']``.
    """

    _keywords = ("path",)

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class ActionInputError(AgentCoreError, ValueError):
    """An action's params do not match the inputs it declares."""

    _keywords = ("action", "input")

    def __init__(self, message: str, *, action: str, input: str | None = None) -> None:
        super().__init__(message)
        self.action = action
        self.input = input


class MissingFieldError(AgentCoreError, KeyError, ValueError):
    """Serialized data (``from_dict``/``from_json``) lacks a required key.

    A ``KeyError`` for code written against the original platform, and a
    ``ValueError`` because the input, not the program, is wrong.
    """

    def __init__(self, key: str, type_name: str) -> None:
        super().__init__(key)
        self.key = key
        self.type_name = type_name

    def __str__(self) -> str:
        return f"{self.type_name} data is missing the required key {self.key!r}"

    def __reduce__(self) -> Any:
        return type(self), (self.key, self.type_name), self.__dict__


class ProviderRequestCancelled(AgentCoreError, RuntimeError):
    """The request was cancelled through ``AgentCore.cancel_request(request_id)``."""

    def __init__(self, request_id: str | None = None) -> None:
        super().__init__("Provider request cancelled" + (f": {request_id}" if request_id else ""))
        self.request_id = request_id

    def __reduce__(self) -> Any:
        return type(self), (self.request_id,), self.__dict__


class UndeclaredConfigKeyError(AgentCoreError, KeyError):
    """A plugin read a config key (``config["key"]``) that is not in the request's config.

    Every key a plugin reads is declared in its ``config_schema`` (or
    ``get_config_schema``), which also gives its default, so the key is there
    whether or not the user set it; an undeclared one is there only when some
    other plugin happens to declare it. A ``KeyError``, so code that asks and
    catches one still works; raised inside a hook, the engine reports it as a
    :class:`PluginError` naming the plugin and the hook.

    Attributes:
        key: the key that was read.
        suggestion: the closest key the config does have, or None.
    """

    def __init__(self, key: str, suggestion: str | None = None) -> None:
        super().__init__(key)
        self.key = key
        self.suggestion = suggestion

    def __str__(self) -> str:
        meant = f" (did you mean {self.suggestion!r}?)" if self.suggestion else ""
        return (f"read config key {self.key!r}, which the config does not hold{meant}: declare it in "
                f"config_schema, with a default, so it is there whether or not the user sets it")

    def __reduce__(self) -> Any:
        return type(self), (self.key, self.suggestion), self.__dict__


class UnknownConfigKeyWarning(RebuiltByKeywords, UserWarning):
    """A config key that no installed plugin declares and the engine does not read.

    Usually a typo (``max_token`` for ``max_tokens``), which would otherwise
    run silently with the default. ``strict_config: true`` turns it into a
    :class:`ConfigError`.

    Attributes:
        key: the unknown key.
        suggestion: the closest known key, or None.
    """

    _keywords = ("key", "suggestion")

    def __init__(self, message: str, *, key: str, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.suggestion = suggestion


class UnknownHookWarning(RebuiltByKeywords, UserWarning):
    """A plugin method named almost like a hook (``proces_chunk``), which the engine will never call.

    Attributes:
        plugin: the plugin's name.
        name: the method's name.
        suggestion: the hook it probably meant.
    """

    _keywords = ("plugin", "name", "suggestion")

    def __init__(self, message: str, *, plugin: str, name: str, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.name = name
        self.suggestion = suggestion


class RepeatedToolCallWarning(RebuiltByKeywords, UserWarning):
    """A provider's reply asks again for a tool call this request already answered (the same id).

    A real API gives every call an id of its own, so a repeated id nearly
    always means the provider carried what one call gathered into the next
    (per-call text or calls kept in a state that lasts the whole request). A
    reply made only of such repeats stops the request with outcome
    ``stopped``/``repeated_tool_call`` instead of running the tools again.

    Attributes:
        provider: the provider's name.
        call_ids: the repeated ids, in the reply's order.
    """

    _keywords = ("provider", "call_ids")

    def __init__(self, message: str, *, provider: str, call_ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.provider = provider
        self.call_ids = tuple(call_ids)


class PluginContractError(AgentCoreError, AssertionError):
    """A plugin breaks the hook contract (found by ``agent_core.testing.check_plugin``).

    An ``AssertionError`` so a test that calls ``check_plugin`` fails like any
    assertion. ``plugin`` and ``hook`` say where, ``rule`` which promise was
    broken, ``value`` the offending value (a short repr).
    """

    def __init__(self, plugin: str, hook: str, rule: str, value: Any = None) -> None:
        self.plugin = plugin
        self.hook = hook
        self.rule = rule
        self.value = value
        shown = "" if value is None else f"\n  offending value: {value}"
        super().__init__(f"plugin {plugin!r}, hook {hook!r}: {rule}{shown}")

    def __reduce__(self) -> Any:
        return _rebuild, (type(self), (self.plugin, self.hook, self.rule, self.value), {}), self.__dict__
