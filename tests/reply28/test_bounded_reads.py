"""What a version of a reply and an edit of a question read of the store.

``kept_terms`` read the turns up to a reply's time, at most 20, to find the one before it;
when more than 20 shared that time (an ``add_messages`` call gives its turns one) it walked
the whole session, oldest first: a ``set_access`` on a reply of a 1,000-turn call read
~1,000 records. It now reads at most 20 turns from the reply's place (``list_after``), and
an edit of a question the turn after it: neither grows with the session."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from memstrata import Memory, Scope

BOB = Scope("acme", "bob")
S1 = BOB.with_session("s1")
_READS = ("list", "list_pages", "list_after", "get_many")


def _counting(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Records returned per store read method from now on (the store itself: the view over
    it that the layers hold calls its methods)."""
    read: Counter[str] = Counter()
    for store in (mem.store,):
        for name in _READS:
            real = getattr(store, name, None)
            if real is None:
                continue

            def wrap(*args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
                got = _real(*args, **kw)
                if _name == "list_pages":
                    return _pages(got, _name)
                read[_name] += len(got)
                return got

            def _pages(pages: Iterator[list[Any]], name: str) -> Iterator[list[Any]]:
                for page in pages:
                    read[name] += len(page)
                    yield page

            monkeypatch.setattr(store, name, wrap)
    return read


def _session(mem: Memory, n: int) -> list[str]:
    """``n`` turns in one call (one timestamp): a question and its reply, n/2 times."""
    turns = []
    for i in range(n // 2):
        turns.append({"role": "user", "content": f"what is the code of locker {i}?"})
        turns.append({"role": "assistant", "content": f"It is {1000 + i}."})
    return [r.id for r in mem.add_messages(S1, turns)]


def test_a_version_of_a_reply_reads_a_few_turns(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _session(mem, 1000)
    reply = ids[3]  # among the oldest of the 1,000 turns that share one time
    read = _counting(mem, monkeypatch)
    mem.set_access(BOB, reply, visibility="shared", allowed_users=["carol"])
    assert sum(read.values()) <= 5, read
    monkeypatch.undo()
    hits = [h.id for h in mem.search(BOB, "code locker 1", mode="lexical", top_k=3)]
    assert reply in hits


def test_an_edit_of_a_question_reads_a_few_turns(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _session(mem, 1000)
    question, reply = ids[500], ids[501]
    read = _counting(mem, monkeypatch)
    mem.update(BOB, question, expected_version=1, content="which quokka holds locker 250?")
    assert sum(read.values()) <= 5, read
    monkeypatch.undo()
    assert reply in [h.id for h in mem.search(BOB, "quokka", mode="lexical")]
