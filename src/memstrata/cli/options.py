"""Options every CLI command shares; the CLI is the only place that reads the environment.

Start-up cost matters here (every CLI call pays it), so this module imports only typer and
rich; the library (numpy, the embedder, the store) is imported when a command opens a store.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn

import typer

from .console import lazy_console
from .store_check import check_store

if TYPE_CHECKING:
    from ..memory import Memory
    from ..scope import Scope
    from .table import PlainTable

__all__ = [
    "DONE_JOBS_HELP",
    "DoneJobsDays",
    "KEEP",
    "Settings",
    "choice",
    "command_done_jobs_days",
    "console",
    "done_jobs_days",
    "emit",
    "errors",
    "fail",
    "note",
    "open_memory",
    "out",
    "show",
]

# markup=False: user text such as "[x]" or "memstrata[postgres]" is printed as written.
# Styles are applied with Text objects, never with markup in strings.
console = lazy_console(stderr=False, markup=False, highlight=False)
errors = lazy_console(stderr=True, markup=False, highlight=False, soft_wrap=True)


@dataclass(slots=True)
class Settings:
    url: str
    tenant: str | None
    user: str | None
    agent: str | None
    session: str | None
    embedder: str | None
    llm: str | None
    openai_base_url: str | None
    openai_api_key: str | None
    max_chars: int | None = None
    # --vector-cache-rows / MEMSTRATA_VECTOR_CACHE_ROWS: None is the store's own bound
    vector_cache_rows: int | None = None
    # --done-jobs-days / MEMSTRATA_DONE_JOBS_DAYS: None is the library's Retention default
    # (7 days), KEEP keeps every finished job (Retention(done_jobs_days=None))
    done_jobs_days: float | Literal["keep"] | None = None

    def done_jobs_retention(self) -> float | None:
        """What ``Retention.done_jobs_days`` gets: the days given, None for ``keep``, the
        library's default when neither option nor variable was given."""
        days = self.done_jobs_days
        if days is None:
            from ..maintenance_types import Retention

            return Retention().done_jobs_days
        return None if isinstance(days, str) else days

    def scope(self) -> Scope:
        from ..scope import Scope

        if not self.tenant or not self.user:
            fail("--tenant and --user are required (or set MEMSTRATA_TENANT / MEMSTRATA_USER)")
        return Scope(self.tenant, self.user, self.agent, self.session)


def fail(message: str, code: int = 2) -> NoReturn:
    """``error: message`` on stderr (printed as written), then exit with ``code``."""
    from .table import clean, styled, write_line

    write_line(styled("error: ", "red", sys.stderr) + clean(message), sys.stderr)
    raise typer.Exit(code)


def note(message: str) -> None:
    """A remark on stderr (keeps ``--json`` output on stdout clean)."""
    from .table import clean, styled, write_line

    write_line(styled(clean(message), "dim", sys.stderr), sys.stderr)


def choice(
    value: str, allowed: Iterable[str], option: str, aliases: dict[str, str] | None = None
) -> str:
    """``value`` if it is one of ``allowed`` (or an alias of one); otherwise a clear error.

    The error is the library's :class:`~memstrata.errors.ValidationError` message, shown
    before any store is opened.
    """
    allowed = list(allowed)
    key = value.strip().lower()
    if key in allowed:
        return key
    if aliases and key in aliases:
        return aliases[key]
    from ..errors import ValidationError

    alias_text = (
        " (aliases: " + ", ".join(f"{a}={t}" for a, t in aliases.items()) + ")" if aliases else ""
    )
    fail(
        str(ValidationError(f"{option} {value!r} is not one of: {', '.join(allowed)}{alias_text}"))
    )


KEEP: Literal["keep"] = "keep"


def done_jobs_days(value: str | None) -> float | Literal["keep"] | None:
    """``--done-jobs-days`` (or ``MEMSTRATA_DONE_JOBS_DAYS``): a number of days > 0, or
    ``keep``; anything else is a usage error (exit 2) naming the option, before any store
    is opened. ``inf`` and ``nan`` are refused too (``float`` takes them)."""
    if value is None:
        return None
    text = value.strip().lower()
    if text == KEEP:
        return KEEP
    try:
        days = float(text)
    except ValueError:
        days = math.nan
    if not math.isfinite(days) or days <= 0:
        raise typer.BadParameter(
            f"must be a number of days > 0, or 'keep' to keep every finished job; got {value!r}"
        )
    return days


