"""What a search returns: a record, its score, its layer and its provenance."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..records import MemoryRecord, RecordType

__all__ = ["LAYER_TYPES", "SearchHit", "layer_of", "types_of_layers"]

LAYER_TYPES: Mapping[str, tuple[RecordType, ...]] = {
    "messages": (RecordType.MESSAGE,),
    "summaries": (RecordType.SUMMARY,),
    "episodic": (RecordType.EPISODE,),
    "semantic": (RecordType.FACT, RecordType.KNOWLEDGE, RecordType.NOTE),
    "mid_term": (RecordType.CLUSTER,),
    "key": (RecordType.KEY,),
    "procedural": (RecordType.PROCEDURE,),
    "working": (RecordType.TASK,),
}
_LAYER_OF = {t: layer for layer, types in LAYER_TYPES.items() for t in types}


def layer_of(record_type: RecordType) -> str:
    return _LAYER_OF[record_type]


def types_of_layers(layers: object) -> frozenset[RecordType]:
    from ..errors import ValidationError

    names = [layers] if isinstance(layers, str) else list(layers)  # type: ignore[call-overload]
    out: set[RecordType] = set()
    for name in names:
        if name not in LAYER_TYPES:
            raise ValidationError(f"unknown layer {name!r}; layers are {sorted(LAYER_TYPES)}")
        out.update(LAYER_TYPES[name])
    return frozenset(out)


@dataclass(frozen=True, slots=True)
class SearchHit:
    record: MemoryRecord
    score: float
    layer: str
    source_ids: tuple[str, ...]
    explanation: Mapping[str, float | int | None] | None = field(default=None)

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def text(self) -> str:
        return self.record.text
