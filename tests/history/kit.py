"""Version sequences shaped like what the layers write: a cluster that absorbs turns (a
sliding window of member ids as provenance, a running-mean centroid, a digest rewritten
around the newest turns) and a fact mentioned again and again (provenance that grows)."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np

from memstrata.records import AccessControl, Content, MemoryRecord, RecordType, Visibility

T0 = datetime(2024, 1, 1, tzinfo=UTC)
_NAMES = ["Alice", "Bob", "Carmen", "Dmitri", "Elena", "Farid", "Grace", "Hiro"]
_THINGS = [
    "pottery class",
    "marathon training",
    "sourdough starter",
    "job interview",
    "guitar lessons",
    "garden project",
    "book club",
    "camping trip",
]


def _turn(i: int) -> str:
    return (
        f"{_NAMES[i % 8]} mentioned the {_THINGS[(i * 3) % 8]} again on day {i}, "
        f"and said it went {'well' if i % 3 else 'badly'}."
    )


def _id(i: int) -> str:
    return hashlib.blake2b(str(i).encode(), digest_size=16).hexdigest()


def base(kind: RecordType, text: str, *, user: str = "u1") -> MemoryRecord:
    return MemoryRecord(
        id=_id(-1),
        tenant="t1",
        user=user,
        type=kind,
        content=Content(text),
        created_at=T0,
        updated_at=T0,
        observed_at=T0,
        embedding_model="test",
        embedding_dims=384,
        access=AccessControl(Visibility.PRIVATE),
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
    )


def cluster_versions(
    n: int, *, dims: int = 384, window: int = 200, per_absorb: int = 5, seed: int = 0
) -> list[MemoryRecord]:
    """``n`` versions of one cluster, each absorbing ``per_absorb`` turns."""
    rng = np.random.default_rng(seed)
    members: list[str] = []
    total = np.zeros(dims)
    out: list[MemoryRecord] = []
    record = base(RecordType.CLUSTER, "(empty cluster)")
    for v in range(1, n + 1):
        for _ in range(per_absorb):
            vec = rng.standard_normal(dims)
            total += vec / np.linalg.norm(vec)
            members.append(_id(len(members)))
        count = len(members)
        centroid = [round(float(x), 7) for x in total / count]
        kept = members[-window:]
        body = " ".join(_turn(i) for i in range(max(0, count - 8), count))
        text = f"[{count} turns, 2024-01-01 to 2024-02-{1 + count % 28:02d}] {body}"
        when = T0 + timedelta(hours=v)
        record = replace(
            record,
            version=v,
            updated_at=when,
            observed_at=when,
            source_ids=tuple(kept),
            content=Content(
                text,
                structured={
                    "members": kept,
                    "count": count,
                    "centroid": centroid,
                    "model": "test",
                    "hits": 0,
                    "visits": v,
                    "interaction_length": count,
                    "last_visit": when.isoformat(),
                    "time_start": T0.isoformat(),
                    "time_end": when.isoformat(),
                    "promoted_key": None,
                },
            ),
            content_hash=hashlib.sha256(text.encode()).hexdigest(),
        )
        out.append(record)
    return out


def fact_versions(n: int) -> list[MemoryRecord]:
    """``n`` versions of one fact, each one more mention (one more source id)."""
    record = base(RecordType.FACT, "diet: vegetarian")
    out: list[MemoryRecord] = []
    for v in range(1, n + 1):
        when = T0 + timedelta(minutes=v)
        confidence = round(1 - 0.5**v, 6)
        record = replace(
            record,
            version=v,
            updated_at=when,
            observed_at=when,
            confidence=confidence,
            source_ids=tuple(_id(i) for i in range(v)),
            content=Content(
                "diet: vegetarian",
                structured={
                    "category": "preference",
                    "key": "diet",
                    "value": "vegetarian",
                    "confidence": confidence,
                    "mentions": v,
                    "first_observed": T0.isoformat(),
                    "last_updated": when.isoformat(),
                    "expires_at": None,
                    "evidence": "",
                    "conflicts": [],
                },
            ),
            metadata={"category": "preference", "key": "diet"},
        )
        out.append(record)
    return out
