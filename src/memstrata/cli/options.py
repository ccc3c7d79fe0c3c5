"""Options every CLI command shares; the CLI is the only place that reads the environment."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import typer
from rich.console import Console

from ..errors import MemstrataError
from ..memory import Memory
from ..scope import Scope

__all__ = ["Settings", "console", "emit", "fail", "open_memory"]

console = Console(stderr=False)
errors = Console(stderr=True)


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

    def scope(self) -> Scope:
        if not self.tenant or not self.user:
            fail("--tenant and --user are required (or set MEMSTRATA_TENANT / MEMSTRATA_USER)")
        return Scope(self.tenant, self.user, self.agent, self.session)  # type: ignore[arg-type]


def fail(message: str, code: int = 2) -> None:
    errors.print(f"[red]error:[/red] {message}", highlight=False)
    raise typer.Exit(code)


@contextmanager
def open_memory(settings: Settings, **kwargs: Any) -> Iterator[Memory]:
    try:
        embedder: Any = settings.embedder
        llm: Any = settings.llm
        if embedder and embedder.startswith("openai:"):
            from ..embedder.openai import OpenAIEmbedder

            embedder = OpenAIEmbedder(embedder.split(":", 1)[1],
                                      base_url=settings.openai_base_url,
                                      api_key=settings.openai_api_key)
        if llm and llm.startswith("openai:"):
            from ..llm.openai import openai_llm

            llm = openai_llm(llm.split(":", 1)[1], base_url=settings.openai_base_url,
                             api_key=settings.openai_api_key)
        mem = Memory(settings.url, embedder=embedder, llm=llm, **kwargs)
    except MemstrataError as exc:
        fail(str(exc))
    try:
        yield mem
    except MemstrataError as exc:
        fail(str(exc))
    finally:
        mem.close()


def emit(data: Any, as_json: bool) -> bool:
    """Print ``data`` as JSON when asked; returns whether it did."""
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    return as_json
