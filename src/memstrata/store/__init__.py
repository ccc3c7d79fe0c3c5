"""Storage backends. Pick one with :func:`open_store` from a URL."""

from .base import Candidate, PurgeReport, RecordWrite, Store, StoreStats
from .url import open_store

__all__ = ["Candidate", "PurgeReport", "RecordWrite", "Store", "StoreStats", "open_store"]
