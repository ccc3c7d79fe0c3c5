"""An LLM endpoint's outage, remembered from one CLI call to the next.

The library's circuit breaker (llm/breaker.py) stops calling a failing endpoint for a
cool-down, but each `memstrata` call is a new process: without this, every `memstrata add`
against a dead endpoint paid the SDK's connection retries again (~3 s) before falling back.
The CLI records an open breaker in ``$XDG_CACHE_HOME/memstrata/llm-outages.json`` (default
``~/.cache``), keyed by endpoint and model, and the next call starts with the breaker open
for the time left. A call that reaches the endpoint again clears the entry. A missing,
unreadable or corrupt file means "no outage known": it can cost time, never correctness.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["forget_or_save", "outage_file", "restore"]

log = logging.getLogger("memstrata.cli")


def outage_file(environ: Any = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memstrata" / "llm-outages.json"


def _read(path: Path) -> dict[str, float]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        k: float(v)
        for k, v in data.items()
        if isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool)
    }


def _write(path: Path, data: dict[str, float]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".llm-outages-", dir=path.parent)
    except OSError as exc:
        log.debug("could not record the LLM outage in %s: %s", path, exc)
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fp:
            json.dump(data, fp)
        os.replace(tmp, path)  # atomic: a concurrent call reads the old or the new file
    except OSError as exc:
        log.debug("could not record the LLM outage in %s: %s", path, exc)
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # a failed write or rename leaves no stray temp file behind


def restore(breaker: Any, key: str, path: Path, now: float | None = None) -> float:
    """Open ``breaker`` for what is left of a recorded outage of ``key``; returns the
    seconds left (0: none known)."""
    until = _read(path).get(key)
    left = 0.0 if until is None else until - (time.time() if now is None else now)
    if left <= 0:
        return 0.0
    left = min(left, 24 * 3600.0)  # a clock set back must not silence the endpoint for long
    breaker.open_for(left)
    log.info(
        "LLM %s failed in an earlier memstrata call; using the fallback for %.0f s more",
        key,
        left,
    )
    return left


def forget_or_save(breaker: Any, key: str, path: Path, now: float | None = None) -> None:
    """Record ``breaker``'s open state for the next call, or clear the entry once the
    endpoint answered."""
    data = _read(path)
    left = breaker.seconds_left()
    stamp = time.time() if now is None else now
    if left > 0:
        data[key] = stamp + left
    elif key in data:
        del data[key]
    else:
        return
    data = {k: v for k, v in data.items() if v > stamp}  # drop outages that are over
    _write(path, data)
