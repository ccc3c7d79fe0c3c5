"""``mem.facts.restore`` / ``settle`` and ``mem.knowledge.restore`` / ``settle`` are public
methods of the services (``Memory.restore`` and ``import_records`` call them), and given
anything but a ``MemoryRecord`` (a record id, as ``Memory.restore`` takes) they raise a raw
``AttributeError`` / ``TypeError`` ("'str' object has no attribute 'metadata'"), found by
a fuzz of every public method of ``Memory`` and its services (sync and async, memory:// and
SQLite; nothing else of the 1,830-3,660 calls raised anything but a ``MemstrataError``).

Fixed by the lead at merge (session 32): each checks its argument
(``validation.check_record``, ``check_record_items``), a ``ValidationError`` naming it."""

from __future__ import annotations

from typing import Any

import pytest

from memstrata import Memory, Scope
from memstrata.errors import MemstrataError

SCOPE = Scope("acme", "alice")


@pytest.mark.parametrize("service", ["facts", "knowledge"])
@pytest.mark.parametrize("call", ["restore", "settle"])
def test_plumbing_given_an_id_is_a_memstrata_error(tmp_path: Any, service: str, call: str) -> None:
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing") as mem:
        record = mem.add(SCOPE, "a note")
        fn = getattr(getattr(mem, service), call)
        with pytest.raises(MemstrataError):
            if call == "restore":
                fn(SCOPE, record.id)
            else:
                fn([record.id], brought={record.id})
