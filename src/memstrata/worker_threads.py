"""The thread side of the job worker: what ``memstrata.worker`` (generated from
``memstrata._async.worker``) runs its heartbeat and background loop on.

:mod:`memstrata.aio.worker_tasks` is the asyncio side, with the same names (``Async``
prefixed) and ``async`` where waiting is involved. Only primitives live here; the loops are
in the source.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["Finished", "Signal", "Spawned", "spawn"]


class Signal:
    """A flag one side sets and the other waits for (``threading.Event``)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def clear(self) -> None:
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; whether the flag is set."""
        return self._event.wait(timeout)


class Finished:
    """Notified whenever a claim ends; a waiter wakes at the next notification or after
    ``timeout`` (``threading.Condition``)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()

    def notify_all(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def wait(self, timeout: float) -> None:
        with self._cond:
            self._cond.wait(timeout)


class Spawned:
    """A daemon thread running ``target``."""

    def __init__(self, target: Callable[[], None], name: str) -> None:
        self._thread = threading.Thread(target=target, name=name, daemon=True)
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def is_current(self) -> bool:
        return self._thread is threading.current_thread()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)


def spawn(target: Callable[[], None], name: str) -> Spawned:
    """Start ``target`` on a daemon thread named ``name``."""
    return Spawned(target, name)
