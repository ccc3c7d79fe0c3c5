"""A scripted chat backend for tests: a real :class:`ChatBackend`, not a mock.

Queue replies with :meth:`ScriptedChat.enqueue` (strings are returned, exceptions are
raised), run the code under test, then inspect :attr:`ScriptedChat.calls`.
"""

from __future__ import annotations

import copy
from collections import deque

__all__ = ["ScriptExhaustedError", "ScriptedChat"]


class ScriptExhaustedError(LookupError):
    """The code under test asked for more replies than the test enqueued."""


class ScriptedChat:
    """Replays enqueued replies in order and records every prompt it receives."""

    name = "scripted"

    def __init__(self, *responses: str | BaseException) -> None:
        self._queue: deque[str | BaseException] = deque(responses)
        self.calls: list[list[dict[str, str]]] = []
        self.json_modes: list[bool] = []

    def enqueue(self, *responses: str | BaseException) -> ScriptedChat:
        self._queue.extend(responses)
        return self

    @property
    def remaining(self) -> int:
        """Replies not consumed yet (a test can assert its script was used up)."""
        return len(self._queue)

    def complete(self, messages: list[dict[str, str]], *, json_mode: bool) -> str:
        self.calls.append(copy.deepcopy(messages))
        self.json_modes.append(json_mode)
        if not self._queue:
            raise ScriptExhaustedError(
                f"ScriptedChat was called {len(self.calls)} times but only "
                f"{len(self.calls) - 1} replies were enqueued; enqueue more replies"
            )
        reply = self._queue.popleft()
        if isinstance(reply, BaseException):
            raise reply
        return reply
