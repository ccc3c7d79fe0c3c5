"""Users of a size: ``n`` turns, a note citing every tenth turn but the victim, and three
records citing the victim (purge31's tests)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from memstrata import Memory, Message, Scope
from memstrata.records import Role

READS = (
    "list",
    "list_many",
    "list_pages",
    "list_after",
    "get_many",
    "histories",
    "history",
    "get",
    "views",
    "key_versions",
    "find_by_hash",
    "scan",
)


def user_of_size(mem: Memory, user: str, n: int) -> tuple[Scope, str]:
    """``user``'s session ``s1``: ``n`` turns; a note citing each tenth turn; a note, a
    procedure and a summary citing the turn in the middle (the victim) and the first."""
    scope = Scope("acme", user, session="s1")
    ids: list[str] = []
    for start in range(0, n, 250):
        ids += [
            r.id
            for r in mem.add_messages(
                scope,
                [
                    Message(Role.USER if i % 2 == 0 else Role.ASSISTANT, f"locker {i} fact")
                    for i in range(start, min(n, start + 250))
                ],
            )
        ]
    victim = ids[n // 2]
    owner = scope.user_scope
    for i in range(1, n, 10):
        if ids[i] != victim:
            mem.add(owner, f"a note of turn {i}", source_ids=[ids[i]], dedup=False)
    for kind in ("note", "procedure", "summary"):
        mem.add(owner, f"the {kind} of the victim", type=kind, source_ids=[victim, ids[0]])
    return scope, victim


def counted(mem: Memory) -> tuple[Counter[str], Callable[[], None]]:
    """The records each read method of ``mem``'s store returns (its instance's methods
    wrapped), and an undo."""
    store: Any = mem.store
    rows: Counter[str] = Counter()
    done = []
    for name in READS:
        real = getattr(store, name, None)
        if real is None:
            continue

        def call(*a: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            got = _real(*a, **kw)
            if _name in ("list_pages", "scan"):
                return _pages(got, rows, _name)
            rows[_name] += len(got) if isinstance(got, (list, dict)) else 1
            return got

        setattr(store, name, call)
        done.append(name)

    def undo() -> None:
        for name in done:
            delattr(store, name)

    return rows, undo


def _pages(pages: Any, rows: Counter[str], name: str) -> Any:
    for page in pages:
        rows[name] += len(page)
        yield page
