"""Vectors of another model in a store, as stores written before store/one_model.py hold."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def another_model(store: Any, model: str, dims: int) -> Iterator[None]:
    """Let ``store`` take vectors of ``model`` inside the block (the mark a migration sets),
    so a test can build what an older memstrata, or a writer of an older model, left."""
    store.set_meta("reembed_to", f"{model}\t{dims}")
    try:
        yield
    finally:
        store.set_meta("reembed_to", "")
