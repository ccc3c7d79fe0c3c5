"""An idle ``memstrata worker`` process, for test_idle_worker_forgets.py.

``worker_process.py URL GATE_DIR TERCES [async]`` (the secret spelt backwards, so
``sys.argv`` does not hold it): builds a context for ``zoe`` (its trimmed sentences are
kept between calls), writes ``GATE_DIR/ready`` and runs the worker loop
(``Memory.run_worker``, as ``memstrata worker`` does) with no job to run; once
``GATE_DIR/go`` exists it lets two more polls run, stops, and writes to
``GATE_DIR/report.json`` which live strings hold the secret, before and after. It makes
no search after the purge: only its polls can tell it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1] / "privacy"))
from reader_process import QUESTION, ZOE, holders  # noqa: E402

from memstrata import AsyncMemory, Memory  # noqa: E402


class _Stop:
    def __init__(self, gate: Path) -> None:
        self.gate, self.after_go = gate, 0

    def __call__(self) -> bool:
        if (self.gate / "go").exists():
            self.after_go += 1
        return self.after_go > 2  # two whole polls after the purge


def run_sync(url: str, gate: Path, terces: str) -> dict[str, Any]:
    mem = Memory(url, embedder="hashing", background=False)
    try:
        ctx = mem.build_context(ZOE, QUESTION, 2000, reserve_ratio=0)
        assert terces[::-1] in ctx.text and "…" in ctx.text, ctx.text  # noqa: S101
        del ctx
        mem.run_worker(poll_seconds=0.05, stop=lambda: True)  # opens the runner
        before = holders(terces)
        (gate / "ready").write_text("ready")
        mem.run_worker(poll_seconds=0.05, stop=_Stop(gate))
        return {"before": before, "after": holders(terces)}
    finally:
        mem.close()


async def run_async(url: str, gate: Path, terces: str) -> dict[str, Any]:
    mem = AsyncMemory(url, embedder="hashing", background=False)
    try:
        ctx = await mem.build_context(ZOE, QUESTION, 2000, reserve_ratio=0)
        assert terces[::-1] in ctx.text and "…" in ctx.text, ctx.text  # noqa: S101
        del ctx
        before = holders(terces)
        (gate / "ready").write_text("ready")
        await mem.run_worker(poll_seconds=0.05, stop=_Stop(gate))
        return {"before": before, "after": holders(terces)}
    finally:
        await mem.close()


def main() -> None:
    url, gate, terces = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    use_async = len(sys.argv) > 4 and sys.argv[4] == "async"
    report = asyncio.run(run_async(url, gate, terces)) if use_async else run_sync(url, gate, terces)
    (gate / "report.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()
