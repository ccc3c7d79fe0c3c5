"""Record history as reverse deltas: each archived version stores only what differs from the
version after it, so history grows with what changed, not with the size of the record.

A row is a dict ``column -> SQL value`` over :data:`codec.COLUMNS` (the SQLite row form,
which PostgreSQL's history uses too). The delta of version ``v`` is ``{column: op}``; an op
turns the newer value into the older one:

- ``["=", value]``: the old value, whole (always so for the counters, see ``COUNTERS``);
- ``["prefix", n]``: a list whose old value is the first ``n`` items of the new one;
- ``["splice", [seg, ...]]``: a list whose old value is its segments joined, where a
  segment ``[i, j]`` is the new list's items ``i:j`` and ``["+", [item, ...]]`` is items
  written out (a sliding window of provenance stores the ids that fell out, not the list);
- ``["text", [seg, ...]]``: a text whose old value is its segments joined, where ``[i, j]``
  is the new text's tokens ``i:j`` (runs of space and of non-space) and a string is text
  written out (a digest rewritten around the same sentences stores what differs);
- ``["num", s, [d, ...]]``: a list of floats with at most ``s`` decimals whose old items are
  ``(round(new * 10**s) + d) / 10**s`` (a centroid that moved a little stores small steps);
- ``["dict", {key: op}]``: a JSON object whose changed keys are listed, with ``["del"]`` for
  a key the old version did not have; the values' ops nest (any op above);
- ``["hash"]`` (``content_hash`` only): the SHA-256 of the old version's text, recomputed
  (:func:`_text_hash`), instead of 64 hex digits per version.

JSON columns (``structured``, ``metadata``, ``tags``, ``relations``, ``source_ids``,
``access``) are diffed as parsed values and written back as canonical JSON; ``raw`` and
``summary`` as text. Every op is checked when it is made (applying it to the new value must
give the old value exactly, text for text), falling back to the whole old value otherwise,
and the shorter of the two is kept. A delta is stored deflated with a fixed preset
dictionary behind a format byte (``\\x01``); deltas written before (plain zlib, which starts
with ``\\x78``) still decode.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import ValidationError
from ...records import MemoryRecord
from ...scope import Scope
from ..history_parts import PartSpool, readable_part
from ..past_versions import check_past, checked_parts, history_key
from .codec import COLUMNS, decode_record, encode_record

__all__ = [
    "COUNTERS",
    "apply_column",
    "apply_delta",
    "rewind_hash",
    "decode_delta",
    "Rewind",
    "decode_rows",
    "delta_text",
    "encode_delta",
    "newest_parts",
    "part_deltas",
    "parts_of",
    "past_deltas",
    "reverse_delta",
    "versions_by_id",
]

Row = dict[str, Any]
Op = list[Any]
_FIXED = frozenset({"id", "tenant", "user"})  # never change between versions
# Counters change in place, without a version, after a version is archived: a delta keeps
# their value at archive time whole, or a later count would leak into older versions.
COUNTERS = ("access_count", "last_accessed_at")
_JSON_COLUMNS = frozenset({"tags", "source_ids", "relations", "structured", "metadata", "access"})
_TEXT_COLUMNS = frozenset({"raw", "summary"})
_HASH = "content_hash"
_JSON = {"ensure_ascii": False, "sort_keys": True, "separators": (",", ":")}
_TOKENS = re.compile(r"\S+\s*|\s+")  # a word with the space after it: few repeats
_MAX_SCALE = 15  # the most decimals a "num" op writes
_EXACT = 2.0**52  # below this a double holds every integer exactly
_MAX_DIFF_ITEMS = 5_000  # longer lists and texts are diffed only by prefix (bounded cost)
_MIN_TEXT = 48  # a shorter old text is kept whole: a diff would not be smaller

_FORMAT = b"\x01"  # deflate with _ZDICT; plain zlib (the first format) starts with b"\x78"
# Strings most deltas contain, so a small delta is not mostly their first spelling. Never
# change it: every stored delta of format \x01 was deflated against exactly these bytes.
_ZDICT = (
    b'"relations":["prefix",0]"tags":["prefix",1]"access":["dict",{"visibility":["="'
    b'"deleted_at":["=",null]"status":["=","active"]"valid_to":["=",null]'
    b'"superseded_by":["=",null]"embedding_model":["=","'
    b'"summary":["text",[["+",["del"]],"metadata":["dict",{"importance":["=",0.'
    b'"confidence":["=",0.","time_end":["=","20","time_start":["=","20'
    b'"count":["=","hits":["=","interaction_length":["=","visits":["=",'
    b'"last_visit":["=","mentions":["=","last_updated":["=","20'
    b'"turns":["=","members":["splice",[["+",["'
    b'"centroid":["num",7,[-'
    b'"source_ids":["splice",[["+",["'
    b'"structured":["dict",{"'
    b'"raw":["text",[['
    b'"observed_at":["=","20'
    b'"content_hash":["hash"]'
    b'"updated_at":["=","20'
    b'"version":["=",'
    b'{"access_count":["=",0],"last_accessed_at":["=",null],'
)


def _dumps(value: Any) -> str:
    return json.dumps(value, **_JSON)  # type: ignore[arg-type]


def _size(op: Op) -> int:
    return len(_dumps(op))


# --- values ----------------------------------------------------------------------------------
def _keys(items: Sequence[Any]) -> list[Any]:
    """Hashable stand-ins for list items (strings as they are, anything else as JSON)."""
    return [x if isinstance(x, str) else "\x00" + _dumps(x) for x in items]


def _segments(old: Sequence[Any], new: Sequence[Any]) -> list[tuple[int, int] | list[Any]]:
    """``old`` as runs of ``new`` (``(i, j)``) and items written out (lists), in order."""
    ko, kn = _keys(old), _keys(new)
    head, limit = 0, min(len(ko), len(kn))
    while head < limit and ko[head] == kn[head]:  # most edits touch one place: trim
        head += 1
    tail = 0
    while tail < limit - head and ko[-1 - tail] == kn[-1 - tail]:
        tail += 1
    matcher = difflib.SequenceMatcher(
        None, kn[head : len(kn) - tail], ko[head : len(ko) - tail], autojunk=False
    )
    blocks = [(0, 0, head)]
    blocks += [(a + head, b + head, n) for a, b, n in matcher.get_matching_blocks() if n]
    blocks.append((len(kn) - tail, len(ko) - tail, tail))
    out: list[tuple[int, int] | list[Any]] = []
    at = 0
    for a, b, size in blocks:
        if b > at:
            out.append(list(old[at:b]))
        if size:
            out.append((a, a + size))
        at = b + size
    return out


def _splice(old: list[Any], new: list[Any]) -> Op | None:
    if old and new and new[0] in old:  # a window that slid: old = what fell out + new[:n]
        start = old.index(new[0])
        kept = len(old) - start
        if old[start:] == new[:kept]:
            return ["splice", [["+", old[:start]], [0, kept]] if start else [[0, kept]]]
    if len(old) > _MAX_DIFF_ITEMS or len(new) > _MAX_DIFF_ITEMS:
        return None
    segs = [list(s) if isinstance(s, tuple) else ["+", s] for s in _segments(old, new)]
    return ["splice", segs]


def _text(old: str, new: str) -> Op | None:
    if len(old) < _MIN_TEXT:
        return None
    before, after = _TOKENS.findall(old), _TOKENS.findall(new)
    if len(before) > _MAX_DIFF_ITEMS or len(after) > _MAX_DIFF_ITEMS:
        return None
    segs = [list(s) if isinstance(s, tuple) else "".join(s) for s in _segments(before, after)]
    return ["text", segs]


def _is_floats(value: list[Any]) -> bool:
    return bool(value) and all(type(x) is float for x in value)


def _num(old: list[Any], new: list[Any]) -> Op | None:
    if len(old) != len(new):
        return None
    before = np.asarray(old, dtype=np.float64)
    after = np.asarray(new, dtype=np.float64)
    largest = max(float(np.max(np.abs(before))), float(np.max(np.abs(after))))
    if not largest < _EXACT:  # also NaN and infinity
        return None
    for s in range(_MAX_SCALE + 1):  # the fewest decimals that write every old value
        unit = 10.0**s
        if largest * unit >= _EXACT:  # steps must be exact integers in a double
            return None
        steps = np.rint(before * unit)
        if np.array_equal(steps / unit, before):
            break
    else:
        return None
    steps -= np.rint(after * unit)
    return ["num", s, [int(d) for d in steps.tolist()]]


def _apply_num(op: Op, new: list[Any]) -> list[float]:
    unit = 10.0 ** int(op[1])
    values: list[float] = (
        (np.rint(np.asarray(new, dtype=np.float64) * unit) + np.asarray(op[2], dtype=np.float64))
        / unit
    ).tolist()
    return values


def _dict(old: dict[str, Any], new: dict[str, Any]) -> Op:
    ops: dict[str, Op] = {key: ["del"] for key in new if key not in old}
    for key, value in old.items():
        if key not in new:
            ops[key] = ["=", value]
        elif new[key] != value or type(new[key]) is not type(value):
            ops[key] = _value_op(value, new[key])
    return ["dict", ops]


def _candidates(old: Any, new: Any) -> list[Callable[[], Op | None]]:
    if isinstance(old, str) and isinstance(new, str):
        return [lambda: _text(old, new)]
    if isinstance(old, list) and isinstance(new, list):
        if len(old) <= len(new) and new[: len(old)] == old:
            return [lambda: ["prefix", len(old)]]
        if _is_floats(old) and _is_floats(new):  # a vector: its items do not repeat
            return [lambda: _num(old, new)]
        return [lambda: _splice(old, new)]
    if isinstance(old, dict) and isinstance(new, dict):
        return [lambda: _dict(old, new)]
    return []


def _value_op(old: Any, new: Any) -> Op:
    """The smallest op that turns ``new`` into ``old`` (``["=", old]`` at worst). Exactness
    is checked once per column (:func:`reverse_delta`), not per nested value."""
    best: Op = ["=", old]
    size = 0
    for make in _candidates(old, new):
        op = make()
        if op is None:
            continue
        size = size or _size(best)
        grown = _size(op)
        if grown < size:
            best, size = op, grown
    return best


def _apply_value(op: Op, new: Any) -> Any:
    kind = op[0]
    if kind == "=":
        return op[1]
    if kind == "prefix":
        return list(new[: op[1]])
    if kind == "splice":
        out: list[Any] = []
        for seg in op[1]:
            if seg[0] == "+":
                out.extend(seg[1])
            else:
                out.extend(new[seg[0] : seg[1]])
        return out
    if kind == "text":
        tokens = _TOKENS.findall(new)
        return "".join(
            seg if isinstance(seg, str) else "".join(tokens[seg[0] : seg[1]]) for seg in op[1]
        )
    if kind == "num":
        return _apply_num(op, new)
    current = dict(new)
    for key, sub in op[1].items():
        if sub[0] == "del":
            current.pop(key, None)
        else:
            current[key] = _apply_value(sub, current.get(key))
    return current


# --- columns ---------------------------------------------------------------------------------
def _column_op(column: str, old: Any, new: Any) -> Op:
    if column in _JSON_COLUMNS and isinstance(old, str) and isinstance(new, str):
        try:
            o, n = json.loads(old), json.loads(new)
        except ValueError:
            return ["=", old]
        op = _value_op(o, n)
        return op if op[0] != "=" else ["=", old]
    if column in _TEXT_COLUMNS and isinstance(old, str) and isinstance(new, str):
        return _value_op(old, new)
    return ["=", old]


def _apply_column(column: str, op: Op, new: Any) -> Any:
    if op[0] == "=":
        return op[1]
    if op[0] == "text":
        return _apply_value(op, new)
    return _dumps(_apply_value(op, json.loads(new)))


def _text_hash(raw: str) -> str:
    """SHA-256 of the NFC-normalised, whitespace-collapsed text: ``memstrata.text.
    content_hash`` as it is today, pinned here because stored ``["hash"]`` ops rely on it."""
    norm = " ".join(unicodedata.normalize("NFC", raw).split())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()


def reverse_delta(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Op]:
    """What turns ``new`` back into ``old`` (both rows of one record)."""
    delta: dict[str, Op] = {}
    for column in COLUMNS:
        if column in COUNTERS:
            delta[column] = ["=", old[column]]
            continue
        if column in _FIXED or (
            old[column] == new[column] and type(old[column]) is type(new[column])
        ):
            continue
        if (
            column == _HASH
            and isinstance(old["raw"], str)
            and old[column] == _text_hash(old["raw"])
        ):
            delta[column] = ["hash"]  # recomputed from the old raw text
            continue
        op = _column_op(column, old[column], new[column])
        if op[0] != "=" and _apply_column(column, op, new[column]) != old[column]:
            op = ["=", old[column]]  # not canonical JSON, -0.0, 1 for 1.0 ...: keep it whole
        delta[column] = op
    return delta


def apply_delta(new: Mapping[str, Any], delta: Mapping[str, Op]) -> Row:
    """The older row: ``new`` with ``delta`` applied."""
    row = dict(new)
    for column, op in delta.items():
        if op[0] != "hash":
            row[column] = _apply_column(column, op, new[column])
    if _HASH in delta and delta[_HASH][0] == "hash":
        row[_HASH] = _text_hash(row["raw"])
    return row


def rewind_hash(new: Mapping[str, Any], delta: Mapping[str, Op]) -> dict[str, Any]:
    """:func:`apply_delta` of the ``raw`` and ``content_hash`` columns only: an older
    version's text hash without rebuilding its other columns (a purge's embedding-cache
    keys: a cluster's every version repeats its whole member list, decoded in full by
    :func:`apply_delta`; purge31)."""
    row = {"raw": new["raw"], _HASH: new[_HASH]}
    if "raw" in delta:
        row["raw"] = _apply_column("raw", delta["raw"], new["raw"])
    if _HASH in delta:
        op = delta[_HASH]
        hashed = op[0] == "hash"
        row[_HASH] = _text_hash(row["raw"]) if hashed else _apply_column(_HASH, op, new[_HASH])
    return row


def encode_delta(delta: Mapping[str, Op]) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, _ZDICT)
    return _FORMAT + packer.compress(_dumps(delta).encode("utf-8")) + packer.flush()


def delta_text(blob: bytes) -> bytes:
    """A stored delta inflated: its JSON text (UTF-8), not yet parsed."""
    data = bytes(blob)
    if data[:1] == _FORMAT:
        unpacker = zlib.decompressobj(-15, _ZDICT)
        return unpacker.decompress(data[1:]) + unpacker.flush()
    return zlib.decompress(data)


def decode_delta(blob: bytes) -> dict[str, Op]:
    out: dict[str, Op] = json.loads(delta_text(blob).decode("utf-8"))
    return out


def apply_column(column: str, op: Op, new: Any) -> Any:
    """One column's older value: ``op`` (a delta's op for ``column``) applied to ``new``."""
    if op[0] == "hash":
        raise ValueError("a content_hash op is applied with the row (apply_delta)")
    return _apply_column(column, op, new)


def versions_by_id(
    rows: Iterable[Any],
    deltas: Iterable[tuple[int, int, bytes]],
    ids: Sequence[str],
    current: Callable[[Any], MemoryRecord],
) -> dict[str, list[MemoryRecord]]:
    """Every version of each record, oldest first (``histories`` of the SQL stores).

    ``rows``: the records' current rows (read by column name, with ``seq``);
    ``deltas``: ``(seq, version, blob)``, each record's newest first; ``current`` decodes a
    current row (with the store's counters). A delta of the row's own version or a later
    one was written after the row was read and is left out, so the versions always fit the
    row read. Keyed in the order of ``ids``; a record without a row is left out."""
    by_seq: dict[int, list[tuple[int, bytes]]] = {}
    for seq, version, blob in deltas:
        by_seq.setdefault(int(seq), []).append((int(version), blob))
    found: dict[str, list[MemoryRecord]] = {}
    for r in rows:
        row: Row = {col: r[col] for col in COLUMNS}
        versions = [current(r)]
        for version, blob in by_seq.get(int(r["seq"]), ()):
            if version < int(r["version"]):
                row = apply_delta(row, decode_delta(blob))
                versions.append(decode_record(row))
        found[r["id"]] = versions[::-1]
    return {i: found[i] for i in dict.fromkeys(ids) if i in found}


class Rewind:
    """A record's earlier versions below ``below``, made from its current row ``current``
    (read by column name) by its deltas a page at a time, newest first (``history_parts``
    of the SQL stores): the row made so far is all that is held between pages. The
    versions are given as rows (their values in the order of :data:`COLUMNS`, which a
    spool pickles ten times faster than records) for :func:`decode_rows`."""

    def __init__(self, current: Any, below: int) -> None:
        self._row: Row = {col: current[col] for col in COLUMNS}
        self._below = below

    def page(self, deltas: Sequence[tuple[int, bytes]]) -> list[tuple[Any, ...]]:
        """The versions ``deltas`` make (``(version, blob)``, newest first, each below the
        version of the row made before: the current row's for the first page), those below
        ``below`` oldest first."""
        made: list[tuple[Any, ...]] = []
        for version, blob in deltas:
            self._row = apply_delta(self._row, decode_delta(blob))
            if int(version) < self._below:
                made.append(tuple(self._row[col] for col in COLUMNS))
        made.reverse()
        return made


def decode_rows(rows: Sequence[Sequence[Any]]) -> list[MemoryRecord]:
    """The records of :meth:`Rewind.page`'s rows."""
    return [decode_record(dict(zip(COLUMNS, row, strict=True))) for row in rows]


def parts_of(
    current: Any, deltas: PartSpool[tuple[int, bytes]], below: int, scope: Scope
) -> Iterator[list[MemoryRecord]]:
    """The versions below ``below`` of a record of a SQL store, oldest part first, as
    ``scope`` may read them: made from its current row ``current`` (read by column name)
    and its deltas ``(version, blob)`` spooled newest first, a page a part
    (:class:`Rewind`); the parts' rows spooled, each
    decoded when given."""
    with PartSpool[tuple[Any, ...]]() as rows:
        rewind = Rewind(current, below)
        for page in deltas.in_order():
            rows.add(rewind.page(page))
        for made in rows.oldest_first():
            if part := readable_part(decode_rows(made), scope):
                yield part


def newest_parts(
    current: Any, deltas: PartSpool[tuple[int, bytes]]
) -> Iterator[list[MemoryRecord]]:
    """Every earlier version of a record of a SQL store, newest part first (each part
    oldest first), made from its current row ``current`` (read by column name) and its
    deltas ``(version, blob)`` spooled newest first in the same read, a spooled page a
    part (:class:`Rewind`): a bulk dump's long history
    (:class:`~memstrata.store.history_parts.EarlierVersions`)."""
    rewind = Rewind(current, int(current["version"]))
    for page in deltas.in_order():
        if made := rewind.page(page):
            yield decode_rows(made)


def part_deltas(
    record: MemoryRecord, parts: Iterable[Sequence[MemoryRecord]]
) -> Iterator[tuple[Sequence[MemoryRecord], list[tuple[int, bytes]]]]:
    """Each part of ``record``'s earlier versions given newest part first (a bulk dump's
    :class:`~memstrata.store.history_parts.EarlierVersions`), checked
    (:func:`~memstrata.store.past_versions.checked_parts`), with its ``(version, delta)``
    rows: the part's newest version kept against the oldest of the part before (the
    record, for the first part)."""
    for part, after in checked_parts(record, parts):
        yield part, past_deltas(None, part, after)


def past_deltas(
    current: Any, past: Sequence[MemoryRecord], after: MemoryRecord | None = None
) -> list[tuple[int, bytes]]:
    """``(version, delta)`` of each of ``past`` (oldest first) as a SQL store keeps it: what
    turns the version after it back into it, the last one's against ``after`` (the first
    version of the next part of a history given in parts) or else ``current`` (the stored
    row: a mapping or database row read by column name)."""
    rows = [dict(zip(COLUMNS, encode_record(v), strict=True)) for v in past]
    last: Mapping[str, Any] = (
        {col: current[col] for col in COLUMNS}
        if after is None
        else dict(zip(COLUMNS, encode_record(after), strict=True))
    )
    newer: list[Mapping[str, Any]] = [*rows[1:], last]
    return [
        (int(old["version"]), encode_delta(reverse_delta(old, after)))
        for old, after in zip(rows, newer, strict=True)
    ]


def archived(
    rows: Mapping[tuple[str, str, str], Any],
    wanted: Sequence[Sequence[MemoryRecord]],
    kept: set[int],
    newer: Sequence[MemoryRecord | None] | None = None,
    pending: dict[int, int] | None = None,
) -> list[tuple[int, int, bytes]]:
    """The ``record_history`` rows ``(seq, version, delta)`` of each earlier-version sequence
    in ``wanted`` (``newer[i]``, when given, the version after ``wanted[i]``'s last: a part
    of a longer history), checked (:func:`check_past`) against its record's stored row in
    ``rows`` (by tenant, user and id). ``kept``: the seqs that have history already; each
    sequence's record joins them, so a record given twice is refused, unless the second
    begins with the version after the first (``pending``: the unit of work's ``newer`` of
    each seq whose history is written in parts, updated here)."""
    waiting = dict(pending or {})  # kept if every sequence is
    out: list[tuple[int, int, bytes]] = []
    for i, past in enumerate(wanted):
        after = newer[i] if newer is not None else None
        row = rows.get(history_key(past))
        if row is None:
            raise ValidationError(
                f"record {past[0].id!r} of {past[0].tenant}/{past[0].user} is not stored: "
                "insert it before its earlier versions; nothing was written"
            )
        seq = int(row["seq"])
        check_past(past, int(row["version"]), seq in kept, after, waiting.get(seq))
        kept.add(seq)
        if after is None:
            waiting.pop(seq, None)
        else:
            waiting[seq] = after.version
        out += [(seq, v, blob) for v, blob in past_deltas(row, past, after)]
    if pending is not None:
        pending.clear()
        pending.update(waiting)
    return out
