"""Checks of what callers hand over, each a pure function shared by every write path.

``add``, ``add_message(s)``, ``update`` and ``import_records`` (and the filters of ``search``
and ``list``) call these, so one bad value gets one answer on every store: a
:class:`ValidationError` that names the field, says what was wrong and what to pass instead,
raised before anything is written. Each check returns the value in the form memstrata
stores (tuples for tag lists, plain JSON for metadata, aware UTC for times), so what a store
holds is exactly what it can give back.
"""

from __future__ import annotations

import io
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, time
from enum import StrEnum
from typing import Any, TypeVar

from .errors import ConflictError, ValidationError
from .text import DEFAULT_MAX_CHARS, content_hash, validate_content

__all__ = [
    "check_text_sink",
    "check_text_source",
    "MAX_COUNT",
    "MAX_EMBEDDING_DIMS",
    "MAX_ID_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_TAGS",
    "check_bool",
    "check_enum",
    "check_id",
    "check_ids",
    "check_int",
    "check_json",
    "check_metadata",
    "check_model",
    "check_names",
    "check_number",
    "check_ratio",
    "check_records",
    "check_sequence",
    "check_tags",
    "check_time",
    "check_unit",
    "check_read_version",
    "check_version",
    "counted",
    "id_too_wide",
    "validate_record",
]

MAX_JSON_DEPTH = 32  # nesting of metadata / structured content
MAX_JSON_ITEMS = 100_000  # values in one metadata tree
# Python writes an int as JSON text only up to 4,300 digits (sys.int_info): a bigger one
# was stored in memory:// and then failed every export with a raw ValueError.
_MAX_JSON_INT_BITS = 14_000  # about 4,214 digits
MAX_TAGS = 256
MAX_TAG_CHARS = 256
MAX_ID_CHARS = 256
# ... and at most this many bytes of UTF-8: PostgreSQL's btree keys hold up to 2,704 bytes,
# and four ids stand side by side in one (record_readers: tenant, reader, user, record id),
# three in several (records_session: tenant, user, session). 256 characters of four bytes
# (1,024 bytes each) were refused there ("index row size 3128 exceeds btree version 4
# maximum 2704") while SQLite and memory:// stored them (session 31). 640 bytes hold 256
# characters of any alphabet of two bytes (Greek, Cyrillic, Hebrew, Arabic ...), 213
# Chinese characters, 160 emoji.
MAX_ID_BYTES = 640


def id_too_wide(field: str, size: int) -> str:
    """The refusal of an id of ``size`` bytes of UTF-8 (more than :data:`MAX_ID_BYTES`)."""
    return (
        f"{field} takes {size:,} bytes of UTF-8; an id may take at most {MAX_ID_BYTES} "
        "(256 characters of most alphabets, 213 Chinese characters, 160 emoji): use a "
        "shorter id"
    )


# A record's version and access count: what every store holds (SQLite's INTEGER, PostgreSQL's
# BIGINT since schema 18). A version past it is refused (records.py, next_version); an access
# count stops there (saturates: a statistic, not an identity).
MAX_COUNT = 2**63 - 1
MAX_EMBEDDING_DIMS = 65_536  # a vector's length (an import's embedding_dims, hashing:DIMS)

E = TypeVar("E", bound=StrEnum)
M = TypeVar("M")


def _kind(value: object) -> str:
    return type(value).__name__


def _clean_str(value: str, field: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"{field} contains a lone surrogate at position {exc.start}, which is not valid "
            "UTF-8: fix the decoding that produced it"
        ) from None
    return value


def check_enum(kind: type[E], value: object, field: str) -> E:
    """``value`` as a member of ``kind``; the error lists every valid value."""
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        try:
            return kind(value)
        except ValueError:
            pass
    # the list is made only for the error: an import checks five enums a record
    allowed = ", ".join(m.value for m in kind)
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be one of: {allowed} (got {_kind(value)} {value!r})")
    raise ValidationError(f"{field} {value!r} is not one of: {allowed}")


