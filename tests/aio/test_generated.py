"""AsyncMemory mirrors Memory: generated, never stale, the same signature for every method."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

import pytest

from memstrata import AsyncMemory, Memory
from memstrata.aio import _generated

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_aio", ROOT / "scripts" / "gen_aio.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_aio"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def test_the_generated_file_is_not_stale() -> None:
    current = Path(_generated.__file__).read_text(encoding="utf-8")
    assert current == GEN.render(), (
        "src/memstrata/aio/_generated.py is stale: a public method of Memory or of a layer "
        "service changed; run `python scripts/gen_aio.py`"
    )


def _public(cls: type) -> dict[str, object]:
    return {n: v for n, v in inspect.getmembers(cls) if not n.startswith("_")}


def _same_signature(sync: object, twin: object, where: str, *, doc: bool = True) -> None:
    assert inspect.iscoroutinefunction(twin), f"{where} is not async"
    assert inspect.signature(twin) == inspect.signature(sync), where  # type: ignore[arg-type]
    if doc:
        assert inspect.getdoc(twin) == inspect.getdoc(sync), f"{where}: docstring differs"


def test_every_public_memory_method_has_an_async_twin_with_the_same_signature() -> None:
    mirrored = 0
    for name, member in _public(Memory).items():
        if name in GEN.EXCLUDED or name in GEN.SERVICES:
            continue
        assert inspect.isfunction(member), f"Memory.{name} is public but not mirrored"
        _same_signature(
            member, getattr(AsyncMemory, name), f"AsyncMemory.{name}", doc=name not in GEN.LIFECYCLE
        )
        mirrored += 1
    assert mirrored >= 20  # add, search, build_context, ... (guards against an empty loop)
    init_sync = inspect.signature(Memory.__init__)
    assert inspect.signature(AsyncMemory.__init__) == init_sync


def test_every_layer_service_is_mirrored_method_by_method() -> None:
    for attr, (module, sync_name, async_name) in GEN.SERVICES.items():
        sync_cls = getattr(importlib.import_module(module), sync_name)
        prop = inspect.getattr_static(Memory, attr)
        assert isinstance(prop, property)
        assert (
            inspect.getattr_static(AsyncMemory, attr).fget.__annotations__["return"] == async_name
        )
        async_cls = getattr(_generated, async_name)
        sync_methods = {n for n, m in _public(sync_cls).items() if inspect.isfunction(m)}
        async_methods = {n for n, m in _public(async_cls).items() if inspect.isfunction(m)}
        assert sync_methods and sync_methods == async_methods, attr
        for name in sync_methods:
            _same_signature(getattr(sync_cls, name), getattr(async_cls, name), f"mem.{attr}.{name}")


def test_what_is_not_mirrored_is_listed_with_a_reason_and_really_absent() -> None:
    public = _public(Memory)
    for name, reason in GEN.EXCLUDED.items():
        assert name in public, f"EXCLUDED names {name!r}, which Memory no longer has"
        assert reason and not hasattr(AsyncMemory, name)
    # the one hand-written mirror is the lifecycle: close() is aclose()
    _same_signature(Memory.close, AsyncMemory.close, "AsyncMemory.close", doc=False)


def test_a_method_added_to_memory_gets_a_twin_at_the_next_generation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Someone adds ``Memory.compact``: the generator writes its twin (so the stale check fails
    until the file is regenerated)."""

    def compact(self, scope: str, *, dry_run: bool = False) -> int:  # type: ignore[no-untyped-def]
        """Compact the store."""
        return 0

    monkeypatch.setattr(Memory, "compact", compact, raising=False)
    text = GEN.render()
    assert "    async def compact(\n" in text and "dry_run: bool = False," in text
    assert "lambda m: m.compact(" in text
