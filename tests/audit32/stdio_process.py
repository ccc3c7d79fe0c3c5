"""``memstrata mcp`` over stdio as a real subprocess: lines in, the answers out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from memstrata.server.keys import SQLiteKeyStore

SRC = str(Path(__file__).resolve().parents[2] / "src")
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
READY = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def key_for(db: Path, tenant: str = "acme") -> str:
    keys = SQLiteKeyStore(str(db))
    try:
        return keys.create(tenant).secret
    finally:
        keys.close()


def stdio_answers(
    db: Path, messages: list[Any], *, initialize: bool = True, timeout: float = 240
) -> tuple[list[dict[str, Any]], str]:
    """Each message a line on stdin (a str as it is), stdin then closed at once; the
    answers the process wrote before it exited, and its stderr."""
    key = key_for(db)
    lines = [json.dumps(INIT), json.dumps(READY)] if initialize else []
    lines += [m if isinstance(m, str) else json.dumps(m) for m in messages]
    cmd = [sys.executable, "-m", "memstrata", "--db", f"sqlite:///{db}", "--embedder", "hashing"]
    cmd += ["--user", "alice", "mcp"]
    env = {**os.environ, "PYTHONPATH": SRC, "MEMSTRATA_API_KEY": key}
    done = subprocess.run(
        cmd, input=("\n".join(lines) + "\n").encode(), capture_output=True, env=env,
        timeout=timeout, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    answers = [json.loads(line) for line in done.stdout.decode().splitlines() if line.strip()]
    return answers, done.stderr.decode()
