"""What session 30's randomised runs (``make fuzz``) found, each as a plain test that failed
before its fix (docs/measurements.md, "Session 30: random property runs (fuzz30)")."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata import AsyncMemory, FixedClock, Memory, Scope, ValidationError

ALICE = Scope("acme", "alice", session="s1")


def _url(kind: str, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'f.db'}" if kind == "sqlite" else "memory://"


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
@pytest.mark.parametrize("scope", ["acme/alice", None, {"tenant": "acme"}, 7])
def test_relevant_facts_refuse_a_scope_that_is_not_a_scope(
    kind: str, scope: Any, tmp_path: Path
) -> None:
    """``tests/robustness/test_fuzz_services.py`` with ``MEMSTRATA_FUZZ=10`` (seed
    950303064): ``mem.facts.relevant("acme/alice", "0")`` reached the query embedder with
    the string and raised ``AttributeError: 'str' object has no attribute 'tenant'``; the
    scope was checked only after the query was embedded."""
    clock = FixedClock(datetime(2026, 1, 1, 12, tzinfo=UTC))
    with Memory(_url(kind, tmp_path), embedder="hashing", clock=clock, background=False) as mem:
        with pytest.raises(ValidationError, match="scope must be a memstrata.Scope"):
            mem.facts.relevant(scope, "0")
        with pytest.raises(ValidationError, match="scope must be a memstrata.Scope"):
            mem.facts.relevant(scope, "where does alice live", limit=3)
        assert mem.facts.relevant(ALICE, "city") == []  # a Scope still reads (no facts yet)

    async def run() -> None:
        async with AsyncMemory(
            _url(kind, tmp_path), embedder="hashing", clock=clock, background=False
        ) as amem:
            with pytest.raises(ValidationError, match="scope must be a memstrata.Scope"):
                await amem.facts.relevant(scope, "0")

    asyncio.run(run())
