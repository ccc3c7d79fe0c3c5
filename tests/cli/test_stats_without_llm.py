"""`stats` counts without building the LLM provider; the LLM protocol loads no pydantic."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memstrata import Memory, Scope
from memstrata.llm.factory import DEFAULT_LLM, make_llm


def test_stats_names_the_default_llm_without_building_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    scope = Scope("t", "u")
    with Memory(url, embedder="hashing", background=False) as writer:
        writer.add(scope, "a note about bees")
    mem = Memory(url, embedder="hashing", background=False)
    try:
        stats = mem.stats(scope)
        assert stats["llm"] == DEFAULT_LLM and stats["records"] == 1
        assert "_llm" not in vars(mem) and "layers" not in vars(mem)
        assert mem.llm.name == DEFAULT_LLM  # the same name once it is built
        assert mem.stats(scope)["llm"] == DEFAULT_LLM
    finally:
        mem.close()


def test_stats_reports_a_given_llm() -> None:
    class Named:
        name = "named/1"

        def __getattr__(self, _: str) -> object:
            raise AssertionError("stats must not call the LLM")

    mem = Memory("memory://", embedder="hashing", background=False, llm=make_llm(None))
    try:
        assert mem.stats(Scope("t", "u"))["llm"] == make_llm(None).name
        mem._llm = Named()  # type: ignore[assignment]
        assert mem.stats(Scope("t", "u"))["llm"] == "named/1"
    finally:
        mem.close()


def test_the_llm_protocol_and_factory_do_not_import_pydantic() -> None:
    code = (
        "import sys, json\n"
        "from memstrata.llm.factory import DEFAULT_LLM, make_llm\n"
        "from memstrata.llm.base import LLM\n"
        "before = sorted(m for m in sys.modules if m.startswith(('pydantic', 'memstrata.llm.')))\n"
        "from memstrata.llm.base import TaskOutcome\n"
        "after = 'pydantic' in sys.modules\n"
        "print(json.dumps([before, after, TaskOutcome.__name__]))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    before, after, name = json.loads(res.stdout)
    assert before == ["memstrata.llm.base", "memstrata.llm.factory"]
    assert after is True and name == "TaskOutcome"


def test_unknown_names_of_llm_base_raise_attribute_error() -> None:
    import memstrata.llm.base as base

    try:
        base.NoSuchModel  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchModel" in str(exc)
    else:
        raise AssertionError("unknown names must raise AttributeError")
