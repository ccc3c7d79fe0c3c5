"""``Memory(...)`` / ``AsyncMemory(...)`` given arguments of the wrong kind: before session
20's audit a string ``max_content_chars`` or ``clock`` was kept and every later call failed
with a raw ``TypeError``/``AttributeError``; ``background="no"`` started the worker;
``hashing:100000000`` allocated 400 MB per vector (2.8 GB for one ``add``); a NUL in a
store URL raised sqlite3's ``ValueError``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from memstrata import AsyncMemory, Memory, ValidationError
from memstrata.embedder.hashing import HashingEmbedder


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"max_content_chars": "100"}, "max_content_chars"),
        ({"max_content_chars": 0}, "max_content_chars"),
        ({"max_content_chars": True}, "max_content_chars"),
        ({"background": "no"}, "background"),
        ({"reembed": 1}, "reembed"),
        ({"clock": "now"}, "clock"),
        ({"search_config": {"mode": "hybrid"}}, "search_config"),
        ({"retention": "30d"}, "retention"),
    ],
)
def test_bad_constructor_arguments_are_refused_up_front(
    tmp_path: Path, kwargs: dict[str, Any], says: str
) -> None:
    args = {"embedder": "hashing", "background": False, **kwargs}
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with pytest.raises(ValidationError, match=says):
        Memory(url, **args)
    with pytest.raises(ValidationError, match=says):
        AsyncMemory(url, **args)
    assert not (tmp_path / "c.db").exists()  # refused before the store was opened


async def _open(url: str, **kwargs: Any) -> None:
    async with AsyncMemory(url, **kwargs):
        pass


@pytest.mark.parametrize("spec", ["hashing:100000000", "hashing:65537"])
def test_hashing_dims_are_bounded(tmp_path: Path, spec: str) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with pytest.raises(ValidationError, match="hashing dims"):
        Memory(url, embedder=spec, background=False)
    with pytest.raises(ValidationError, match="hashing dims"):
        asyncio.run(_open(url, embedder=spec, background=False))


def test_a_nul_in_a_store_url_is_a_validation_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a'}\x00b.db"
    with pytest.raises(ValidationError, match="NUL"):
        Memory(url, embedder="hashing", background=False)
    with pytest.raises(ValidationError, match="NUL"):
        asyncio.run(_open(url, embedder="hashing", background=False))


@pytest.mark.parametrize("dims", [7, 65_537, "64", 2.5])
def test_the_hashing_embedder_checks_its_dims(dims: object) -> None:
    with pytest.raises(ValidationError, match="dims"):
        HashingEmbedder(dims)  # type: ignore[arg-type]
    assert HashingEmbedder(65_536).dims == 65_536
