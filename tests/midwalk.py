"""Run a write in the middle of a walk over a user's records: right after the walk's first
page (a page of ``Store.list_pages``, or of ``Store.list`` as offset walks read), once.

Tests of "nothing skipped, nothing twice" use it to make a concurrent write deterministic:
before the keyset walks, such a write shifted the offsets under the second page."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memstrata.filters import Filters


def after_first_page(
    store: Any,
    monkeypatch: pytest.MonkeyPatch,
    write: Callable[[], None],
    only: Callable[[Filters], bool] = lambda _: True,
) -> list[bool]:
    """Patch ``store`` so ``write`` runs after the first page a walk whose filters satisfy
    ``only`` reads; returns a list that holds ``True`` once it ran."""
    fired: list[bool] = []
    list_, pages = store.list, store.list_pages

    def fire(filters: Filters) -> None:
        if not fired and only(filters):
            fired.append(True)
            write()

    def list_then_write(scope: Any, filters: Filters, *args: Any, **kwargs: Any) -> Any:
        page = list_(scope, filters, *args, **kwargs)
        fire(filters)
        return page

    def pages_then_write(scope: Any, filters: Filters, *args: Any, **kwargs: Any) -> Iterator[Any]:
        for page in pages(scope, filters, *args, **kwargs):
            yield page
            fire(filters)

    monkeypatch.setattr(store, "list", list_then_write)
    monkeypatch.setattr(store, "list_pages", pages_then_write)
    return fired
