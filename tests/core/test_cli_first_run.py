"""Issue 11: what a new user trips over in the CLI, each checked through the real command."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import memstrata
from memstrata.cli.app import app

Run = Callable[..., Result]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "cli.db"


@pytest.fixture
def run(db: Path) -> Run:
    runner = CliRunner()

    def invoke(
        *args: str,
        user: str = "u",
        session: str | None = None,
        url: str | None = None,
        stdin: str | None = None,
    ) -> Result:
        base = [
            "--db",
            url or f"sqlite:///{db}",
            "--tenant",
            "t",
            "--user",
            user,
            "--embedder",
            "hashing",
        ]
        if session:
            base += ["--session", session]
        return runner.invoke(app, [*base, *args], input=stdin)

    return invoke


def ok(res: Result) -> Result:
    assert res.exit_code == 0, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def refused(res: Result, *needles: str) -> str:
    """A clean CLI error: exit 2, no traceback, every needle in the message."""
    assert res.exit_code == 2, res.output
    assert isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    for needle in needles:
        assert needle in res.output, (needle, res.output)
    return res.output


def as_json(res: Result) -> object:
    return json.loads(ok(res).stdout)


def add(run: Run, text: str, **kw: str) -> str:
    return as_json(run("add", text, "--json", **kw))["id"]  # type: ignore[index]


# --- start-up -----------------------------------------------------------------------------
def test_version() -> None:
    res = ok(CliRunner().invoke(app, ["--version"]))
    assert res.stdout.strip() == f"memstrata {memstrata.__version__}"
    assert memstrata.__version__ == version("memstrata")


# --- reembed --embedder as documented ------------------------------------------------------
def test_reembed_takes_embedder_after_the_command(run: Run, db: Path) -> None:
    add(run, "I keep bees")
    res = CliRunner().invoke(
        app, ["--db", f"sqlite:///{db}", "reembed", "--embedder", "hashing:64", "--json"]
    )
    assert as_json(res) == {"embedding_model": "hashing-64", "dims": 64, "other_models_found": 0}
    res = CliRunner().invoke(
        app,
        [
            "--db",
            f"sqlite:///{db}",
            "--embedder",
            "hashing:64",
            "--tenant",
            "t",
            "--user",
            "u",
            "search",
            "bees",
            "--json",
        ],
    )
    assert len(as_json(res)) == 1  # type: ignore[arg-type]
    refused(CliRunner().invoke(app, ["--db", f"sqlite:///{db}", "reembed"]), "--embedder")


# --- ids: printed prefixes are accepted back -------------------------------------------------
def test_short_ids_work_in_every_id_command(run: Run) -> None:
    rid = add(run, "Lena is vegetarian")
    listed = ok(run("list")).stdout
    short = rid[:12]
    assert short in listed and rid not in listed
    assert as_json(run("get", short, "--json"))["id"] == rid  # type: ignore[index]
    assert as_json(run("delete", short, "--json"))["status"] == "deleted"  # type: ignore[index]
    assert as_json(run("restore", rid[:6], "--json"))["status"] == "active"  # type: ignore[index]
    assert len(as_json(run("history", short, "--json"))) == 3  # type: ignore[arg-type]
    key = as_json(run("key", "set", "Deadline is Friday", "--json"))["id"]  # type: ignore[index]
    assert key[:12] in ok(run("key", "list")).stdout
    ok(run("key", "edit", key[:12], "--text", "Deadline is Monday"))
    ok(run("key", "remove", key[:12]))
    purged = as_json(run("purge", short, "--json"))
    assert purged["records"] == 1 and purged["remaining"] == 0  # type: ignore[index]


def test_ambiguous_prefix_lists_the_matches_and_other_users_do_not_count(run: Run) -> None:
    ids = [add(run, f"note number {i} about topic {i * 7}") for i in range(20)]
    by_first: dict[str, list[str]] = {}
    for rid in ids:
        by_first.setdefault(rid[0], []).append(rid)
    prefix, shared = next((p, rs) for p, rs in by_first.items() if len(rs) > 1)  # 20 > 16
    out = refused(run("get", prefix), "ambiguous", f"{len(shared)} records")
    assert all(rid in out for rid in shared[:10])
    # another user's records are not candidates: the prefix is unknown to them
    refused(run("get", ids[0][:8], user="v"), "no record id")
    refused(run("get", "zzzz"), "no record id", "zzzz")


# --- markup: brackets print as written -------------------------------------------------------
def test_square_brackets_are_printed_as_written(run: Run) -> None:
    add(run, "[b]pip[/b] memstrata[postgres]")  # two words: a narrow column may wrap them
    for out in (ok(run("list")).stdout, ok(run("search", "postgres")).stdout):
        assert "[b]pip[/b]" in out and "memstrata[postgres]" in out, out
    ok(run("task", "start", "ship it", "--step", "build", "--step", "test [unit]", session="s1"))
    shown = ok(run("task", "step", "0", "completed", session="s1")).stdout
    assert "0. [x] build" in shown and "1. [ ] test [unit]" in shown  # as `task step` numbers
    # errors: a user-typed id with markup is echoed verbatim
    refused(run("get", "[red]nope[/red]"), "[red]nope[/red]")


# --- enum options: a clear error listing the valid values ------------------------------------
@pytest.mark.parametrize(
    ("args", "valid"),
    [
        (("add", "hello", "--type", "banana"), "note"),
        (("add", "hello", "--role", "banana"), "assistant"),
        (("list", "--type", "banana"), "episode"),
        (("search", "x", "--mode", "banana"), "lexical"),
        (("search", "x", "--layer", "banana"), "semantic"),
    ],
)
def test_enum_options_list_the_valid_values(run: Run, args: tuple[str, ...], valid: str) -> None:
    add(run, "something to search")
    refused(run(*args), "banana", "not one of", valid)


def test_library_add_with_a_bad_type_is_a_validation_error() -> None:
    from memstrata import Memory, Scope, ValidationError

    with (
        Memory("memory://", embedder="hashing", background=False) as mem,
        pytest.raises(ValidationError, match="note"),
    ):
        mem.add(Scope("t", "u"), "hello", type="banana")


def test_task_step_status_aliases(run: Run) -> None:
    ok(run("task", "start", "deploy", "--step", "a", "--step", "b", "--step", "c", session="s1"))
    for i, alias in enumerate(("done", "doing", "fail")):
        ok(run("task", "step", str(i), alias, session="s1"))
    steps = as_json(run("task", "show", "--json", session="s1"))["content"]["structured"]["steps"]  # type: ignore[index]
    assert [s["status"] for s in steps] == ["completed", "in_progress", "failed"]
    refused(
        run("task", "step", "0", "banana", session="s1"), "pending", "in_progress", "done=completed"
    )
    hits = as_json(run("search", "deploy", "--layer", "working", "--layer", "mid-term", "--json"))
    assert isinstance(hits, list)


# --- import: explained, and --remap idempotent -------------------------------------------
def test_import_without_remap_explains_and_remap_twice_adds_nothing(
    run: Run, tmp_path: Path
) -> None:
    for text in ("I keep bees", "Lena is vegetarian", "I moved to Porto"):
        add(run, text)
    export = tmp_path / "u.jsonl"
    ok(run("export", str(export)))
    res = as_json(run("import", str(export), "--json", user="v"))
    assert res["imported"] == 0 and res["skipped"] == 3  # type: ignore[index]
    assert "--remap" in res["note"] and "t/u" in res["note"]  # type: ignore[index]
    human = ok(run("import", str(export), user="v")).output
    assert "--remap" in human and "{'" not in human
    first = as_json(run("import", str(export), "--remap", "--json", user="v"))
    assert first["imported"] == 3 and first["into"] == "t/v"  # type: ignore[index]
    second = as_json(run("import", str(export), "--remap", "--json", user="v"))
    assert second["imported"] == 0 and second["skipped"] == 3  # type: ignore[index]
    assert "already imported" in second["note"]  # type: ignore[index]
    assert as_json(run("stats", "--json", user="v"))["records"] == 3  # type: ignore[index]


# --- stores: mistyped, missing, foreign ----------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [
        ("stats",),
        ("search", "x"),
        ("list",),
        ("get", "abc"),
        ("layers",),
        ("context", "x"),
        ("key", "list"),
        ("history", "abc"),
        ("export", "-"),
        ("worker", "--once"),
    ],
)
def test_read_commands_never_create_a_store(run: Run, db: Path, command: tuple[str, ...]) -> None:
    refused(run(*command), "no memstrata store", str(db))
    assert not db.exists()


def test_a_mistyped_db_is_refused_and_not_created(run: Run, tmp_path: Path) -> None:
    wrong = tmp_path / "memstrata.jsonl"
    refused(run("add", "hello", url=f"sqlite:///{wrong}"), "refusing to create", ".db")
    assert not wrong.exists()
    res = ok(run("add", "hello"))
    assert "created a new memstrata store" in res.output


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_files_that_are_not_stores_are_refused_untouched(run: Run, tmp_path: Path) -> None:
    add(run, "I keep bees")
    export = tmp_path / "export.db"  # an export under a store-like name
    ok(run("export", str(export)))
    text = tmp_path / "notes.db"
    text.write_text("just some notes\n", encoding="utf-8")
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    for path, needle in (
        (export, "memstrata import"),
        (text, "not an SQLite database"),
        (other, "invoices"),
    ):
        before = _digest(path)
        for command in (("stats",), ("add", "hello")):
            refused(run(*command, url=f"sqlite:///{path}"), "not a memstrata store", needle)
        assert _digest(path) == before


# --- stats under a session ---------------------------------------------------------------
def test_stats_under_a_session_shows_the_scope_and_the_users_totals(run: Run) -> None:
    add(run, "I keep bees")
    data = as_json(run("stats", "--json", session="s9"))
    assert data["records"] == 0 and "session=s9" in data["scope"]  # type: ignore[index]
    assert data["user_total"]["records"] == 1  # type: ignore[index]
    out = ok(run("stats", session="s9")).output
    assert "whole user" in out and "session=s9" in out and "the user has 1" in out


# --- human tables, JSON on request -------------------------------------------------------
def test_reports_are_tables_not_python_dicts(run: Run, tmp_path: Path) -> None:
    for i in range(3):
        ok(run("add", f"turn {i}: I keep bees and sell honey", "--role", "user", session="s1"))
    outputs = [
        ok(run(*c, session=s)).output
        for c, s in (
            (("stats",), None),
            (("worker", "--once"), None),
            (("end-session",), "s1"),
            (("search", "honey", "--explain"), None),
            (("layers",), None),
        )
    ]
    export = tmp_path / "e.jsonl"
    ok(run("export", str(export)))
    outputs.append(ok(run("import", str(export), "--remap", user="w")).output)
    outputs.append(ok(run("purge", "--yes", user="w")).output)
    for out in outputs:
        assert "{'" not in out and "': " not in out, out
    explain = outputs[3]
    assert "score terms" in explain and "final" in explain
    assert as_json(run("worker", "--once", "--json"))["failed"] == 0  # type: ignore[index]


def test_layers_uses_the_readme_names_and_says_it_is_a_preview(run: Run) -> None:
    for i in range(7):
        ok(run("add", f"message {i} about the garden", "--role", "user", session="s1"))
    ok(run("add", "Lena is vegetarian", "--type", "fact", session="s1"))
    out = ok(run("layers", session="s1")).output
    assert "short-term: 7 records" in out and "newest 5 shown" in out
    assert "semantic: 1 record" in out and "message (" not in out
    data = as_json(run("layers", "--json", "--limit", "2", session="s1"))
    assert data["short-term"]["count"] == 7 and data["short-term"]["shown"] == 2  # type: ignore[index]
    assert set(data) <= {
        "short-term",
        "working",
        "mid-term",
        "summaries",
        "episodic",  # type: ignore[arg-type]
        "semantic",
        "key",
        "procedural",
    }


# --- long text --------------------------------------------------------------------------------
def test_long_text_points_to_ingest_and_max_chars(run: Run, db: Path, tmp_path: Path) -> None:
    add(run, "first")
    long = "word " * 20_001  # 100,005 characters
    out = refused(run("add", "-", stdin=long), "memstrata ingest", "--max-chars")
    assert "max_content_chars" not in out
    res = CliRunner().invoke(
        app,
        [
            "--db",
            f"sqlite:///{db}",
            "--tenant",
            "t",
            "--user",
            "u",
            "--embedder",
            "hashing",
            "--max-chars",
            "200000",
            "add",
            "-",
            "--json",
        ],
        input=long,
    )
    assert len(as_json(res)["content"]["raw"]) == len(long)  # type: ignore[index]
    doc = tmp_path / "report.md"
    doc.write_text("The quarterly report. " * 30_000, encoding="utf-8")
    data = as_json(run("ingest", str(doc), "--json"))
    assert data["chunks"] > 1 and data["characters"] == len(doc.read_text())  # type: ignore[index]
    hits = as_json(run("search", "quarterly report", "--layer", "semantic", "--json"))
    assert hits[0]["record"]["type"] == "knowledge"  # type: ignore[index]
    note = tmp_path / "note.txt"
    note.write_text("Remember the milk", encoding="utf-8")
    assert (
        as_json(run("add", "--file", str(note), "--json"))["content"]["raw"] == "Remember the milk"
    )  # type: ignore[index]
    refused(run("add", "--file", str(tmp_path / "missing.txt")), "does not exist")


def test_demo_runs_and_prints_no_markup() -> None:
    runner = CliRunner()
    data = as_json(runner.invoke(app, ["--embedder", "hashing", "demo", "--json"]))
    assert len(data["answers"]) == 6 and data["context"]["tokens"] > 0  # type: ignore[index]
    out = ok(runner.invoke(app, ["--embedder", "hashing", "demo"])).output
    assert "memstrata demo" in out and "[bold]" not in out and "created a new" not in out
