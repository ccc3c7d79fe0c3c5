"""Search and listing filters, and the pure predicate every store must agree with."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from .calls import checked_init
from .errors import ValidationError
from .records import MemoryRecord, RecordType, Source
from .validation import check_bool, check_enum, check_json, check_names, check_time, check_unit

__all__ = ["METADATA_OPS", "Filters", "MetadataCondition"]

METADATA_OPS = ("eq", "ne", "in", "gt", "lt", "contains")


@dataclass(frozen=True, slots=True)
class MetadataCondition:
    key: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        if self.op not in METADATA_OPS:
            raise ValidationError(
                f"metadata operator {self.op!r} on {self.key!r} is unknown; use one of "
                + ", ".join(METADATA_OPS)
            )
        if self.op == "in" and not isinstance(self.value, list | tuple | set | frozenset):
            raise ValidationError(f"metadata 'in' on {self.key!r} needs a list of values")

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        present = self.key in metadata
        actual = metadata.get(self.key)
        if self.op == "eq":
            return present and actual == self.value
        if self.op == "ne":
            return not present or actual != self.value
        if self.op == "in":
            return present and actual in self.value
        if self.op == "contains":
            if isinstance(actual, str):
                return isinstance(self.value, str) and self.value in actual
            if isinstance(actual, list | tuple):
                return self.value in actual
            return False
        if not present or actual is None:
            return False
        try:
            return bool(actual > self.value) if self.op == "gt" else bool(actual < self.value)
        except TypeError:
            return False


def _parse_metadata(spec: Mapping[str, Any]) -> tuple[MetadataCondition, ...]:
    conds: list[MetadataCondition] = []
    for key, cond in spec.items():
        key = _metadata_key(key)
        if isinstance(cond, Mapping):
            if not cond:
                raise ValidationError(f"metadata filter on {key!r} is an empty operator map")
            for op, value in cond.items():
                if isinstance(value, set | frozenset):
                    value = list(value)
                if not isinstance(op, str):
                    raise ValidationError(
                        f"metadata operator {op!r} on {key!r} must be one "
                        "of " + ", ".join(METADATA_OPS)
                    )
                conds.append(
                    MetadataCondition(
                        key, op.lstrip("$"), check_json(value, f"filters.metadata.{key}")
                    )
                )
        else:
            conds.append(MetadataCondition(key, "eq", check_json(cond, f"filters.metadata.{key}")))
    return tuple(conds)


def _text(value: object) -> bool:
    if type(value) is not str:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _well_formed(f: Filters) -> bool:
    """Whether a :class:`Filters` holds what :meth:`Filters.parse` makes of a mapping (the
    common case, checked without copying; its metadata conditions are checked apart)."""
    for names in (f.tags_any, f.tags_all, f.ids):
        if names is not None and not (type(names) is frozenset and all(map(_text, names))):
            return False
    for when in (f.observed_after, f.observed_before, f.valid_at):
        if when is not None and not (isinstance(when, datetime) and when.tzinfo is UTC):
            return False
    mi = f.min_importance
    return (
        (
            f.types is None
            or (type(f.types) is frozenset and all(type(t) is RecordType for t in f.types))
        )
        and (
            f.sources is None
            or (type(f.sources) is frozenset and all(type(x) is Source for x in f.sources))
        )
        and (mi is None or (type(mi) is float and 0.0 <= mi <= 1.0))
        and type(f.include_deleted) is bool
        and type(f.include_superseded) is bool
        and type(f.metadata) is tuple
    )


def _spec_of(f: Filters) -> dict[str, Any]:
    """A directly built :class:`Filters` as the mapping :meth:`Filters.parse` checks (its
    metadata apart: :func:`_with_conditions`)."""
    return {
        "types": f.types,
        "tags": f.tags_any,
        "tags_all": f.tags_all,
        "observed_after": f.observed_after,
        "observed_before": f.observed_before,
        "valid_at": f.valid_at,
        "min_importance": f.min_importance,
        "sources": f.sources,
        "include_deleted": f.include_deleted,
        "include_superseded": f.include_superseded,
        "ids": f.ids,
    }


def _with_conditions(parsed: Filters, given: Filters) -> Filters:
    """``parsed`` with ``given``'s metadata conditions, checked: a mapping (as
    ``filters={"metadata": ...}`` takes) or :class:`MetadataCondition` s with a string key
    and a JSON value."""
    value: Any = given.metadata
    if isinstance(value, Mapping):
        return replace(parsed, metadata=_parse_metadata(value))
    if isinstance(value, MetadataCondition):
        value = (value,)
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise ValidationError(
            "filters.metadata must be a mapping of key -> value/operators or a tuple of "
            f"MetadataCondition, got {type(value).__name__}"
        )
    conds: list[MetadataCondition] = []
    for c in value:
        if not isinstance(c, MetadataCondition):
            raise ValidationError(
                "filters.metadata must be a mapping of key -> value/operators or a tuple of "
                f"MetadataCondition, not one holding {type(c).__name__}"
            )
        key = _metadata_key(c.key)
        conds.append(MetadataCondition(key, c.op, check_json(c.value, f"filters.metadata.{key}")))
    return replace(parsed, metadata=tuple(conds))


def _metadata_key(key: object) -> str:
    if not isinstance(key, str):
        raise ValidationError(f"filters.metadata key {key!r} must be a string")
    return check_names(key, "filters.metadata key")[0]


def _without_nul(f: Filters) -> Filters:
    """``f``, refused if a tag or id it asks for holds a NUL: no store holds one (tags and
    ids are refused with one when written) and PostgreSQL cannot take one as a parameter,
    so the answer is this error on every store rather than nothing on some."""
    for name, values in (("tags", f.tags_any), ("tags_all", f.tags_all), ("ids", f.ids)):
        for v in values or ():
            if isinstance(v, str) and "\x00" in v:
                raise ValidationError(
                    f"filters.{name} holds {v!r} with a NUL character, which no stored tag or "
                    "id has; remove it"
                )
    return f


_KNOWN = frozenset(
    {
        "types",
        "tags",
        "tags_all",
        "observed_after",
        "observed_before",
        "valid_at",
        "min_importance",
        "sources",
        "metadata",
        "include_deleted",
        "include_superseded",
        "ids",
    }
)


@checked_init
@dataclass(frozen=True, slots=True)
class Filters:
    """What a search or listing may return, beyond the scope.

    By default only active (not soft-deleted) and current (not superseded) records match;
    ``valid_at`` asks what was true at a moment instead ("as of" queries).
    """

    types: frozenset[RecordType] | None = None
    tags_any: frozenset[str] | None = None
    tags_all: frozenset[str] | None = None
    observed_after: datetime | None = None
    observed_before: datetime | None = None
    valid_at: datetime | None = None
    min_importance: float | None = None
    sources: frozenset[Source] | None = None
    metadata: tuple[MetadataCondition, ...] = ()
    include_deleted: bool = False
    include_superseded: bool = False
    ids: frozenset[str] | None = field(default=None)

    @classmethod
    def parse(cls, spec: Filters | Mapping[str, Any] | None) -> Filters:
        """Build filters from a plain mapping (as the CLI, HTTP API and MCP pass them).

        Every value is checked here, so a bad filter is a :class:`ValidationError` naming
        the key on every store, never a crash inside one."""
        if spec is None:
            return cls()
        if isinstance(spec, Filters):
            if _well_formed(spec):
                return _without_nul(spec) if not spec.metadata else _with_conditions(spec, spec)
            # built directly with a list, a str, a naive time...: each store read it its own
            # way (a raw AttributeError on one, no match on another); checked as a mapping is
            return _with_conditions(cls.parse(_spec_of(spec)), spec)
        if not isinstance(spec, Mapping):
            raise ValidationError(
                f"filters must be a mapping such as {{'tags': ['work']}}, got {type(spec).__name__}"
            )
        unknown = [k for k in spec if k not in _KNOWN]
        if unknown:
            raise ValidationError(
                f"unknown filter key(s) {sorted(map(repr, unknown))}; known: {sorted(_KNOWN)}"
            )

        def when(name: str) -> datetime | None:
            v = spec.get(name)
            return None if v is None else check_time(v, f"filters.{name}")

        def strings(name: str) -> frozenset[str] | None:
            v = spec.get(name)
            return None if v is None else frozenset(check_names(v, f"filters.{name}"))

        def enums(kind: Any, name: str) -> Any:
            v = spec.get(name)
            if v is None:
                return None
            return frozenset(
                check_enum(kind, x, f"filters.{name}") for x in check_names(v, f"filters.{name}")
            )

        meta = spec.get("metadata")
        if meta is None:
            meta = {}
        if not isinstance(meta, Mapping):
            raise ValidationError("filters.metadata must be a mapping of key -> value/operators")
        mi = spec.get("min_importance")
        return _without_nul(
            cls(
                types=enums(RecordType, "types"),
                tags_any=strings("tags"),
                tags_all=strings("tags_all"),
                observed_after=when("observed_after"),
                observed_before=when("observed_before"),
                valid_at=when("valid_at"),
                min_importance=None if mi is None else check_unit(mi, "filters.min_importance"),
                sources=enums(Source, "sources"),
                metadata=_parse_metadata(meta),
                include_deleted=check_bool(
                    spec.get("include_deleted", False), "filters.include_deleted"
                ),
                include_superseded=check_bool(
                    spec.get("include_superseded", False), "filters.include_superseded"
                ),
                ids=strings("ids"),
            )
        )

    def matches(self, r: MemoryRecord) -> bool:
        """The reference predicate (scope is checked separately, by the store's query)."""
        if not self.include_deleted and not r.is_active:
            return False
        if self.valid_at is not None:
            if r.valid_from is not None and r.valid_from > self.valid_at:
                return False
            if r.valid_to is not None and r.valid_to <= self.valid_at:
                return False
        elif not self.include_superseded and r.superseded_by is not None:
            return False
        if self.ids is not None and r.id not in self.ids:
            return False
        if self.types is not None and r.type not in self.types:
            return False
        if self.tags_any is not None and not self.tags_any.intersection(r.tags):
            return False
        if self.tags_all is not None and not self.tags_all.issubset(r.tags):
            return False
        if self.observed_after is not None and r.observed_at < self.observed_after:
            return False
        if self.observed_before is not None and r.observed_at >= self.observed_before:
            return False
        if self.min_importance is not None and r.importance < self.min_importance:
            return False
        if self.sources is not None and r.source not in self.sources:
            return False
        return all(c.matches(r.metadata) for c in self.metadata)
