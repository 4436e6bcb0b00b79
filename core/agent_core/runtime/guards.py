"""Waiting on plugin code that may block: cancellation tokens, time limits, private event loops.

The effects (:mod:`agent_core.runtime.effects`) run hooks; this module holds what
they use to stop waiting. A :class:`Guard` pairs a :class:`CancellationToken`
with a time limit: a sync hook under a guard runs on a daemon thread (left
behind if it never returns), an async hook's task is cancelled, so the
cancellation reaches it as ``CancelledError``. An async-only hook met by a
sync request runs on a private event loop (:func:`run_private`,
:class:`AsyncIterInSync`), which a sync call made inside a running loop
cannot do (:func:`refuse_inside_loop`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = [
    "AsyncIterInSync", "CancellationToken", "EffectCancelled", "EffectTimeout", "Guard", "guarded_async",
    "guarded_sync", "refuse_inside_loop", "run_private",
]


class CancellationToken:
    """Tells running code that its request was cancelled (tools get it as ``cancellation``).

    Poll :attr:`cancelled`, block with :meth:`wait`, raise with
    :meth:`raise_if_cancelled`, or register a callback with :meth:`on_cancel`
    (it runs on the thread that cancels, so keep it short). Thread-safe.

    Attributes:
        cancelled: False until :meth:`cancel` runs, then True for good. A plain
            attribute, not a property, because the engine reads it once per
            streamed chunk; it is written only by :meth:`cancel`, under the
            token's lock, before the waiters wake and the callbacks run, so a
            reader that sees True sees a cancelled token. Read it; cancel with
            :meth:`cancel`, never by assigning it.
    """

    __slots__ = ("cancelled", "_event", "_lock", "_callbacks")

    def __init__(self) -> None:
        self.cancelled = False
        self._event: threading.Event | None = None  # what wait() blocks on, made by the first wait (few requests wait)
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], Any]] = []

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds pass; True when cancelled."""
        with self._lock:
            if self.cancelled:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    def raise_if_cancelled(self) -> None:
        """Raise :class:`~agent_core.errors.ProviderRequestCancelled` once cancelled."""
        if self.cancelled:
            from ..errors import ProviderRequestCancelled

            raise ProviderRequestCancelled()

    def on_cancel(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Call ``callback`` on cancellation (at once if already cancelled); returns a remover."""
        with self._lock:
            if not self.cancelled:
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback()
        return lambda: None

    def _remove(self, callback: Callable[[], Any]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def cancel(self) -> None:
        """Cancel, once: set :attr:`cancelled`, wake :meth:`wait`, then run the callbacks (each once)."""
        with self._lock:
            if self.cancelled:
                return
            self.cancelled = True
            if self._event is not None:
                self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            try:
                cb()
            except Exception:  # noqa: BLE001 - one broken callback must not stop the others
                pass


class Guard:
    """How long a guarded effect may take, and the token that can cancel it."""

    __slots__ = ("token", "deadline", "limit")

    def __init__(self, token: CancellationToken | None, timeout: float | None = None) -> None:
        self.token = token
        self.limit = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout

    def remaining(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())


class EffectCancelled(Exception):
    """A guarded effect stopped waiting because its token was cancelled."""


class EffectTimeout(Exception):
    """A guarded effect did not finish within its time limit."""

    def __init__(self, label: str, limit: float) -> None:
        super().__init__(f"{label} did not finish within {limit:g} s")
        self.limit = limit


def refuse_inside_loop(label: str) -> None:
    """A sync call cannot start a private loop inside a running one: say so clearly."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    from ..errors import AsyncOnlyHookError

    raise AsyncOnlyHookError(
        f"{label or 'this plugin hook'} is async-only, and this sync call runs inside a running event loop, "
        "where it cannot be awaited; use arequest / astream_request (or give the plugin a sync twin)"
    )


def run_private(
    async_fn: Callable[[], Awaitable[Any]], token: CancellationToken | None, label: str
) -> Any:
    """Run an async hook to completion on a private event loop; a cancel cancels its task."""

    async def main() -> Any:
        task = asyncio.ensure_future(async_fn())
        if token is None:
            return await task
        loop = asyncio.get_running_loop()

        def cancel() -> None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop has ended
                pass

        remove = token.on_cancel(cancel)
        try:
            return await task
        finally:
            remove()

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if token is not None and token.cancelled:
            raise EffectCancelled(label) from None
        raise


def guarded_sync(fn: Callable[[], Any], guard: Guard, label: str) -> Any:
    """Run ``fn`` on a daemon thread; stop waiting at the deadline or on cancellation."""
    if guard.token is not None and guard.token.cancelled:
        raise EffectCancelled(label)  # never start what nobody will wait for
    box: dict[str, Any] = {}
    wake = threading.Event()

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc
        finally:
            wake.set()

    token = guard.token
    remove = token.on_cancel(wake.set) if token is not None else None
    try:
        threading.Thread(target=work, name=f"agent-core {label}", daemon=True).start()
        wake.wait(guard.remaining())
    finally:
        if remove is not None:
            remove()
    if "value" in box:
        return box["value"]
    if "error" in box:
        raise box["error"]
    if token is not None and token.cancelled:
        raise EffectCancelled(label)
    raise EffectTimeout(label, guard.limit or 0.0)


async def guarded_async(
    sync_fn: Callable[[], Any] | None,
    async_fn: Callable[[], Awaitable[Any]] | None,
    guard: Guard,
    label: str,
) -> Any:
    """Await the hook until it ends, the deadline passes or the token is cancelled.

    ``async_fn`` runs as a task; without it ``sync_fn`` runs on a daemon thread
    (:func:`_on_daemon_thread`). Whichever stops the wait first wins: the
    hook's result (or error), a cancel (:class:`EffectCancelled`), or the
    deadline (:class:`EffectTimeout`); a hook still running is then cancelled.
    """
    if guard.token is not None and guard.token.cancelled:
        raise EffectCancelled(label)
    loop = asyncio.get_running_loop()
    work = asyncio.ensure_future(async_fn()) if async_fn is not None else _on_daemon_thread(sync_fn, loop, label)
    token = guard.token
    stop = asyncio.Event()
    remove = _wake_on_cancel(token, loop, stop) if token is not None else None
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({work, stopper}, timeout=guard.remaining(), return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        work.cancel()
        raise
    finally:
        stopper.cancel()
        if remove is not None:
            remove()
    if work.done():
        return work.result()
    work.cancel()  # reaches an async hook as CancelledError; a thread is left behind
    work.add_done_callback(_consume)
    if token is not None and token.cancelled:
        raise EffectCancelled(label)
    raise EffectTimeout(label, guard.limit or 0.0)


def _on_daemon_thread(
    sync_fn: Callable[[], Any] | None, loop: asyncio.AbstractEventLoop, label: str
) -> asyncio.Future[Any]:
    """Start ``sync_fn`` on a daemon thread; the future settles on ``loop`` when it returns or raises.

    A daemon thread, not the default executor: a hook that never returns must
    not hold up the loop's shutdown.
    """
    assert sync_fn is not None
    work: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not work.done():
            work.set_result(value) if ok else work.set_exception(value)

    def run() -> None:
        try:
            value, ok = sync_fn(), True
        except BaseException as exc:  # noqa: BLE001
            value, ok = exc, False
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:  # the loop has ended; nobody waits any more
            pass

    threading.Thread(target=run, name=f"agent-core {label}", daemon=True).start()
    return work


def _wake_on_cancel(
    token: CancellationToken, loop: asyncio.AbstractEventLoop, stop: asyncio.Event
) -> Callable[[], None]:
    """Set ``stop`` on ``loop`` when ``token`` is cancelled (from any thread); returns the remover."""

    def on_cancel() -> None:
        try:
            loop.call_soon_threadsafe(stop.set)
        except RuntimeError:  # the loop has ended
            pass

    return token.on_cancel(on_cancel)


def _consume(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()  # retrieved, so asyncio does not log it as never retrieved


class AsyncIterInSync:
    """Iterate an async iterator from sync code, on an event loop of its own."""

    def __init__(self, ait: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._ait = ait.__aiter__()

    def __iter__(self) -> AsyncIterInSync:
        return self

    def __next__(self) -> Any:
        if self._loop.is_closed():
            raise StopIteration
        try:
            return self._loop.run_until_complete(self._ait.__anext__())
        except StopAsyncIteration:
            self.close()
            raise StopIteration from None

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            aclose = getattr(self._ait, "aclose", None)
            if aclose is not None:
                self._loop.run_until_complete(aclose())
        finally:
            self._loop.close()
