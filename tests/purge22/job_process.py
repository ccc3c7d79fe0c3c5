"""A second process running the user's jobs (``flush``: what ``memstrata worker`` runs),
held inside the first job at its first embedding (after it read the user's turns, before
it writes what it derived from them) until the test releases it.

``python job_process.py URL GATE_DIR [BUFFER_URL|-] [async|sync]``: writes
``GATE_DIR/held`` once held, waits for ``GATE_DIR/go``, then runs on and writes its
``RunReport`` to ``GATE_DIR/report.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from memstrata import AsyncMemory, Memory
from memstrata.embedder.base import Matrix
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.worker_types import RunReport


class HeldEmbedder:
    """The hashing embedder, whose first call waits for the test's ``go``."""

    def __init__(self, gate: Path) -> None:
        self._inner = HashingEmbedder()
        self._gate = gate
        self.held = False

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dims(self) -> int:
        return self._inner.dims

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
        return self._inner.embed_batch(texts, query=query)


def main(url: str, gate: Path, buffer: str | None, use_async: bool) -> None:
    if use_async:  # AsyncMemory: SQLite's calls run on the store's threads (aio/threaded.py)

        async def flush() -> RunReport:
            embedder = HeldEmbedder(gate)
            async with AsyncMemory(url, embedder=embedder, background=False, buffer=buffer) as mem:
                return await mem.flush(timeout=120)

        report = asyncio.run(flush())
    else:
        with Memory(url, embedder=HeldEmbedder(gate), background=False, buffer=buffer) as mem:
            report = mem.flush(timeout=120)
    (gate / "report.json").write_text(
        json.dumps(
            {
                "done": report.done,
                "failed": report.failed,
                "retried": report.retried,
                "lost": report.lost,
                "revoked": getattr(report, "revoked", None),
                "errors": report.errors,
            }
        )
    )


if __name__ == "__main__":
    args = sys.argv[1:] + ["-", ""]
    main(args[0], Path(args[1]), None if args[2] == "-" else args[2], args[3] == "async")
