"""memstrata: layered long-term memory for LLM agents.

>>> from memstrata import Memory, Scope
>>> mem = Memory("sqlite:///memory.db")
>>> mem.add_message(Scope("acme", "alice", session="s1"), "user", "I'm vegetarian")

Importing the package has no side effects: no I/O, no model loading, no telemetry.
"""

import typing as _typing

if _typing.TYPE_CHECKING:  # the names below are imported on first use (PEP 562), not at import
    from .aio import AsyncMemory
    from .clock import Clock, FixedClock, SystemClock
    from .errors import (
        ArgumentError,
        BudgetError,
        ConflictError,
        EmbeddingMismatchError,
        ExportWriteError,
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

# Where each public name lives; ``from memstrata import Memory`` imports numpy and the rest
# of the library only then, so ``import memstrata`` and ``memstrata --help`` stay fast.
_LAZY = {
    "AsyncMemory": "aio",
    **dict.fromkeys(("Clock", "FixedClock", "SystemClock"), "clock"),
    **dict.fromkeys(
        (
            "ArgumentError",
            "BudgetError",
            "ConflictError",
            "EmbeddingMismatchError",
            "ExportWriteError",
            "ImportFormatError",
            "MemstrataError",
            "MissingDependencyError",
            "NotFoundError",
            "ProviderError",
            "QuotaExceededError",
            "SchemaVersionError",
            "StoreError",
            "ValidationError",
        ),
        "errors",
    ),
    "Filters": "filters",
    "Memory": "memory",
    "Remembered": "memory",
    "ImportReport": "portability",
    **dict.fromkeys(
        (
            "AccessControl",
            "Content",
            "MemoryRecord",
            "Message",
            "RecordStatus",
            "RecordType",
            "Relation",
            "Role",
            "Source",
            "Visibility",
        ),
        "records",
    ),
    "Scope": "scope",
    "SearchConfig": "search.config",
    "SearchHit": "search.hit",
}


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memstrata' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__version__ = "0.1.0"

__all__ = [
    "AccessControl",
    "ArgumentError",
    "AsyncMemory",
    "BudgetError",
    "Clock",
    "ConflictError",
    "Content",
    "EmbeddingMismatchError",
    "ExportWriteError",
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