DONE_JOBS_HELP = (
    "Days a finished (done) background job is kept before maintenance deletes it (default "
    "7), or 'keep' to keep every one; failed jobs are never deleted."
)
# A command's own --done-jobs-days (``memstrata serve --done-jobs-days 30``), as its own
# --vector-cache-rows: checked as the global option (the same callback, exit 2 before any
# store is opened), no variable of its own (MEMSTRATA_DONE_JOBS_DAYS is the global
# option's), and it wins over both (command_done_jobs_days).
DoneJobsDays = Annotated[
    str | None,
    typer.Option(
        "--done-jobs-days",
        metavar="DAYS|keep",
        callback=done_jobs_days,
        help=DONE_JOBS_HELP + " Default: memstrata's --done-jobs-days (MEMSTRATA_DONE_JOBS_DAYS).",
        show_default=False,
    ),
]


def command_done_jobs_days(settings: Settings, given: object) -> Settings:
    """``settings`` with a command's own ``--done-jobs-days`` (parsed by
    :func:`done_jobs_days`) in place of the global one's, when given."""
    if given is None:
        return settings
    return replace(settings, done_jobs_days=given)  # type: ignore[arg-type]


@contextmanager
def open_memory(
    settings: Settings,
    *,
    create: bool = False,
    announce: bool = True,
    query: str | None = None,
    **kwargs: Any,
) -> Iterator[Memory]:
    """The :class:`Memory` the settings name; every library error becomes a clear CLI error.

    ``create=False`` (read commands, and writes that need existing records) refuses a store
    file that does not exist rather than creating an empty one, and runs no background
    jobs; any command refuses a file that is not a memstrata store. ``query``: a search
    query to embed on a thread while the rest of the library loads (prefetch.py).
    """
    from ..errors import MemstrataError

    problem, created = check_store(settings.url, create=create)
    if problem:
        fail(problem)
    prefetch = None
    outage: tuple[Any, str] | None = None
    try:
        embedder: Any = settings.embedder
        llm: Any = settings.llm
        if embedder and embedder.startswith("openai:"):
            from ..embedder.factory import make_embedder

            # the library's factory: "openai:" with no model is its ValidationError (the
            # embedder's own ValueError was a traceback here)
            embedder = make_embedder(
                embedder, base_url=settings.openai_base_url, api_key=settings.openai_api_key
            )
        if llm and llm.startswith("openai:"):
            from ..llm._openai_sdk import DEFAULT_BASE_URL
            from ..llm.factory import make_llm
            from .llm_outage import outage_file, restore

            model = llm.split(":", 1)[1]
            llm = make_llm(llm, base_url=settings.openai_base_url, api_key=settings.openai_api_key)
            # an outage an earlier call saw: start with the breaker open (llm_outage.py)
            outage = (llm.breaker, f"{model} at {settings.openai_base_url or DEFAULT_BASE_URL}")
            restore(*outage, outage_file())
        if query is not None and query.strip():
            from ..embedder.factory import make_embedder
            from .prefetch import QueryPrefetch

            embedder = prefetch = QueryPrefetch(make_embedder(embedder), query)
        from ..memory import Memory  # after the prefetch started: it overlaps this import

        if settings.max_chars is not None:
            kwargs.setdefault("max_content_chars", settings.max_chars)
        if settings.vector_cache_rows is not None:
            kwargs.setdefault("vector_cache_rows", settings.vector_cache_rows)
        if settings.done_jobs_days is not None:
            from ..maintenance_types import Retention

            kwargs.setdefault("retention", Retention(done_jobs_days=settings.done_jobs_retention()))
        # Only writing commands start the background worker: a search or a listing must not
        # wait for a queued summary job (LLM calls) before it can exit.
        kwargs.setdefault("background", create)
        mem = Memory(settings.url, embedder=embedder, llm=llm, **kwargs)
    except MemstrataError as exc:
        if prefetch is not None:
            prefetch.close()
        fail(str(exc))
    if created and announce:
        note(f"created a new memstrata store at {created}")
    try:
        yield mem
    except MemstrataError as exc:
        fail(str(exc))
    finally:
        mem.close()  # the background worker's LLM calls are over
        if prefetch is not None:
            prefetch.close()
        if outage is not None:
            from .llm_outage import forget_or_save, outage_file

            forget_or_save(*outage, outage_file())


def out(text: str) -> None:
    """A line of human output on stdout, printed as written (no markup; control characters
    shown as escapes), without loading rich."""
    from .table import clean, write_line

    write_line(clean(text))


def show(table: PlainTable) -> None:
    """A table on stdout at the terminal's width (see table.py)."""
    from .table import emit_table

    emit_table(table)


def emit(data: Any, as_json: bool) -> bool:
    """Print ``data`` as JSON when asked; returns whether it did."""
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    return as_json
