"""``memstrata mcp < calls.jsonl``: stdin ends right after the requests, and every request
is still run and answered.

Before: the SDK cancelled each request still running when stdin ended: of 20 memory_add
calls, 3 were answered, 12 got "Connection closed" (7 of those written all the same), 5
no answer at all; 10 stored."""

from __future__ import annotations

from pathlib import Path

from memstrata import Memory, Scope
from stdio_mcp import stdio_answers

N = 20


def test_every_request_is_answered_after_stdin_ends(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    calls = [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call",
         "params": {"name": "memory_add", "arguments": {"content": f"note number {i}"}}}
        for i in range(1, N + 1)
    ]  # fmt: skip
    answers, log = stdio_answers(db, [*calls, {"jsonrpc": "2.0", "id": "last", "method": "ping"}])
    by_id = {a["id"]: a for a in answers}
    assert set(by_id) == {0, "last", *range(1, N + 1)}, (sorted(map(str, by_id)), log[-2000:])
    for i in range(1, N + 1):
        assert "result" in by_id[i] and by_id[i]["result"]["isError"] is False, by_id[i]
    with Memory(f"sqlite:///{db}", embedder="hashing") as mem:
        texts = {r.text for r in mem.list(Scope("acme", "alice"), limit=100)}
    assert texts == {f"note number {i}" for i in range(1, N + 1)}


def test_a_cancelled_request_is_not_waited_for(tmp_path: Path) -> None:
    """A request the client cancelled may go unanswered (MCP): stdin's end does not wait
    for it (the process exits at once, not after its bound)."""
    calls = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "memory_add", "arguments": {"content": "kept or not"}}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
    ]  # fmt: skip
    answers, log = stdio_answers(tmp_path / "m.db", calls, timeout=120)
    assert "unanswered" not in log, log[-2000:]
