"""What a migration did and found: counts per kind, and every difference named."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..url import redact_url

__all__ = ["KINDS", "KindCount", "MigrationReport", "Mismatch", "redact_url"]

# What a store holds, in the order a migration copies it.
KINDS = ("meta", "cache", "records", "versions", "vectors", "counters", "jobs", "audit", "keys")
_SHOWN = 50  # differences kept by name; the count goes on


@dataclass
class KindCount:
    """One kind of item: how many the source and the target hold, how many this run wrote."""

    source: int = 0
    target: int = 0
    copied: int = 0
    mismatched: int = 0


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One difference: which kind, which item (``tenant/user/id`` for records) and what."""

    kind: str
    item: str
    what: str

    def __str__(self) -> str:
        return f"{self.kind} {self.item}: {self.what}"


@dataclass
class MigrationReport:
    source: str
    target: str
    dry_run: bool = False
    resumed: bool = False
    verified: bool = False
    batch_size: int = 500
    counts: dict[str, KindCount] = field(default_factory=lambda: {k: KindCount() for k in KINDS})
    mismatches: list[Mismatch] = field(default_factory=list)
    mismatch_total: int = 0
    copy_seconds: float = 0.0
    verify_seconds: float = 0.0
    # Texts (a version's content or summary) holding a NUL character, and what was done.
    nul_texts: int = 0
    replace_nul: bool = False
    target_stores_nul: bool = True

    @property
    def ok(self) -> bool:
        """No difference found (and, unless this was a dry run, verification ran)."""
        return self.mismatch_total == 0 and (self.verified or self.dry_run)

    @property
    def records_per_second(self) -> float:
        n = self.counts["records"].copied
        return n / self.copy_seconds if self.copy_seconds > 0 else 0.0

    def add(self, kind: str, item: str, what: str) -> None:
        self.mismatch_total += 1
        self.counts[kind].mismatched += 1
        if len(self.mismatches) < _SHOWN:
            self.mismatches.append(Mismatch(kind, item, what))

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "dry_run": self.dry_run,
            "resumed": self.resumed,
            "verified": self.verified,
            "ok": self.ok,
            "batch_size": self.batch_size,
            "counts": {
                k: {
                    "source": c.source,
                    "target": c.target,
                    "copied": c.copied,
                    "mismatched": c.mismatched,
                }
                for k, c in self.counts.items()
            },
            "mismatch_total": self.mismatch_total,
            "mismatches": [
                {"kind": m.kind, "item": m.item, "what": m.what} for m in self.mismatches
            ],
            "copy_seconds": round(self.copy_seconds, 3),
            "verify_seconds": round(self.verify_seconds, 3),
            "records_per_second": round(self.records_per_second, 1),
            "nul_texts": self.nul_texts,
            "nul_replaced": self.nul_texts if self.replace_nul and not self.dry_run else 0,
        }
