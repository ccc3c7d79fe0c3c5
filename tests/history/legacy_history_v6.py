"""A verbatim copy of store/sqlite/history.py as memstrata wrote it up to schema v6 (the
format a v6 file holds; only this import changed), kept to build real v6 files in tests.

Record history as reverse deltas: each archived version stores only what differs from the
version after it, so history grows with what changed, not with the size of the record.

A row is a dict ``column -> SQL value`` over :data:`codec.COLUMNS`. The delta of version
``v`` is ``{column: op}`` with the ops

- ``["=", value]``: the old value, whole (always so for the counters, see ``COUNTERS``);
- ``["prefix", n]``: a JSON list column whose old list is the first ``n`` items of the new
  one (provenance, members and tags only ever grow at the end, so a version adds no copy);
- ``["dict", {key: op}]``: a JSON object column (``structured``, ``metadata``) whose changed
  keys are listed, with ``["del"]`` for a key the old version did not have; ``"="`` and
  ``"prefix"`` apply to the values.

Every delta is checked when it is made (applying it to the new row must give the old row
exactly), falling back to whole values otherwise, and is stored zlib-compressed.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import Any

from memstrata.store.sqlite.codec import COLUMNS

__all__ = ["COUNTERS", "apply_delta", "decode_delta", "encode_delta", "reverse_delta"]

Row = dict[str, Any]
_FIXED = frozenset({"id", "tenant", "user"})  # never change between versions
# Counters change in place, without a version, after a version is archived: a delta keeps
# their value at archive time whole, or a later count would leak into older versions.
COUNTERS = ("access_count", "last_accessed_at")
_LISTS = frozenset({"tags", "source_ids", "relations"})
_DICTS = frozenset({"structured", "metadata"})
_JSON = {"ensure_ascii": False, "sort_keys": True, "separators": (",", ":")}


def _dumps(value: Any) -> str:
    return json.dumps(value, **_JSON)  # type: ignore[arg-type]


def _value_op(old: Any, new: Any) -> list[Any]:
    if (
        isinstance(old, list)
        and isinstance(new, list)
        and len(old) <= len(new)
        and new[: len(old)] == old
    ):
        return ["prefix", len(old)]
    return ["=", old]


def _apply_value(op: list[Any], new: Any) -> Any:
    if op[0] == "prefix":
        return list(new[: op[1]])
    return op[1]


def _column_op(column: str, old: Any, new: Any) -> list[Any]:
    if column in _LISTS and isinstance(old, str) and isinstance(new, str):
        op = _value_op(json.loads(old), json.loads(new))
        if op[0] == "prefix":
            return op
    if column in _DICTS and isinstance(old, str) and isinstance(new, str):
        o, n = json.loads(old), json.loads(new)
        if isinstance(o, dict) and isinstance(n, dict):
            ops: dict[str, list[Any]] = {}
            for key in n:
                if key not in o:
                    ops[key] = ["del"]
            for key, value in o.items():
                if key not in n:
                    ops[key] = ["=", value]
                elif n[key] != value:
                    ops[key] = _value_op(value, n[key])
            return ["dict", ops]
    return ["=", old]


def _apply_column(op: list[Any], new: Any) -> Any:
    if op[0] == "=":
        return op[1]
    if op[0] == "prefix":
        return _dumps(json.loads(new)[: op[1]])
    current = json.loads(new)
    for key, sub in op[1].items():
        if sub[0] == "del":
            current.pop(key, None)
        else:
            current[key] = _apply_value(sub, current.get(key))
    return _dumps(current)


def reverse_delta(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, list[Any]]:
    """What turns ``new`` back into ``old`` (both rows of one record)."""
    delta: dict[str, list[Any]] = {}
    for column in COLUMNS:
        if column in COUNTERS:
            delta[column] = ["=", old[column]]
            continue
        if column in _FIXED or old[column] == new[column]:
            continue
        op = _column_op(column, old[column], new[column])
        if op[0] != "=" and _apply_column(op, new[column]) != old[column]:
            op = ["=", old[column]]  # not canonical JSON: keep the old text whole
        delta[column] = op
    return delta


def apply_delta(new: Mapping[str, Any], delta: Mapping[str, list[Any]]) -> Row:
    """The older row: ``new`` with ``delta`` applied."""
    row = dict(new)
    for column, op in delta.items():
        row[column] = _apply_column(op, new[column])
    return row


def encode_delta(delta: Mapping[str, list[Any]]) -> bytes:
    return zlib.compress(_dumps(delta).encode("utf-8"), 6)


def decode_delta(blob: bytes) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = json.loads(zlib.decompress(blob).decode("utf-8"))
    return out
