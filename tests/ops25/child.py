"""crash23's child (a real process killed with SIGKILL at a gate) for the writes audited
since session 25 in one transaction with their event: ``python child.py URL GATE OP ID``,
``OP`` one of ``delete``, ``restore``, ``set-access`` (shared with the role ``staff``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests' helpers (a script's path)
from crash23.child import (  # noqa: E402
    VICTIM,
    Gate,
    GatedEmbedder,
    _call_gate,
    _pg_gate,
    _sqlite_gate,
)
from memstrata import Memory  # noqa: E402

SCRIPT = __file__


def main(url: str, spec: str, op: str, record_id: str) -> None:
    if spec.startswith(("call:", "after:")):
        _call_gate(spec)
        spec = "-"
    gate = Gate(spec)
    if url.startswith("postgresql"):
        _pg_gate(gate)
    mem = Memory(url, embedder=GatedEmbedder(256, gate), background=False, roles=["staff"])
    if url.startswith("sqlite"):
        _sqlite_gate(mem, gate)
    print("go", flush=True)
    if op == "delete":
        mem.delete(VICTIM, record_id, actor="ops25")
    elif op == "restore":
        mem.restore(VICTIM, record_id, actor="ops25")
    elif op == "set-access":
        mem.set_access(VICTIM, record_id, allowed_roles=["staff"], actor="ops25")
    else:
        raise SystemExit(f"unknown op {op!r}")
    print("done", flush=True)
    mem.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4])
