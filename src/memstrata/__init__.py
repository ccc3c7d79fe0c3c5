"""memstrata: layered long-term memory for LLM agents.

>>> from memstrata import Memory, Scope
>>> mem = Memory("sqlite:///memory.db")
>>> mem.add_message(Scope("acme", "alice", session="s1"), "user", "I'm vegetarian")

Importing the package has no side effects: no I/O, no model loading, no telemetry.
"""

from .clock import Clock, FixedClock, SystemClock
from .errors import (
    BudgetError,
    ConflictError,
    EmbeddingMismatchError,
    ImportFormatError,
    MemstrataError,
    MissingDependencyError,
    NotFoundError,
    ProviderError,
    QuotaExceededError,
    SchemaVersionError,
    StoreError,
    ValidationError,
)
from .filters import Filters
from .memory import Memory, Remembered
from .portability import ImportReport
from .records import (
    AccessControl,
    Content,
    MemoryRecord,
    Message,
    RecordStatus,
    RecordType,
    Relation,
    Role,
    Source,
    Visibility,
)
from .scope import Scope
from .search.config import SearchConfig
from .search.hit import SearchHit

__version__ = "0.1.0"

__all__ = [
    "AccessControl",
    "BudgetError",
    "Clock",
    "ConflictError",
    "Content",
    "EmbeddingMismatchError",
    "Filters",
    "FixedClock",
    "ImportFormatError",
    "ImportReport",
    "Memory",
    "MemoryRecord",
    "MemstrataError",
    "Message",
    "MissingDependencyError",
    "NotFoundError",
    "ProviderError",
    "QuotaExceededError",
    "RecordStatus",
    "RecordType",
    "Relation",
    "Remembered",
    "Role",
    "SchemaVersionError",
    "Scope",
    "SearchConfig",
    "SearchHit",
    "Source",
    "StoreError",
    "SystemClock",
    "ValidationError",
    "Visibility",
]
