"""The store's ``quotas:in_use`` flag can be cleared (quota33).

Once a process with quotas had opened a store, the flag stayed for the store's life: every
process without quotas counted its users' embeddings for ever, even after the operator
stopped enforcing quotas there, and a process that had seen it never read it again. Now
``memstrata quotas status`` shows it and ``memstrata quotas clear-flag`` clears it
(``memstrata.quotas.clear_in_use``); every process reads it again every ``FLAG_SECONDS``:
those without quotas stop counting, and one still running with quotas writes it again at
its next write (clearing too early costs at most those seconds of uncounted writes)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import memstrata.quotas as sync_quotas
from memstrata.cli.app import app

from .conftest import ALICE, IN_USE, plain, served, used


def _cli(url: str, *args: str) -> dict[str, object]:
    out = CliRunner().invoke(app, ["--db", url, "--embedder", "hashing", *args, "--json"])
    assert out.exit_code == 0, out.output
    return dict(json.loads(out.output[out.output.index("{") :]))


def _clear(mem: object) -> None:
    """What ``clear_in_use`` does (the row deleted), done through the store itself so the
    test shows the processes' reading again, with or without that function."""
    store = mem.store  # type: ignore[attr-defined]
    assert store.get_meta(IN_USE) == "1"
    store.forget_counters([IN_USE])


def test_the_cli_shows_and_clears_the_flag(shared_url: str) -> None:
    served(shared_url).close()  # a process with quotas opened the store, then stopped
    assert _cli(shared_url, "quotas", "status") == {"in_use": True}
    assert _cli(shared_url, "quotas", "clear-flag") == {"cleared": True}
    assert _cli(shared_url, "quotas", "status") == {"in_use": False}
    assert _cli(shared_url, "quotas", "clear-flag") == {"cleared": False}
    worker = plain(shared_url)
    try:
        assert worker.store.get_meta(IN_USE) is None
        worker.add(ALICE, "counted by nobody now")
        assert used(worker) == 0
    finally:
        worker.close()


def test_a_worker_stops_counting_once_cleared(
    shared_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process without quotas that saw the flag reads it again (before: never), so it
    stops counting once the operator cleared it."""
    monkeypatch.setattr(sync_quotas, "FLAG_SECONDS", 0.0, raising=False)
    served(shared_url).close()
    worker = plain(shared_url)
    try:
        worker.add(ALICE, "counted: the flag is set")
        assert used(worker) == 1
        _clear(worker)
        worker.add(ALICE, "not counted: the flag is gone")
        assert used(worker) == 1
    finally:
        worker.close()


def test_a_running_quota_process_sets_it_again(
    shared_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cleared under a process still running with quotas: its next write past
    ``FLAG_SECONDS`` writes the flag again (before: it had marked once and never looked
    again, so the processes without quotas stopped counting while its quota held)."""
    monkeypatch.setattr(sync_quotas, "FLAG_SECONDS", 0.0, raising=False)
    quota_mem = served(shared_url)
    worker = plain(shared_url)
    try:
        _clear(quota_mem)
        quota_mem.add(ALICE, "a write under quotas")
        assert quota_mem.store.get_meta(IN_USE) == "1"
        worker.add(ALICE, "counted again")
        assert used(worker) == 2
    finally:
        worker.close()
        quota_mem.close()
