"""A second process running the user's jobs (``flush``: what ``memstrata worker`` runs),
held inside the first job at its first embedding (after it read the user's turns, before
it writes what it derived from them) until the test releases it.

``python job_process.py URL GATE_DIR [BUFFER_URL|-] [async|sync] [LEASE_SECONDS]``: writes
``GATE_DIR/held`` once held, waits for ``GATE_DIR/go``, then runs on and writes its
``RunReport`` to ``GATE_DIR/report.json``. ``LEASE_SECONDS`` (default: the worker's) is
the claims' lease; its heartbeat renews a third of it, so a short one notices soon that a
purge took the claim's jobs.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests' helpers (a script's path)

from embedders import WrappedHashing  # noqa: E402
from memstrata import AsyncMemory, Memory  # noqa: E402
from memstrata.embedder.base import Matrix  # noqa: E402
from memstrata.worker_types import RunReport  # noqa: E402


def _lease(mem: Any, seconds: float | None, heartbeat: Any) -> None:
    """Claims of ``mem``'s runner under a ``seconds`` lease (a test's: not a public option)."""
    if seconds is not None:
        runner = mem._runner  # noqa: SLF001
        runner.lease_seconds = seconds
        runner._heartbeat = heartbeat(runner._store, runner._clock, seconds)  # noqa: SLF001


class HeldEmbedder(WrappedHashing):
    """The hashing embedder, whose first call waits for the test's ``go``."""

    def __init__(self, gate: Path) -> None:
        super().__init__()
        self._gate = gate
        self.held = False

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        if not self.held:
            self.held = True
            partial = self._gate / "held.partial"  # renamed whole: never read half written
            partial.write_text("\n".join(texts))
            os.replace(partial, self._gate / "held")
            deadline = time.monotonic() + 120
            while not (self._gate / "go").exists():
                if time.monotonic() > deadline:
                    raise SystemExit("the test never released the job")
                time.sleep(0.02)
        return super().embed_batch(texts, query=query)


def main(url: str, gate: Path, buffer: str | None, use_async: bool, lease: float | None) -> None:
    if use_async:  # AsyncMemory: SQLite's calls run on the store's threads (aio/threaded.py)
        from memstrata._async.worker import AsyncHeartbeat

        async def flush() -> RunReport:
            embedder = HeldEmbedder(gate)
            async with AsyncMemory(url, embedder=embedder, background=False, buffer=buffer) as mem:
                _lease(mem, lease, AsyncHeartbeat)
                return await mem.flush(timeout=120)

        report = asyncio.run(flush())
    else:
        from memstrata.worker import Heartbeat

        with Memory(url, embedder=HeldEmbedder(gate), background=False, buffer=buffer) as mem:
            _lease(mem, lease, Heartbeat)
            report = mem.flush(timeout=120)
    (gate / "report.json").write_text(
        json.dumps(
            {
                "done": report.done,
                "failed": report.failed,
                "retried": report.retried,
                "lost": report.lost,
                "revoked": getattr(report, "revoked", None),
                "given_back": getattr(report, "given_back", None),
                "claimed": getattr(report, "claimed", None),
                "errors": report.errors,
            }
        )
    )


if __name__ == "__main__":
    given = sys.argv[1:]
    url, gate, buffer, mode, lease = given + ["-", "sync", ""][len(given) - 2 :]
    main(
        url,
        Path(gate),
        None if buffer == "-" else buffer,
        mode == "async",
        float(lease) if lease else None,
    )
