"""A dict of memory:// that files each key under the owners it names, kept by each write.

``InMemoryStore`` keeps its metadata rows (quota counters, leases, the store's model) and
the API key rows a migration loaded in plain dicts written from several places (the quota
counters' functions, a dump loaded). A user's purge deletes the rows naming the user; until
session 32 it found them by a walk of every row of the store (every user's). A
:class:`Filed` dict files each key, as it is written, under the owners ``owners(key,
value)`` names, so :meth:`Filed.filed` gives one owner's keys without a walk, whoever wrote
them (every write passes ``__setitem__`` and ``__delitem__``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, MutableMapping
from typing import Any, TypeVar

__all__ = ["Filed", "key_hash_owner", "key_row_owners", "quota_subjects"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# The length of ``quota_types.subject_hash`` (a 10-byte blake2b digest in hex).
_SUBJECT = 20


class Filed(MutableMapping[K, V]):
    """A dict whose keys are also filed under their owners (see the module)."""

    def __init__(
        self, owners: Callable[[K, V], Iterable[Hashable]], *, by_key: bool = False
    ) -> None:
        self._items: dict[K, V] = {}
        self._filed: dict[Hashable, dict[K, None]] = {}
        self._owners = owners
        self._by_key = by_key  # owners name the key alone: a new value of a key is filed

    def __getitem__(self, key: K) -> V:
        return self._items[key]

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Filed({self._items!r})"

    def __setitem__(self, key: K, value: V) -> None:
        if self._by_key and key in self._items:  # a counter's new value: filed already
            self._items[key] = value
            return
        old = self._items.get(key, _MISSING)
        self._items[key] = value
        now = tuple(self._owners(key, value))
        if old is not _MISSING:
            before = tuple(self._owners(key, old))  # type: ignore[arg-type]
            if before == now:
                return
            self._unfile(key, before)
        for owner in now:
            self._filed.setdefault(owner, {})[key] = None

    def __delitem__(self, key: K) -> None:
        value = self._items.pop(key)
        self._unfile(key, tuple(self._owners(key, value)))

    def _unfile(self, key: K, owners: tuple[Hashable, ...]) -> None:
        for owner in owners:
            held = self._filed[owner]
            del held[key]
            if not held:
                del self._filed[owner]

    def holds(self, owner: Hashable) -> bool:
        """Whether some key is filed under ``owner``."""
        return owner in self._filed

    def filed(self, owner: Hashable) -> list[K]:
        """The keys filed under ``owner``, in the order they were first written."""
        return list(self._filed.get(owner, ()))


_MISSING = object()


def quota_subjects(key: str, _value: object = None) -> tuple[str, ...]:
    """The owners of a metadata row: for a quota row (``quota:...``), each part between two
    colons that may be a user's ``subject_hash``, so a user's purge finds the rows it
    deleted by ``key.startswith("quota:") and f":{hash}:" in key`` (every ``:{hash}:`` in a
    key is such a part: the hash holds no colon)."""
    if not key.startswith("quota:"):
        return ()
    return tuple(dict.fromkeys(p for p in key.split(":")[1:-1] if len(p) == _SUBJECT))


def key_hash_owner(key_hash: str) -> tuple[str, str, str]:
    """The owner an API key row is filed under by its hash: a 3-tuple, never a row's
    ``(tenant, user)``, so a load finds a held hash without a walk of every row (mem32b)."""
    return ("key_hash", key_hash, "")


def key_row_owners(_key: object, row: Any) -> tuple[Hashable, ...]:
    """The owners of an API key row (a ``store.key_rows.KeyRow``): its ``(tenant, user)``,
    whose purge deletes it, and its hash (:func:`key_hash_owner`), which a load skips when
    held (store/memory_dump.py ``load_keys``)."""
    return ((row.tenant, row.user), key_hash_owner(row.key_hash))
