"""A write transaction opened while the same thread (task) has one open on the store is
refused with a clear ``StoreError``, on every store with a job fence, in a job and outside.

Session 22 said the store forbade it already; it did not. On PostgreSQL the inner one was
a second pool connection and a transaction of its own (not undone with the first) and, if
it wrote a row the first had written, waited for it forever: two connections of one thread,
a deadlock PostgreSQL cannot see (here: a job's derived record written again through the
store inside its unit of work hung). SQLite refused it with "SQLite could not start a
transaction: cannot start a transaction within a transaction".

``memory://`` is left as it is (one process, no fence, no second connection: the inner
write is made at once under the store's reentrant lock)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata.errors import NotFoundError, StoreError
from memstrata.jobs import Fence, Job, fenced
from memstrata.scope import Scope
from memstrata.store import Store
from store.conftest import T0, Maker, make_store

KINDS = ("sqlite-file", "sqlite+redis", "postgresql", "postgresql+redis")
SCOPE = Scope("t1", "u1")


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = make_store(request.param, tmp_path)
    yield s
    s.close()


def _fence(store: Store) -> Fence:
    store.enqueue(
        [Job(id="j1", kind="k", tenant="t1", user="u1", payload={}, created_at=T0, run_after=T0)]
    )
    (job,) = store.claim_jobs(T0, limit=5, lease_seconds=600)
    assert job.lease_token is not None
    return Fence(job.id, job.lease_token, lambda: None)


def _within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()`` on a thread: its result or error, or a failure if it hangs."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:  # handed back to the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s (a hang)"
    if "error" in out:
        raise out["error"]
    return out.get("value")


@pytest.mark.parametrize("in_job", [True, False], ids=["job", "no-job"])
def test_a_write_inside_an_open_write_transaction_is_refused(store: Store, in_job: bool) -> None:
    fence = _fence(store) if in_job else None
    maker = Maker()
    derived = maker.write(text="location: Lisbon")

    def nested() -> None:
        with fenced(fence), store.transaction() as tx:
            tx.insert([derived])
            tx.get(SCOPE, derived.record.id)  # written (not committed) in this transaction
            store.insert([derived])  # the same row again, outside the unit of work

    with pytest.raises(StoreError, match="already has one open on this store") as caught:
        _within(10, nested)
    assert "through the open transaction" in str(caught.value)
    with pytest.raises(NotFoundError):  # the first was rolled back with it
        store.get(SCOPE, derived.record.id)
    store.insert([maker.write(text="afterwards")])  # the store is usable, nothing is held
    assert len(store.get_many(SCOPE, [derived.record.id])) == 0


def test_pg_a_nested_write_in_a_job_does_not_wait_behind_a_purge(tmp_path: Path) -> None:
    """The case session 22 feared: the job holds its claim (``FOR SHARE``), a purge waits
    for it, the job opens a second write. Refused at once; the purge then goes through."""
    store = make_store("postgresql", tmp_path)
    try:
        fence = _fence(store)
        maker = Maker()
        inside, go = threading.Event(), threading.Event()
        out: dict[str, Any] = {}

        def job() -> None:
            try:
                with fenced(fence), store.transaction() as tx:
                    tx.insert([maker.write(text="derived")])
                    tx.get(SCOPE, "r0001")
                    inside.set()
                    assert go.wait(10)
                    store.insert([maker.write(text="derived, written beside")])
            except StoreError as exc:
                out["error"] = exc

        thread = threading.Thread(target=job, daemon=True)
        thread.start()
        assert inside.wait(10)
        purging = threading.Thread(
            target=lambda: out.setdefault("purge", store.purge_user("t1", "u1")), daemon=True
        )
        purging.start()
        time.sleep(0.3)
        assert purging.is_alive()  # waits for the job's claim
        go.set()
        thread.join(10)
        purging.join(10)
        assert not thread.is_alive() and not purging.is_alive(), "a hang"
        assert "already has one open" in str(out["error"])
        assert out["purge"].remaining == 0
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "memory", "postgresql"])
def test_async_a_write_inside_an_open_write_transaction_is_refused_or_made_not_hung(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The async twin: SQLite's and ``memory://``'s calls run on threads
    (``aio/threaded.py``); a write on the store inside ``async with store.transaction()``
    ran on another thread of the pool and waited forever for the store's lock, held by the
    transaction's thread. Now it runs where the sync store's would: SQLite refuses it as
    above, ``memory://`` makes it (as its sync store does); PostgreSQL refuses it per
    task. A read inside the block reads as before."""
    import asyncio

    from memstrata.aio.stores import open_store

    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'a.db'}"
    elif kind == "memory":
        url = "memory://"
    else:
        url = request.getfixturevalue("pg_url")
    maker = Maker()
    derived, other = maker.write(text="location: Lisbon"), maker.write(text="other")

    async def main() -> str:
        store = await open_store(url)
        try:
            async with store.transaction() as tx:
                await tx.insert([derived])
                assert (await tx.get(SCOPE, derived.record.id)).text == "location: Lisbon"
                with pytest.raises(NotFoundError):  # a read on the store: as before
                    await store.get(SCOPE, "no-such-record")
                try:
                    await store.insert([other])
                except StoreError as exc:
                    return str(exc)
            return "made"
        finally:
            await store.aclose()

    outcome = asyncio.run(asyncio.wait_for(main(), 10))
    if kind == "memory":
        assert outcome == "made"
    else:
        assert "already has one open on this store" in outcome, outcome
