"""A public call whose arguments do not fit its signature raises ``ArgumentError`` (a
``MemstrataError`` that names the method and what it takes; still a ``TypeError``) and
writes nothing, on the sync and async API alike.

Before (noticed since session 12, left alone until session 22): ``mem.add(scope)``, a
misspelt keyword (``tagz=``), a keyword-only argument given by position or
``Scope("acme")`` raised Python's bare ``TypeError``."""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest

from memstrata import ArgumentError, AsyncMemory, Filters, Memory, MemstrataError, Scope
from memstrata.calls import checked_calls

ALICE = Scope("acme", "alice", session="s1")


def _public(obj: object) -> list[tuple[str, Callable[..., Any]]]:
    """The public methods ``obj``'s class defines, bound to ``obj``."""
    return [
        (name, getattr(obj, name))
        for name, member in vars(type(obj)).items()
        if not name.startswith("_") and inspect.isfunction(member)
    ]


def _too_many(fn: Callable[..., Any]) -> tuple[Any, ...] | None:
    """More positional arguments than ``fn`` takes (None if it takes any number)."""
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    return (ALICE,) * (n + 1)


def _with_bad_keyword(fn: Callable[..., Any]) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """Every required argument (as ``ALICE``) and a keyword ``fn`` does not take (None if it
    takes any keyword)."""
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    required = [p for p in params if p.default is p.empty and p.kind is not p.VAR_POSITIONAL]
    args = tuple(ALICE for p in required if p.kind is not p.KEYWORD_ONLY)
    kwargs = {p.name: ALICE for p in required if p.kind is p.KEYWORD_ONLY}
    return args, {**kwargs, "tagz": ["x"]}


def _surfaces(mem: Memory | AsyncMemory) -> list[tuple[str, Callable[..., Any]]]:
    out = [(f"{type(mem).__name__}.{n}", fn) for n, fn in _public(mem)]
    for attr in ("facts", "key", "tasks", "episodes", "knowledge", "procedures", "audit"):
        service = getattr(mem, attr)
        out += [(f"{type(service).__name__}.{n}", fn) for n, fn in _public(service)]
    return out


def _count(mem: Memory) -> int:
    return len(mem.list(ALICE.user_scope, filters=Filters(include_deleted=True), limit=1000))


@pytest.fixture
def mem() -> Any:
    m = Memory("memory://", embedder="hashing", background=False)
    m.add(ALICE, "I keep my bicycle in the shed")
    yield m
    m.close()


def test_every_sync_method_refuses_arguments_it_does_not_take(mem: Memory) -> None:
    surfaces = _surfaces(mem)
    assert len(surfaces) > 60  # the whole public API, not a handful
    checked = 0
    for name, fn in surfaces:
        args = _too_many(fn)
        if args is not None:
            with pytest.raises(ArgumentError, match=rf"{name.split('.')[-1]}\(\).*it takes \("):
                fn(*args)
            checked += 1
        call = _with_bad_keyword(fn)
        if call is not None:
            with pytest.raises(ArgumentError, match="unexpected keyword argument 'tagz'"):
                fn(*call[0], **call[1])
            checked += 1
    assert checked > 100
    assert _count(mem) == 1  # nothing was written


def test_every_async_method_refuses_arguments_it_does_not_take() -> None:
    async def main() -> int:
        checked = 0
        async with AsyncMemory("memory://", embedder="hashing", background=False) as mem:
            await mem.add(ALICE, "I keep my bicycle in the shed")
            for _name, fn in _surfaces(mem):
                args = _too_many(fn)
                if args is None:
                    continue
                with pytest.raises(ArgumentError):
                    got = fn(*args)  # an async generator refuses at the call
                    if inspect.isawaitable(got):
                        await got
                checked += 1
            assert len(await mem.list(ALICE.user_scope, limit=10)) == 1
        return checked

    assert asyncio.run(main()) > 50


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (
            lambda m: m.add(ALICE),
            re.escape(
                "Memory.add() was called with arguments it does not take (missing a required "
                "argument: 'content'); it takes (scope, content, *, type=..."
            ),
        ),
        (lambda m: m.add(ALICE, "x", tagz=["a"]), "unexpected keyword argument 'tagz'"),
        (lambda m: m.build_context(ALICE, "q", 500, None, 0.1), "too many positional arguments"),
        (lambda m: m.facts.upsert(ALICE), r"FactService.upsert\(\) .*'fact'"),
        (lambda m: Scope("acme"), r"Scope\(\) .*'user'.*it takes \(tenant, user, agent=..."),
        (lambda m: Filters(tagz=["a"]), r"Filters\(\) .*'tagz'"),
        (lambda m: Memory("memory://", embeder="hashing"), r"Memory.__init__\(\) .*'embeder'"),
    ],
)
def test_the_message_says_what_the_call_takes(mem: Memory, call: Any, says: str) -> None:
    with pytest.raises(ArgumentError, match=says) as caught:
        call(mem)
    assert isinstance(caught.value, MemstrataError)
    assert isinstance(caught.value, TypeError)  # code catching TypeError still catches it
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_type_error_from_inside_a_call_is_left_as_it_is() -> None:
    @checked_calls
    class Service:
        def run(self, n: int) -> int:
            return n + "1"  # type: ignore[operator]  # a bug inside, not the caller's

        async def arun(self, n: int) -> int:
            return n + "1"  # type: ignore[operator]

    with pytest.raises(TypeError) as caught:
        Service().run(1)
    assert not isinstance(caught.value, ArgumentError)
    with pytest.raises(TypeError) as caught:
        asyncio.run(Service().arun(1))
    assert not isinstance(caught.value, ArgumentError)
    with pytest.raises(ArgumentError, match=r"Service.arun\(\) .*\(n\)"):
        asyncio.run(Service().arun())  # type: ignore[call-arg]


def test_wrapped_methods_keep_their_signature_and_kind() -> None:
    assert str(inspect.signature(Memory.add)) == str(inspect.signature(Memory.add.__wrapped__))
    assert inspect.iscoroutinefunction(AsyncMemory.add)
    assert not inspect.iscoroutinefunction(Memory.add)
