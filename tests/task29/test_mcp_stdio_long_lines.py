"""``memstrata mcp`` (stdio) bounds a message: a line is kept up to ``--max-body`` bytes (1 MiB
by default, the HTTP API's body limit); a longer one is answered with a JSON-RPC "Invalid
Request" error as soon as it passes the limit (its id when the line begins with it), the
rest of it is dropped up to its newline, and the server goes on. Before session 29 a line
was read whole first: a client that never sent a newline grew the server's memory without
bound (``tests/task29``: the subprocess tests fail before the fix)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from memstrata import Filters, Memory, Scope
from memstrata.mcp_server.stdio import bounded_lines
from stdio_mcp import StdioServer


def _add(rid: int, content: str) -> bytes:
    call = {"name": "memory_add", "arguments": {"content": content}}
    message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": call}
    return json.dumps(message).encode()


def _stored(db: Path) -> list[str]:
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as memory:
        return [r.content.raw for r in memory.list(Scope("acme", "alice"), filters=Filters())]


def test_an_over_long_message_is_answered_and_the_server_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    server = StdioServer(db, "--max-body", "4096")
    try:
        fits = _add(1, "a" * (4096 - len(_add(1, ""))))
        assert len(fits) == 4096
        server.send(fits + b"\n")  # exactly the limit: served
        assert server.answer()["result"]["isError"] is False
        server.send(_add(5, "b" * 20_000) + b"\n")
        refused = server.answer()
        assert refused["id"] == 5 and refused["error"]["code"] == -32600, refused
        assert "over 4096 bytes" in refused["error"]["message"], refused
        server.send(b'{"method":"tools/call","jsonrpc":"2.0","id":6,"x":"' + b"c" * 9000 + b'"}\n')
        late = server.answer()  # its id comes late: answered with none
        assert late["id"] is None and late["error"]["code"] == -32600, late
        server.send(_add(7, "I keep bees") + b"\n")
        assert server.answer()["id"] == 7
    finally:
        server.stop()
    assert sorted(_stored(db)) == sorted(["a" * (4096 - len(_add(1, ""))), "I keep bees"])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS from /proc")
def test_a_line_without_end_does_not_grow_the_server(tmp_path: Path) -> None:
    db = tmp_path / "n.db"
    server = StdioServer(db)  # the default limit: 1 MiB
    try:
        server.send(_add(1, "warm up") + b"\n")
        assert server.answer()["id"] == 1
        before = server.rss_kib()
        server.send(b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"x":"')
        block = b"x" * (1024 * 1024)
        started = time.monotonic()
        for _ in range(120):  # 120 MiB, no newline
            server.send(block)
        grown = server.rss_kib() - before  # every byte sent was read (the pipe holds 64 KiB)
        assert grown < 40 * 1024, f"the server grew by {grown} KiB on a 120 MiB line"
        refused = server.answer(timeout=5)  # already answered: the line passed 1 MiB
        assert refused["id"] == 9 and "over 1048576 bytes" in refused["error"]["message"]
        server.send(b'"}}\n' + _add(2, "I keep bees") + b"\n")  # the line ends; the next is served
        assert server.answer()["id"] == 2
        print(f"120 MiB line in {time.monotonic() - started:.1f} s, RSS grew {grown} KiB")
    finally:
        server.stop()
    assert sorted(_stored(db)) == ["I keep bees", "warm up"]


def _lines(data: bytes, limit: int, chunk: int) -> tuple[list[str], list[bytes]]:
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    refused: list[bytes] = []

    async def read(_n: int) -> bytes:
        return chunks.pop(0) if chunks else b""

    async def refuse(head: bytes) -> None:
        refused.append(head)

    async def run() -> list[str]:
        return [line async for line in bounded_lines(read, limit, refuse)]

    return asyncio.run(run()), refused


@pytest.mark.parametrize("chunk", [1, 3, 7, 64])
def test_bounded_lines_across_chunk_boundaries(chunk: int) -> None:
    data = b"abcd\n" + b"x" * 11 + b"\n\nh\xc3\xa9\n" + b"y" * 5 + b"\n" + b"tail"
    lines, refused = _lines(data, 5, chunk)
    assert lines == ["abcd\n", "\n", "hé\n", "yyyyy\n", "tail"]
    # once, with the head of the long line as read when it passed the limit
    assert len(refused) == 1 and len(refused[0]) > 5 and (b"x" * 11).startswith(refused[0])
    lines, refused = _lines(b"ok\n" + b"z" * 9, 5, chunk)  # the last line too long: dropped
    assert lines == ["ok\n"] and len(refused) == 1 and refused[0].startswith(b"zzzzzz")
