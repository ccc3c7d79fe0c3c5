"""``memstrata bench startup``: what one CLI call costs, as a user pays it (a new process).

Each source tree (``--src DIR``, e.g. a worktree of an older commit; none: the installed
package) gets its own small store, made by its own CLI: ``notes`` calls of ``add``. Then every
command runs ``runs`` times per tree, the trees interleaved within each round so load changes
hit them alike. Wall time is measured around the process; CPU time is the child's user + system
time (``RUSAGE_CHILDREN``). ``search`` and ``add`` use a new text on every call (no cache hit).
The load average is recorded before and after: on a shared machine the numbers only compare
within one run.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["COMMANDS", "StartupConfig", "command_args", "run_startup", "startup_markdown"]

COMMANDS = ("help", "search", "list", "stats", "add")
_MAIN = "from memstrata.cli.app import main; main()"


@dataclass(frozen=True, slots=True)
class StartupConfig:
    sources: tuple[str | None, ...] = (None,)  # None: the installed package
    runs: int = 5
    notes: int = 8
    embedder: str | None = None  # None: the default embedder
    commands: tuple[str, ...] = COMMANDS


@dataclass(slots=True)
class Timing:
    source: str
    command: str
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)

    @property
    def wall_median(self) -> float:
        return statistics.median(self.wall_s)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu_s)


def command_args(command: str, i: int, db: str, embedder: str | None) -> list[str]:
    """The argv (after ``memstrata``) of call ``i`` of ``command`` on the store ``db``."""
    base = ["--db", db, "--tenant", "t", "--user", "u"]
    if embedder:
        base += ["--embedder", embedder]
    if command == "help":
        return ["--help"]
    if command == "search":
        return [*base, "search", f"peanut {i}"]
    if command == "list":
        return [*base, "list"]
    if command == "stats":
        return [*base, "stats"]
    if command == "add":
        return [*base, "add", f"timed note {i} about peanuts and travel to Paris"]
    raise ValueError(f"unknown command {command!r}; choose from {', '.join(COMMANDS)}")


def _env(source: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSTRATA_", "OPENAI_"))}
    if source is not None:
        env["PYTHONPATH"] = str(Path(source).resolve())
    return env


def _call(argv: Sequence[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one CLI process; a failed call raises with its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", _MAIN, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise RuntimeError(
            f"memstrata {' '.join(argv)} failed ({res.returncode}): {res.stderr.strip()[-500:]}"
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def run_startup(
    cfg: StartupConfig, tick: Callable[[str, int], None] | None = None
) -> dict[str, Any]:
    if cfg.runs < 1 or cfg.notes < 0:
        raise ValueError("runs must be >= 1 and notes >= 0")
    unknown = [c for c in cfg.commands if c not in COMMANDS]
    if unknown:
        raise ValueError(f"unknown command(s) {unknown}; choose from {', '.join(COMMANDS)}")
    labels = [s if s is not None else "installed" for s in cfg.sources]
    if len(set(labels)) != len(labels):
        raise ValueError("each source may be given once")
    for src in cfg.sources:  # what an install does (pip compiles a wheel; make compiles src)
        if src is not None:
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", src], check=True, capture_output=True
            )
    timings = {(lab, c): Timing(lab, c) for c in cfg.commands for lab in labels}
    with tempfile.TemporaryDirectory(prefix="memstrata-startup-") as tmp:
        work = Path(tmp)
        envs = [_env(s) for s in cfg.sources]
        dbs = []
        for n, env in enumerate(envs):
            db = f"sqlite:///small{n}.db"
            dbs.append(db)
            for i in range(cfg.notes):
                _call(
                    [
                        "--db",
                        db,
                        "--tenant",
                        "t",
                        "--user",
                        "u",
                        *(["--embedder", cfg.embedder] if cfg.embedder else []),
                        "add",
                        f"note {i} about peanuts and travel to Paris",
                    ],
                    env,
                    work,
                )
        load_before = _load()
        for r in range(cfg.runs):
            for command in cfg.commands:
                for lab, env, db in zip(labels, envs, dbs, strict=True):
                    wall, cpu = _call(command_args(command, r, db, cfg.embedder), env, work)
                    t = timings[(lab, command)]
                    t.wall_s.append(wall)
                    t.cpu_s.append(cpu)
                    if tick is not None:
                        tick(f"{command} ({lab})", 1)
        load_after = _load()
    rows = [
        {
            "source": t.source,
            "command": t.command,
            "wall_median_s": round(t.wall_median, 3),
            "cpu_median_s": round(t.cpu_median, 3),
            "wall_s": [round(x, 3) for x in t.wall_s],
            "cpu_s": [round(x, 3) for x in t.cpu_s],
        }
        for t in timings.values()
    ]
    return {
        "config": asdict(cfg),
        "python": sys.version.split()[0],
        "load_before": load_before,
        "load_after": load_after,
        "rows": rows,
    }


def startup_markdown(res: dict[str, Any]) -> str:
    cfg = res["config"]
    lines = [
        f"CLI calls, median of {cfg['runs']} (a new process each; store of {cfg['notes']} "
        f"notes, embedder {cfg['embedder'] or 'default'}); load average before "
        f"{res['load_before']}, after {res['load_after']}",
        "",
        "| command | source | wall median s | CPU median s | wall, every run |",
        "|---|---|---:|---:|---|",
    ]
    for row in res["rows"]:
        runs = " ".join(f"{x:.2f}" for x in row["wall_s"])
        lines.append(
            f"| {row['command']} | {row['source']} | {row['wall_median_s']:.3f} | "
            f"{row['cpu_median_s']:.3f} | {runs} |"
        )
    return "\n".join(lines) + "\n"
