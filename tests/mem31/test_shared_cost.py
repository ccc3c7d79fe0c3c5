"""One add by an owner cost a caller's next reads on memory:// a walk of every record of the
store: the owner's shared entries (caller30) and each caller's BM25 index (session 28) were
gathered again from all of them after each change of the owner's records (612 rows walked
beside 100 notes, 6,012 beside 1,000, 60,012 beside 10,000). Each write now updates them
for the records it touched (store/memory_shared.py, mem31).

Counted, not timed (tests/mem31/shared_cost.py): the rows walked of the store's entries by
one add (public, then private) and each caller's page, count and lexical search, at 100
and 1,000 notes of the owner (and as many of another user): equal now, grown tenfold
before (fails before)."""

from __future__ import annotations

from mem31.shared_cost import filled, one_add_then_reads, reads


def test_a_callers_reads_after_a_write_walk_no_more_rows_for_a_longer_history() -> None:
    walked = []
    for n in (100, 1000):
        store = filled(n)
        walked.append(
            [one_add_then_reads(store, 5_000_000 + k, shared=k % 2 == 0) for k in range(4)]
        )
    assert walked[0] == walked[1], walked
    assert walked[0] == [0, 0, 0, 0], walked  # no walk of the store's entries at all


def test_what_a_caller_reads_is_kept_after_the_writes() -> None:
    store = filled(100)
    one_add_then_reads(store, 5_000_000, shared=True)
    got = reads(store)
    store._shared_of.clear()  # gathered again from every record
    assert reads(store) == got
    assert "bob5000000" in got[0]  # carol's newest-first page holds the public note
