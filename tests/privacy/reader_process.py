"""A second process reading a user's memory, for test_purge_other_process.py.

``reader_process.py URL GATE_DIR TERCES [async]`` (the secret word spelt backwards, so
that ``sys.argv`` does not hold it): builds a context for ``zoe`` (the
long reply holding ``SECRET`` is trimmed, so its sentences are kept between builds) and
searches ``amy``, writes ``GATE_DIR/ready``, waits for ``GATE_DIR/go``, searches ``amy``
once more (another user: what a server process does next), then writes to
``GATE_DIR/report.json`` how many live Python strings hold ``SECRET`` and where.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

from memstrata import AsyncMemory, Memory, Scope


def holders(terces: str) -> list[str]:
    """The types of the live objects that refer to a string holding the secret (spelt
    backwards in ``terces``: no frame of this process keeps the secret itself)."""
    gc.collect()
    found = []
    for obj in gc.get_objects():
        for ref in gc.get_referents(obj):
            if isinstance(ref, str) and terces[::-1] in ref:
                found.append(type(obj).__name__)
    return found


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit("never told to go on")
        time.sleep(0.02)


ZOE, AMY = Scope("acme", "zoe", session="s2"), Scope("acme", "amy")
QUESTION = "Where is the spare key kept?"


def run_sync(url: str, gate: Path, terces: str) -> dict[str, Any]:
    mem = Memory(url, embedder="hashing", background=False)
    try:
        ctx = mem.build_context(ZOE, QUESTION, 2000, reserve_ratio=0)
        assert terces[::-1] in ctx.text and "…" in ctx.text, ctx.text  # noqa: S101
        del ctx
        mem.search(AMY, "garden tools")
        before = holders(terces)
        (gate / "ready").write_text("ready")
        wait_for(gate / "go")
        mem.search(AMY, "garden tools")
        return {"before": before, "after": holders(terces)}
    finally:
        mem.close()


async def run_async(url: str, gate: Path, terces: str) -> dict[str, Any]:
    mem = AsyncMemory(url, embedder="hashing", background=False)
    try:
        ctx = await mem.build_context(ZOE, QUESTION, 2000, reserve_ratio=0)
        assert terces[::-1] in ctx.text and "…" in ctx.text, ctx.text  # noqa: S101
        del ctx
        await mem.search(AMY, "garden tools")
        before = holders(terces)
        (gate / "ready").write_text("ready")
        await asyncio.to_thread(wait_for, gate / "go")
        await mem.search(AMY, "garden tools")
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
