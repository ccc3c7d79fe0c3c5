"""Search and listing filters, and the pure predicate every store must agree with."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .clock import ensure_utc
from .errors import ValidationError
from .records import MemoryRecord, RecordType, Source

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
        if isinstance(cond, Mapping):
            if not cond:
                raise ValidationError(f"metadata filter on {key!r} is an empty operator map")
            for op, value in cond.items():
                conds.append(MetadataCondition(key, str(op).lstrip("$"), value))
        else:
            conds.append(MetadataCondition(key, "eq", cond))
    return tuple(conds)


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
        """Build filters from a plain mapping (as the CLI, HTTP API and MCP pass them)."""
        if spec is None:
            return cls()
        if isinstance(spec, Filters):
            return spec
        known = {"types", "tags", "tags_all", "observed_after", "observed_before", "valid_at",
                 "min_importance", "sources", "metadata", "include_deleted",
                 "include_superseded", "ids"}
        unknown = set(spec) - known
        if unknown:
            raise ValidationError(
                f"unknown filter key(s) {sorted(unknown)}; known: {sorted(known)}"
            )

        def enums(kind: Any, values: Iterable[Any] | None, name: str) -> Any:
            if values is None:
                return None
            if isinstance(values, str):
                values = [values]
            out = set()
            for v in values:
                try:
                    out.add(kind(v))
                except ValueError:
                    allowed = ", ".join(m.value for m in kind)
                    raise ValidationError(f"{name}: {v!r} is not one of {allowed}") from None
            return frozenset(out)

        def when(name: str) -> datetime | None:
            v = spec.get(name)
            if v is None:
                return None
            if isinstance(v, str):
                try:
                    v = datetime.fromisoformat(v)
                except ValueError:
                    raise ValidationError(f"{name} {v!r} is not an ISO-8601 time") from None
            if not isinstance(v, datetime):
                raise ValidationError(f"{name} must be a datetime or ISO-8601 string")
            return ensure_utc(v)

        def strings(name: str) -> frozenset[str] | None:
            v = spec.get(name)
            if v is None:
                return None
            return frozenset([v] if isinstance(v, str) else v)

        meta = spec.get("metadata") or {}
        if not isinstance(meta, Mapping):
            raise ValidationError("filters.metadata must be a mapping of key -> value/operators")
        mi = spec.get("min_importance")
        return cls(
            types=enums(RecordType, spec.get("types"), "types"),
            tags_any=strings("tags"),
            tags_all=strings("tags_all"),
            observed_after=when("observed_after"),
            observed_before=when("observed_before"),
            valid_at=when("valid_at"),
            min_importance=float(mi) if mi is not None else None,
            sources=enums(Source, spec.get("sources"), "sources"),
            metadata=_parse_metadata(meta),
            include_deleted=bool(spec.get("include_deleted", False)),
            include_superseded=bool(spec.get("include_superseded", False)),
            ids=strings("ids"),
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
