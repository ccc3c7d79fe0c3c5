"""The garbage collector's first threshold, for a process that memstrata's own entry points own.

A search or a context build allocates tens of thousands of short-lived container objects
(decoded records, fused candidates, context lines). With CPython's default first threshold
(700 allocations) collections run in the middle of every call; the call's live objects
survive them, are promoted to the oldest generation, and every few calls a full collection
of the whole heap (10-25 ms in a process holding a 10k-record store) lands inside one call.
That was most of ``build_context``'s p95 in ``memstrata bench scale``
(docs/measurements.md, "The garbage collector and the tail"). A first threshold of a few
thousand lets a call's temporaries die young instead.

The library never calls :func:`tune_gc` by itself (it does not change its host's process);
the CLI does in ``main`` (so ``memstrata serve``, ``worker``, ``mcp`` and ``bench``), and so
does each ``serve --workers`` process. A program that embeds memstrata in its own
long-running process can call it once at start-up.
"""

from __future__ import annotations

import gc

from .errors import ValidationError

__all__ = ["OWNED_THRESHOLD", "tune_gc", "tune_gc_setting"]

OWNED_THRESHOLD = 5000


def tune_gc(threshold: int = OWNED_THRESHOLD) -> bool:
    """Raise the collector's first-generation threshold to ``threshold``; the older
    generations' thresholds are kept. Never lowers it (a higher value someone set wins) and
    leaves a disabled collector alone. Returns whether the threshold changed."""
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise ValidationError(
            f"threshold must be a positive integer (allocations between collections), "
            f"got {threshold!r}"
        )
    first, second, third = gc.get_threshold()
    if not gc.isenabled() or first == 0 or first >= threshold:
        return False
    gc.set_threshold(threshold, second, third)
    return True


def tune_gc_setting(value: str | None) -> bool:
    """:func:`tune_gc` from a setting's text (the CLI and the server pass
    ``MEMSTRATA_GC_THRESHOLD``): unset or empty means :data:`OWNED_THRESHOLD`, ``0`` leaves
    the collector alone, anything else must be a positive integer."""
    text = (value or "").strip()
    if not text:
        return tune_gc()
    try:
        threshold = int(text)
    except ValueError:
        threshold = -1
    if threshold == 0:
        return False
    if threshold < 0:
        raise ValidationError(
            f"MEMSTRATA_GC_THRESHOLD must be a whole number (0 leaves Python's garbage "
            f"collector as it is), got {value!r}"
        )
    return tune_gc(threshold)
