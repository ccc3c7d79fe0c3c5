"""An import refuses a field it does not know — of the record, of its content, access or
relations, of the line or the header — naming the line, the field and what to do, with
nothing written; before, the field was dropped without a word and the rest imported.

It refuses as well what JSON or a loose reader would have made of the file without a word:
a key given twice (the last value kept), text where a list belongs (split into letters),
a number for an id (turned into text), a version-1 file shorter or longer than its
header's count. Every export memstrata has written still imports (the version-1 file of
the previous format, and a fresh export of each store)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata import Memory
from memstrata.cli.app import app
from memstrata.errors import ImportFormatError

from .conftest import ALICE, USER, Fresh, export_text, lines_of, records_of, stored, text_of

Edit = Callable[[list[dict[str, Any]]], None]


def _source() -> list[dict[str, Any]]:
    """An export of two records (memory://), the second pointing at the first."""
    m = Memory("memory://", embedder="hashing", background=False)
    first = m.add(ALICE, "Alice keeps bees in her garden", tags=["home"])
    m.add(ALICE, "Alice sells the honey at the market", source_ids=[first.id])
    lines = lines_of(export_text(m, USER))
    m.close()
    lines[2]["record"]["relations"] = [{"kind": "similar_to", "target_id": first.id}]
    return lines


def _record(lines: list[dict[str, Any]]) -> dict[str, Any]:
    return lines[2]["record"]  # type: ignore[no-any-return]


CASES: list[tuple[str, Edit, str]] = [
    (
        "a field of the record",
        lambda ls: _record(ls).__setitem__("lineage", "x"),
        "line 3: record has the field 'lineage', which memstrata does not know",
    ),
    (
        "a misspelt field of the record",
        lambda ls: _record(ls).__setitem__("tagz", ["b"]),
        "line 3: record has the field 'tagz', which memstrata does not know; an import "
        "refuses what it would have to drop: rename it to 'tags' if that is what it holds",
    ),
    (
        "a field of the line",
        lambda ls: ls[2].__setitem__("embeddings", None),
        "line 3: the line has the field 'embeddings', which memstrata does not know "
        "(it knows embedding, record)",
    ),
    (
        "a field of content",
        lambda ls: _record(ls)["content"].__setitem__("sumary", "honey"),
        "line 3: content has the field 'sumary', which memstrata does not know (it knows "
        "raw, structured, summary); an import refuses what it would have to drop: rename it "
        "to 'summary'",
    ),
    (
        "a field of access",
        lambda ls: _record(ls)["access"].__setitem__("allowed_user", ["bob"]),
        "line 3: access has the field 'allowed_user', which memstrata does not know",
    ),
    (
        "a field of a relation",
        lambda ls: _record(ls)["relations"][0].__setitem__("weight", 0.9),
        "line 3: relations[0] has the field 'weight', which memstrata does not know (it "
        "knows kind, target_id)",
    ),
    (
        "a field of the header",
        lambda ls: ls[0].__setitem__("scope", "acme/alice"),
        "line 1: header has the field 'scope', which memstrata does not know",
    ),
    (
        "a version-1 count in a version-2 header",
        lambda ls: ls[0].__setitem__("count", 2),
        "line 1: header has the field 'count'",
    ),
    (
        "a relation that is not an object",
        lambda ls: _record(ls).__setitem__("relations", [["similar_to", "x"]]),
        'line 3: record is malformed: relations[0] must be an object {"kind": ..., '
        '"target_id": ...}, got list',
    ),
    (
        "tags as one text",
        lambda ls: _record(ls).__setitem__("tags", "home"),
        "line 3: record is malformed: tags must be a list, got str",
    ),
    (
        "source ids as one text",
        lambda ls: _record(ls).__setitem__("source_ids", "abc"),
        "line 3: record is malformed: source_ids must be a list, got str",
    ),
    (
        "allowed users as one text",
        lambda ls: _record(ls)["access"].__setitem__("allowed_users", "bob"),
        "line 3: record is malformed: access.allowed_users must be a list, got str",
    ),
    (
        "tags as false",
        lambda ls: _record(ls).__setitem__("tags", False),
        "line 3: record is malformed: tags must be a list, got bool",
    ),
    (
        "a number for an id",
        lambda ls: _record(ls).__setitem__("id", 12),
        "line 3: id must be a string id, got int",
    ),
    (
        "an embedding that is not text (the file's model is not the memory's)",
        lambda ls: (
            ls[0].__setitem__("embedding_model", "other"),
            ls[2].__setitem__("embedding", 3),
        ),
        "line 3: embedding must be base64 text (as exported) or null, got int",
    ),
]


@pytest.mark.parametrize(("edit", "says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused_naming_the_line_and_the_field(fresh: Fresh, edit: Edit, says: str) -> None:
    lines = _source()
    mem = fresh()
    assert mem.import_records(io.StringIO(text_of(lines))).imported == 2  # as exported: fine
    mem = fresh()
    edit(lines)
    with pytest.raises(ImportFormatError) as caught:
        mem.import_records(io.StringIO(text_of(lines)))
    assert says in str(caught.value)
    assert stored(mem, USER) == 0  # nothing written, not even the line before


def _twice(line: str, key: str) -> str:
    """``line`` with its first ``"key": value`` given again before it, with another value."""
    at = line.index(f'"{key}": ')
    return line[:at] + f'"{key}": ["dropped"], ' + line[at:]


@pytest.mark.parametrize(
    ("number", "key", "says"),
    [
        (3, "tags", "line 3: an object has the key 'tags' twice (JSON would keep only the last"),
        (3, "raw", "line 3: an object has the key 'raw' twice"),
        (1, "dims", "line 1: an object has the key 'dims' twice"),
    ],
)
def test_a_key_given_twice_is_refused(fresh: Fresh, number: int, key: str, says: str) -> None:
    text = text_of(_source()).splitlines(keepends=True)
    text[number - 1] = _twice(text[number - 1], key)
    mem = fresh()
    with pytest.raises(ImportFormatError, match="twice") as caught:
        mem.import_records(io.StringIO("".join(text)))
    assert says in str(caught.value)
    assert stored(mem, USER) == 0


V1 = Path(__file__).parent.parent / "core" / "test_export_v1.jsonl"


def test_a_version_1_file_still_imports_and_its_count_is_checked(fresh: Fresh) -> None:
    """The previous format's file, as it was written, imports whole; cut by a line (or with
    a line added) it is refused: its header's count says so (before, it imported what was
    left)."""
    text = V1.read_text(encoding="utf-8")
    mem = fresh()
    assert mem.import_records(io.StringIO(text)).imported == 2
    cut = "".join(text.splitlines(keepends=True)[:2])
    mem = fresh()
    with pytest.raises(
        ImportFormatError, match="the header counts 2 records but the export holds 1"
    ):
        mem.import_records(io.StringIO(cut))
    assert stored(mem, USER) == 0


def test_every_field_memstrata_writes_is_known(fresh: Fresh) -> None:
    """A fresh export of every store, with embeddings, deleted and superseded records and
    facts, imports into every store (the known fields are exactly what is written)."""
    from memstrata.llm.models import ExtractedFact

    mem = fresh()
    note = mem.add(ALICE, "Alice keeps bees", tags=["home"], metadata={"k": [1, {"a": None}]})
    mem.delete(ALICE, note.id)
    said = mem.add_message(ALICE, "user", "I live in Lyon")
    mem.facts.upsert(
        ALICE, ExtractedFact(category="home", key="city", value="Lyon", confidence=0.7), [said.id]
    )
    mem.facts.upsert(
        ALICE, ExtractedFact(category="home", key="city", value="Paris", confidence=0.9)
    )
    text = export_text(mem, USER, embeddings=True)
    kinds = [set(line) for line in lines_of(text)[1:-1]]
    assert all(k in ({"record", "embedding"}, {"past_version"}) for k in kinds)
    assert {"past_version"} in kinds  # the note before its delete, the city before Paris
    other = fresh()
    report = other.import_records(io.StringIO(text))
    assert report.imported == len(records_of(text))
    assert export_text(other, USER, embeddings=True).split("\n")[1:] == text.split("\n")[1:]


def test_the_cli_refuses_and_says_why(tmp_path: Path) -> None:
    lines = _source()
    _record(lines)["tagz"] = ["b"]
    path = tmp_path / "e.jsonl"
    path.write_text(text_of(lines), encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    base = ["--db", db, "--tenant", "acme", "--user", "alice", "--embedder", "hashing"]
    res = CliRunner().invoke(app, [*base, "import", str(path)])
    assert res.exit_code != 0
    assert "line 3: record has the field 'tagz'" in res.output
    res = CliRunner().invoke(app, [*base, "stats", "--json"])
    assert json.loads(res.stdout)["records"] == 0


def test_the_http_route_refuses_and_says_why(served: Any) -> None:  # noqa: F811
    lines = _source()
    _record(lines)["content"]["sumary"] = "honey"
    r = served.client.post(
        "/v1/users/carol/import",
        content=text_of(lines).encode("utf-8"),
        headers={**served.h(served.admin), "content-type": "application/x-ndjson"},
    )
    assert r.status_code == 422, r.text
    assert "line 3: content has the field 'sumary'" in r.json()["error"]["message"]
    from memstrata import Scope

    assert stored(served.memory, Scope("acme", "carol")) == 0
    assert stored(served.memory, USER) == 0


def test_the_async_memory_refuses_the_same(tmp_path: Path) -> None:
    import asyncio

    from memstrata import AsyncMemory, Scope

    lines = _source()
    _record(lines)["access"]["allowed_user"] = ["bob"]

    async def run() -> tuple[str, int]:
        mem = AsyncMemory(f"sqlite:///{tmp_path / 'a.db'}", embedder="hashing", background=False)
        try:
            with pytest.raises(ImportFormatError) as caught:
                await mem.import_records(io.StringIO(text_of(lines)))
            return str(caught.value), (await mem.stats(Scope("acme", "alice")))["records"]
        finally:
            await mem.aclose()

    says, records = asyncio.run(run())
    assert "line 3: access has the field 'allowed_user'" in says
    assert records == 0
