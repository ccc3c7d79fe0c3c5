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

    def _real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)

    # Special methods are looked up on the type, never through __getattr__: rich's Live
    # (progress bars) uses ``with console:``.
    def __enter__(self) -> Console:
        return self._real().__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._real().__exit__(*exc)


def lazy_console(**options: Any) -> Console:
    """A stand-in for ``rich.console.Console(**options)`` that builds it when first used."""
    return cast("Console", _LazyConsole(**options))
