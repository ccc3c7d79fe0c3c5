"""The one line each long-running command writes on stderr as it starts: what it serves and
with which settings, so that an operator reading its log sees them.

``memstrata serve`` (with or without ``--workers``), ``memstrata mcp`` (stdio and HTTP) and
``memstrata worker`` each write one, with the same fields: the store (its URL, the password
replaced by ``***``), where it listens, its processes, how long finished jobs are kept and
the store's vector cache. The servers log JSON lines on stderr, so theirs is one such line
(its ``message`` for a reader, each field beside it for a log pipeline), written whatever
``--log-level`` says; the worker's stderr is plain text, so its line is the message alone.
Never stdout: it is the MCP protocol's over stdio, and the worker's runs with ``--json``.

Before session 33, ``serve`` printed its line on stdout (wrapped at the terminal's width,
no vector cache, the store's URL with its password), ``serve --workers`` and ``mcp`` none,
and ``worker`` only the URL, with its password.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any

__all__ = ["StartLine", "http_address", "kept_jobs"]


def kept_jobs(days: float | None) -> str:
    """How long finished jobs are kept, as a start line says it."""
    return "finished jobs kept forever" if days is None else f"finished jobs kept {days:g} days"


def _cache(url: str, rows: int) -> str:
    if url.partition("://")[0].lower() == "memory":  # it holds every record in the process
        return "no vector cache (memory://)"
    return f"vector cache {rows:,} rows"


def http_address(host: str, port: int) -> str:
    """``http://host:port``, an IPv6 address in brackets."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class StartLine:
    """One command's start line: ``fields`` (JSON-ready) and ``message`` (for a reader)."""

    def __init__(
        self,
        command: str,
        *,
        url: str,
        listen: str,
        listen_text: str,
        workers: int,
        done_jobs_days: float | None,
        vector_cache_rows: int,
    ) -> None:
        from ..store.url import redact_url

        store = redact_url(url)
        self.fields: dict[str, Any] = {
            "command": command,
            "store": store,
            "listen": listen,
            "workers": workers,
            "done_jobs_days": done_jobs_days,
            "vector_cache_rows": vector_cache_rows,
        }
        processes = f"{workers} process" + ("es" if workers != 1 else "")
        self.message = (
            f"memstrata {command} starting: store {store}; {listen_text}; {processes}; "
            f"{kept_jobs(done_jobs_days)}; {_cache(url, vector_cache_rows)}"
        )

    def json(self) -> str:
        """The line as the servers' JSON log writes its lines (observe.JsonFormatter)."""
        head = {
            "time": datetime.now(UTC).isoformat(),
            "level": "info",
            "logger": "memstrata.start",
            "message": self.message,
        }
        return json.dumps({**head, **self.fields}, ensure_ascii=False)

    def write(self, *, as_json: bool) -> None:
        """On stderr, flushed (a log reads it at once): a JSON line, or the message."""
        sys.stderr.write((self.json() if as_json else self.message) + "\n")
        sys.stderr.flush()
