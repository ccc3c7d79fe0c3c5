"""A public call whose arguments do not fit its signature is an :class:`ArgumentError`.

Python raises a bare ``TypeError`` for ``mem.add(scope)`` (a missing argument), a keyword
the method does not take, or a keyword-only argument given by position; the library's
rule is that bad input gets a ``MemstrataError`` that says what to do. :func:`checked_calls`
wraps a class's public methods (and :func:`checked_init` a dataclass's constructor) so that
such a call raises :class:`ArgumentError` naming the method and the parameters it takes.
The check costs nothing until a call fails: only then are the arguments bound to the
signature (arguments that do not bind never reached the method's body), and a ``TypeError``
from inside a call whose arguments fit is left as it is.
Shared by the sync and async classes (a coroutine method's wrapper is a coroutine).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import ArgumentError

__all__ = ["checked_calls", "checked_init"]

T = TypeVar("T", bound=type)


def checked_calls(cls: T) -> T:
    """Wrap the constructor and every public method defined in ``cls`` (not inherited, not
    a property)."""
    for name, member in list(vars(cls).items()):
        if (name == "__init__" or not name.startswith("_")) and inspect.isfunction(member):
            setattr(cls, name, _checked(member, f"{cls.__name__}.{name}"))
    return cls


def checked_init(cls: T) -> T:
    """Wrap ``cls``'s constructor (a dataclass's generated ``__init__``)."""
    cls.__init__ = _checked(cls.__init__, cls.__name__)  # type: ignore[misc]
    return cls


def _checked(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            try:  # a wrapper (``completes``) may call the method itself only when awaited
                return await fn(*args, **kwargs)
            except TypeError:
                refused = _refused(fn, name, args, kwargs)
                if refused is None:
                    raise  # from inside the call: not the caller's arguments
                raise refused from None

        return call_async

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TypeError:
            refused = _refused(fn, name, args, kwargs)
            if refused is None:
                raise  # from inside the call: not the caller's arguments
            raise refused from None

    return call


def _refused(
    fn: Callable[..., Any], name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> ArgumentError | None:
    """``ArgumentError`` when the arguments do not bind to ``fn``'s signature."""
    sig = inspect.signature(fn)
    try:
        sig.bind(*args, **kwargs)
    except TypeError as why:
        return ArgumentError(
            f"{name}() was called with arguments it does not take ({why}); it takes "
            f"{_shape(sig)}: nothing was done"
        )
    return None


def _shape(sig: inspect.Signature) -> str:
    """The parameters by name, ``self`` left out: ``(scope, text, *, tags=..., ...)``."""
    out: list[str] = []
    star = False
    for p in sig.parameters.values():
        if p.name in ("self", "cls"):
            continue
        if p.kind is p.VAR_POSITIONAL:
            out.append(f"*{p.name}")
            star = True
            continue
        if p.kind is p.VAR_KEYWORD:
            out.append(f"**{p.name}")
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        out.append(p.name if p.default is p.empty else f"{p.name}=...")
    return f"({', '.join(out)})"
