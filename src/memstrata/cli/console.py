"""A rich ``Console`` created on first use: importing the CLI does not import rich."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["lazy_console"]


class _LazyConsole:
    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return getattr(self._console, name)

    # ``with console:`` (rich's Live and Progress do it) looks these up on the type, not
    # through ``__getattr__``.
    def __enter__(self) -> Any:
        return self.__getattr__("__enter__")()

    def __exit__(self, *exc: object) -> Any:
        return self.__getattr__("__exit__")(*exc)


def lazy_console(**options: Any) -> Console:
    """A stand-in for ``rich.console.Console(**options)`` that builds it when first used."""
    return cast("Console", _LazyConsole(**options))
