"""The caller view is applied in one place (``store/caller_view.py``): every store method
that reads records in a scope must be one it wraps, so a store method added later cannot
hand a caller the record as stored. Also, the wrapper passes everything else through."""

from __future__ import annotations

import inspect

from memstrata._async.store import base
from memstrata._async.store.caller_view import VIEWED, AsyncCallerViewStore
from memstrata.store.memory import InMemoryStore

_RECORDS = ("MemoryRecord", "RecordView")


def _scoped_record_reads() -> set[str]:
    found: set[str] = set()
    for _, cls in inspect.getmembers(base, inspect.isclass):
        if cls.__module__ != base.__name__:
            continue
        for name, fn in vars(cls).items():
            if not inspect.isfunction(fn):
                continue
            params = inspect.signature(fn).parameters
            returned = str(fn.__annotations__.get("return", ""))
            if "scope" in params and any(t in returned for t in _RECORDS):
                found.add(name)
    return found


def test_every_scoped_read_of_records_is_viewed() -> None:
    reads = _scoped_record_reads()
    assert {"get", "get_many", "list", "histories", "vector_records"} <= reads
    assert reads <= VIEWED, sorted(reads - VIEWED)
    # ``views`` is an optional method (no protocol): the stores that have it
    assert "views" in VIEWED and callable(getattr(InMemoryStore(), "views", None))
    for name in VIEWED - {"views"}:
        assert callable(getattr(AsyncCallerViewStore, name)), name


def test_the_rest_passes_through() -> None:
    store = InMemoryStore()
    wrapped = AsyncCallerViewStore(store)  # type: ignore[arg-type]
    assert wrapped.url == store.url and wrapped.viewed is store
    assert wrapped.get_meta == store.get_meta