def check_bool(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{field} must be true or false, got {_kind(value)} {value!r}")
    return value


def check_int(value: object, field: str, *, low: int | None = None, high: int | None = None) -> int:
    """An ``int`` (not a bool) within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{field} must be an integer, got {_kind(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        if low is None:
            bound = f"at most {high:,}"
        elif high is None:
            bound = f"at least {low:,}"
        else:
            bound = f"in [{low:,}, {high:,}]"
        # (str() of an int over 4,300 digits raises: count them from the bits)
        digits = int(value.bit_length() * 0.30103) + 1
        shown = f"{value:,}" if value.bit_length() < 128 else f"a ~{digits}-digit number"
        raise ValidationError(f"{field} must be {bound}, got {shown}")
    return value


def check_version(record_id: str, version: object) -> int:
    """``version`` when a store can hold it: an int in [1, :data:`MAX_COUNT`]. Every change
    of a record makes a version, so a record at the last one takes no further change: the
    version after it is refused here, before anything is written, rather than as a driver's
    overflow (PostgreSQL's "bigint out of range", SQLite's ``OverflowError``) or a version
    no import takes."""
    if isinstance(version, int) and not isinstance(version, bool) and version > MAX_COUNT:
        shown = f"{version:,}" if version.bit_length() < 80 else "a number past 2**63 - 1"
        raise ValidationError(
            f"version must be in [1, {MAX_COUNT:,}] (2**63 - 1, the last one a store holds), "
            f"got {shown} for record {record_id!r}: a record at the last version takes no "
            "further change (an update, a delete or a restore each make one); nothing was "
            "written: add its content as a new record and purge this one"
        )
    return check_int(version, "version", low=1)


def check_read_version(record_id: str, current: int, expected_version: int) -> None:
    """``ConflictError`` when a record is no longer at the version a change was based on, as
    every store's ``replace`` raises it (which still checks, under its lock). Checked before
    the next version is built: ``expected_version`` at the last version a store holds, on a
    record that is not there, was refused for a next version past it."""
    if current != expected_version:
        raise ConflictError(
            f"record {record_id!r} is at version {current}, but this update was based on "
            f"version {expected_version:,}; re-read the record and apply the change again"
        )


def counted(count: int, more: int = 1) -> int:
    """An access count after ``more`` accesses: it stops at :data:`MAX_COUNT` (2**63 - 1),
    as the stores' SQL does, instead of overflowing (a statistic, exact below that)."""
    return min(count + more, MAX_COUNT)


def check_number(
    value: object, field: str, *, low: float, high: float, high_open: bool = False
) -> float:
    """A finite real number (int or float, not a bool) within ``[low, high]``."""
    bracket = ")" if high_open else "]"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(
            f"{field} must be a number in [{low}, {high}{bracket}, got {_kind(value)}"
            + ("" if not isinstance(value, str) else f" {value!r}; pass a float, not text")
        )
    try:
        number = float(value)
    except OverflowError:
        number = math.inf if value > 0 else -math.inf
    if not math.isfinite(number) or number < low or number > high or (high_open and number >= high):
        shown = value if isinstance(value, float) or abs(value) < 10**18 else "a huge integer"
        raise ValidationError(
            f"{field} must be a finite number in [{low}, {high}{bracket}, got {shown}"
        )
    return number


def check_unit(value: object, field: str) -> float:
    """A score in [0, 1] (importance, confidence, decay)."""
    return check_number(value, field, low=0.0, high=1.0)


def check_ratio(value: object, field: str) -> float:
    """A share in [0, 1) (what part of a budget to keep free)."""
    return check_number(value, field, low=0.0, high=1.0, high_open=True)


def check_text(
    value: object, field: str, *, allow_empty: bool = False, max_chars: int = DEFAULT_MAX_CHARS
) -> str:
    """Text a caller hands over (see ``validate_content``); with ``allow_empty`` a blank
    string passes as it is."""
    if allow_empty and isinstance(value, str) and not value.strip():
        return value
    return validate_content(value, max_chars=max_chars, field=field)


def check_id(value: object, field: str = "record_id") -> str:
    """A record id: a non-empty string of at most 256 characters."""
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string id, got {_kind(value)}")
    if not value.strip() or len(value) > MAX_ID_CHARS or "\x00" in value:
        raise ValidationError(
            f"{field} must be a non-empty id of at most {MAX_ID_CHARS} characters without NUL"
        )
    value = _clean_str(value, field)
    if len(value) * 4 > MAX_ID_BYTES and len(value.encode()) > MAX_ID_BYTES:
        raise ValidationError(id_too_wide(field, len(value.encode())))
    return value


def _string_items(value: object, field: str) -> list[object]:
    if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(value, Iterable):
        raise ValidationError(
            f"{field} must be a list of strings, got {_kind(value)}"
            + (
                f" {value!r} (wrap one value in a list: [{value!r}])"
                if isinstance(value, str) and len(value) < 80
                else ""
            )
        )
    return list(value)


def check_ids(value: object, field: str = "ids") -> tuple[str, ...]:
    return tuple(check_id(v, f"{field}[{i}]") for i, v in enumerate(_string_items(value, field)))


def check_names(value: object, field: str) -> tuple[str, ...]:
    """One string or a list of strings (layer names, filter values)."""
    items = [value] if isinstance(value, str) else _string_items(value, field)
    for i, v in enumerate(items):
        if not isinstance(v, str):
            raise ValidationError(f"{field}[{i}] must be a string, got {_kind(v)} {v!r}")
        _clean_str(v, f"{field}[{i}]")
    return tuple(items)  # type: ignore[arg-type]


def check_tags(value: object, field: str = "tags") -> tuple[str, ...]:
    """A list of non-empty strings (at most 256 of at most 256 characters), order kept,
    repeats dropped."""
    if value is None:
        return ()
    items = _string_items(value, field)
    if len(items) > MAX_TAGS:
        raise ValidationError(f"{field} has {len(items)} tags; at most {MAX_TAGS} are allowed")
    out: dict[str, None] = {}
    for i, tag in enumerate(items):
        if not isinstance(tag, str):
            raise ValidationError(
                f"{field}[{i}] must be a string, got {_kind(tag)} {tag!r}; tags are text"
            )
        if not tag.strip() or len(tag) > MAX_TAG_CHARS:
            raise ValidationError(
                f"{field}[{i}] must be non-empty text of at most {MAX_TAG_CHARS} characters"
            )
        if "\x00" in tag:  # PostgreSQL cannot read one back out of the stored list
            raise ValidationError(
                f"{field}[{i}] holds a NUL character (position {tag.index(chr(0))}), which no "
                "store accepts in a tag; remove it (it carries no meaning in text)"
            )
        out[_clean_str(tag, f"{field}[{i}]")] = None
    return tuple(out)


def check_json(value: object, field: str) -> Any:
    """``value`` as plain JSON (dict with string keys, list, str, finite number, bool, None),
    at most :data:`MAX_JSON_DEPTH` levels deep; tuples become lists. Iterative, so a
    pathological nesting is refused instead of overflowing the stack."""
    root: list[Any] = [None]
    # (value, container to put the copy in, key or index, path, depth)
    stack: list[tuple[object, Any, Any, str, int]] = [(value, root, 0, field, 0)]
    count = 0
    while stack:
        item, parent, slot, path, depth = stack.pop()
        count += 1
        if count > MAX_JSON_ITEMS:
            raise ValidationError(
                f"{field} holds more than {MAX_JSON_ITEMS:,} values; "
                "store large data elsewhere and keep a reference"
            )
        if depth > MAX_JSON_DEPTH:
            raise ValidationError(
                f"{field} is nested more than {MAX_JSON_DEPTH} levels deep "
                f"(at {path[:120]}...); flatten it"
            )
        if item is None or isinstance(item, int):  # bool is an int
            if item is not None and item.bit_length() > _MAX_JSON_INT_BITS:
                raise ValidationError(
                    f"{path} is an integer of about {int(item.bit_length() * 0.30103):,} "
                    "digits; memstrata writes JSON numbers of at most 4,300 digits (Python's "
                    "limit): store it as a string"
                )
            parent[slot] = item
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValidationError(
                    f"{path} is {item}, which JSON cannot hold; store a finite number or null"
                )
            parent[slot] = item
        elif isinstance(item, str):
            parent[slot] = _clean_str(item, path)
        elif isinstance(item, Mapping):
            copy: dict[str, Any] = {}
            parent[slot] = copy
            for key, sub in item.items():
                if not isinstance(key, str):
                    raise ValidationError(
                        f"{path} has the key {key!r} ({_kind(key)}); keys must be strings"
                    )
                _clean_str(key, f"{path} key")
                copy[key] = None
                stack.append((sub, copy, key, f"{path}.{key}", depth + 1))
        elif isinstance(item, list | tuple):
            seq: list[Any] = [None] * len(item)
            parent[slot] = seq
            for i, sub in enumerate(item):
                stack.append((sub, seq, i, f"{path}[{i}]", depth + 1))
        else:
            raise ValidationError(
                f"{path} is a {_kind(item)}, which is not JSON; use a str, number, bool, "
                "None, list or dict"
                + (" (turn a set into a sorted list)" if isinstance(item, set | frozenset) else "")
            )
    return root[0]


def check_metadata(value: object, field: str = "metadata") -> dict[str, Any]:
    """A mapping of string keys to JSON values (see :func:`check_json`); ``None`` is ``{}``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(
            f"{field} must be a mapping of string keys to JSON values, got {_kind(value)}"
        )
    checked: dict[str, Any] = check_json(value, field)
    return checked


_MIN_UTC = datetime.min.replace(tzinfo=UTC)


def check_time(value: object, field: str) -> datetime:
    """An aware UTC datetime from a ``datetime`` (naive = UTC), a ``date`` (midnight UTC) or
    an ISO-8601 string; a time that has no UTC equivalent in years 1–9999 is refused."""
    if isinstance(value, str):
        text = value
        try:
            value = datetime.fromisoformat(text.strip())
        except ValueError:
            raise ValidationError(
                f"{field} {text[:60]!r} is not an ISO-8601 time; pass a datetime or a string "
                "like '2024-05-01T09:30:00+00:00'"
            ) from None
    elif isinstance(value, date) and not isinstance(value, datetime):
        value = datetime.combine(value, time(), tzinfo=UTC)
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        # Never read as a Unix time: 1700000000 (seconds) and 1700000000000 (milliseconds)
        # are both plausible, and a wrong guess stores a date decades or millennia off.
        raise ValidationError(
            f"{field} must be a datetime or an ISO-8601 string, got {_kind(value)}: numbers "
            "are refused because an epoch number is ambiguous (seconds? milliseconds?); "
            "pass an ISO 8601 string such as '2024-05-01T09:30:00Z', or a datetime (for "
            "Unix seconds: datetime.fromtimestamp(n, timezone.utc))"
        )
    if not isinstance(value, datetime):
        raise ValidationError(
            f"{field} must be a datetime or an ISO-8601 string, got {_kind(value)}"
        )
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValidationError(
            f"{field} {value.isoformat()} is outside what can be stored (years 1-9999 in UTC); "
            "pass a time within that range"
        ) from None


def validate_record(record: Any, *, max_chars: int = DEFAULT_MAX_CHARS) -> Any:
    """Check every field of a :class:`MemoryRecord` as ``add`` checks its arguments, and
    return it with its content hash recomputed (imports must not carry a foreign one)."""
    from dataclasses import replace

    from .records import AccessControl, Content, Relation

    r = record
    check_id(r.id, "id")
    text = validate_content(r.content.raw, max_chars=max_chars, field="content.raw")
    if r.content.summary is not None:
        validate_content(r.content.summary, max_chars=max_chars, field="content.summary")
    structured = check_metadata(r.content.structured, "content.structured")
    for name in ("agent", "session", "superseded_by"):
        if getattr(r, name) is not None:
            check_id(getattr(r, name), name)
    if not isinstance(r.content_hash, str):
        raise ValidationError(f"content_hash must be a string, got {_kind(r.content_hash)}")
    for name in ("importance", "confidence", "decay_score"):
        check_unit(getattr(r, name), name)
    # every store keeps both in a 64-bit integer: one bound for all
    check_int(r.version, "version", low=1, high=MAX_COUNT)
    check_int(r.access_count, "access_count", low=0, high=MAX_COUNT)
    if r.embedding_dims is not None:
        check_int(r.embedding_dims, "embedding_dims", low=1, high=MAX_EMBEDDING_DIMS)
    times = {}
    for name in (
        "created_at",
        "updated_at",
        "observed_at",
        "last_accessed_at",
        "valid_from",
        "valid_to",
        "deleted_at",
    ):
        when = getattr(r, name)
        if when is not None:
            times[name] = check_time(when, name)
    relations = []
    for i, rel in enumerate(r.relations):
        if not isinstance(rel, Relation):
            raise ValidationError(f"relations[{i}] must be a Relation(kind, target_id)")
        check_id(rel.kind, f"relations[{i}].kind")
        check_id(rel.target_id, f"relations[{i}].target_id")
        relations.append(rel)
    if not isinstance(r.access, AccessControl):
        raise ValidationError("access must be an AccessControl")
    check_ids(r.access.allowed_users, "access.allowed_users")
    check_ids(r.access.allowed_roles, "access.allowed_roles")
    _check_consistent(r, times)
    return replace(
        r,
        content=Content(text, r.content.summary, structured),
        tags=check_tags(r.tags),
        source_ids=check_ids(r.source_ids, "source_ids"),
        metadata=check_metadata(r.metadata),
        content_hash=content_hash(text),
        **times,
    )


def _check_consistent(r: Any, times: Mapping[str, datetime]) -> None:
    """Refuse a record whose fields contradict each other in a way no memstrata write
    produces, so that storing it would keep one half and lose the other: which half is
    true only its author knows. (Times in an unusual order are not refused: a clock set
    back, a replay of old turns or a fact observed before the one it replaced produce
    them, and an export of those must import.)"""
    deleted_at = times.get("deleted_at")
    if r.status == "active" and deleted_at is not None:
        raise ValidationError(
            f"record {r.id} is active but has deleted_at {deleted_at.isoformat()}: every store "
            'clears deleted_at when a record is restored; set "status": "deleted" to import '
            'it deleted, or "deleted_at": null to import it active; nothing was imported'
        )
    if r.status == "deleted" and deleted_at is None:
        raise ValidationError(
            f"record {r.id} is deleted but has no deleted_at (every store records when a "
            'record is deleted): give "deleted_at" the time it was deleted, or set "status": '
            '"active" to import it active; nothing was imported'
        )
    if r.superseded_by is not None and r.superseded_by == r.id:
        raise ValidationError(
            f"record {r.id} is superseded by itself: it would be hidden from search with no "
            'record replacing it; set "superseded_by" to the id of the record that replaced '
            "it, or null if none did; nothing was imported"
        )


def check_model(value: object, kind: type[M], field: str) -> M:
    """An instance of the pydantic model ``kind``, or a mapping of its fields made into one
    (``TaskOutcome``, ``Reflection`` ...); anything else is a :class:`ValidationError`
    that names the field, never an ``AttributeError`` deep inside the call."""
    if isinstance(value, kind):
        return value
    name = kind.__name__
    if not isinstance(value, Mapping):
        raise ValidationError(
            f"{field} must be a {name} (or a mapping of its fields), got {_kind(value)}"
        )
    import pydantic

    try:
        made: M = kind.model_validate(dict(value))  # type: ignore[attr-defined]
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "?"
        raise ValidationError(f"{field}.{where}: {first['msg']} (a {name})") from None
    return made


def check_record(value: object, field: str) -> Any:
    """A :class:`MemoryRecord` (as ``list``/``get`` return them), not its id."""
    from .records import MemoryRecord

    if not isinstance(value, MemoryRecord):
        raise ValidationError(
            f"{field} must be a MemoryRecord (as mem.list or mem.get return), got {_kind(value)}"
        )
    return value


def check_records(value: object, field: str) -> list[Any]:
    """A list of :class:`MemoryRecord` (as ``list``/``search`` return them)."""
    return [
        check_record(item, f"{field}[{i}]") for i, item in enumerate(check_sequence(value, field))
    ]


def check_record_items(value: object, field: str) -> list[Any]:
    """Any iterable of :class:`MemoryRecord` (a generator too), read whole and checked
    before anything is written."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise ValidationError(f"{field} must be an iterable of MemoryRecord, got {_kind(value)}")
    return [check_record(item, f"{field}[{i}]") for i, item in enumerate(value)]


def check_sequence(value: object, field: str) -> Sequence[Any]:
    """A list or tuple (not a string or mapping)."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, list | tuple):
        raise ValidationError(f"{field} must be a list, got {_kind(value)}")
    return value


def check_text_sink(fp: object, field: str = "fp") -> None:
    """A file-like object open for writing text (``str``), checked before anything is read
    or written: a wrong one fails as a ``ValidationError`` that says what to pass."""
    how = "open(path, 'w', encoding='utf-8') or io.StringIO()"
    if not callable(getattr(fp, "write", None)):
        raise ValidationError(
            f"{field} must be a text file open for writing ({how}), got {_kind(fp)}"
        )
    mode = getattr(fp, "mode", "")
    if isinstance(fp, io.RawIOBase | io.BufferedIOBase) or (isinstance(mode, str) and "b" in mode):
        raise ValidationError(
            f"{field} is a binary file: open it in text mode ({how}) or wrap it with "
            "io.TextIOWrapper(fp, encoding='utf-8')"
        )
    if getattr(fp, "closed", False) is True:  # its writable() and write() raise ValueError
        raise ValidationError(f"{field} is closed: give a file open for writing ({how})")
    writable = getattr(fp, "writable", None)
    if callable(writable) and not writable():
        raise ValidationError(f"{field} is not open for writing: {how}")


def check_text_source(fp: object, field: str = "fp") -> None:
    """A file open for reading, or a list of lines (anything iterable but a string), checked
    before anything is read: a path given as a string would be read as its characters."""
    if isinstance(fp, str | bytes) or not hasattr(fp, "__iter__"):
        raise ValidationError(
            f"{field} must be a file open for reading (open(path, encoding='utf-8')) or a list "
            f"of lines, got {type(fp).__name__}; nothing was imported"
        )
