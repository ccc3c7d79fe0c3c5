"""``memstrata serve`` answers a request whose body is still arriving and drains the rest
before it closes (server/slow_clients.py, session 31: nginx's lingering close).

Before, the connection was closed right after such an answer (a 413 by Content-Length, a
503 ``out_of_memory``, the parser's 400), with the body still coming: the client's next
bytes met a reset ("Broken pipe"), and a client that sends its whole body before it reads
failed instead of reading its answer (tests/audit30's out-of-memory test saw a reset before
the 503). Each test here answers a request after its first bytes, waits until the answer
is there, then sends the rest of the body: every byte must be taken, the answer read whole
and the connection end cleanly (end of file, no reset)."""

from __future__ import annotations

import json
import resource
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.server.keys import SQLiteKeyStore
from serving import Running, serve

CHUNK = 64 * 1024


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Running, str]]:
    db = tmp_path / "m.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False):
        pass
    key = SQLiteKeyStore(str(db)).create("acme").secret
    # no background jobs in the server: once, under 4 pytest workers, uvloop's own read
    # ran out of the out-of-memory test's 4 MiB of room and the connection was reset
    # unanswered; the first batch's ingest job running beside the body is the likely
    # taker (it allocates in the same process), and the tests here need no job
    options = ("--rate-limit", "0", "--max-body", str(16 * 2**20), "--no-background")
    with serve(f"sqlite:///{db}", tmp_path, *options) as running:
        yield running, key


def _head(key: str, path: str, length: int | None) -> bytes:
    size = f"content-length: {length}" if length is not None else "transfer-encoding: chunked"
    return (
        f"POST {path} HTTP/1.1\r\nhost: memstrata\r\nauthorization: Bearer {key}\r\n"
        f"content-type: application/json\r\n{size}\r\n\r\n"
    ).encode()


def _answered(sock: socket.socket, within: float = 30) -> None:
    ready, _, _ = select.select([sock], [], [], within)
    assert ready, f"no answer in {within} s"


def _rest_then_answer(
    sock: socket.socket, rest: bytes, pause: float = 0.0
) -> tuple[int, dict[str, str], dict]:
    """Send ``rest`` (every byte must be taken), then read the answer to its end."""
    for start in range(0, len(rest), CHUNK):
        sock.sendall(rest[start : start + CHUNK])  # was: BrokenPipeError / ConnectionResetError
        if pause:
            time.sleep(pause)
    data = b""
    while chunk := sock.recv(65536):  # was: ConnectionResetError
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body)


def test_an_early_413_lets_the_body_finish(served: tuple[Running, str]) -> None:
    running, key = served
    body = b'{"content": "' + b"a" * (20 * 2**20) + b'"}'  # over --max-body: 413 at its head
    with socket.create_connection(running.address) as sock:
        sock.sendall(_head(key, "/v1/users/alice/memories", len(body)) + body[:CHUNK])
        _answered(sock)
        status, headers, answer = _rest_then_answer(sock, body[CHUNK : 4 * 2**20])
    assert status == 413 and answer["error"]["code"] == "too_large", answer
    assert headers["connection"] == "close"


def test_a_malformed_chunk_is_answered_and_the_rest_drained(served: tuple[Running, str]) -> None:
    running, key = served
    with socket.create_connection(running.address) as sock:
        start = b"10\r\n" + b'{"content": "ab"' + b"\r\n" + b"zz-not-a-size\r\n"
        sock.sendall(_head(key, "/v1/users/alice/memories", None) + start)
        _answered(sock)
        status, headers, answer = _rest_then_answer(sock, b"x" * 2**20)
    assert status == 400 and answer["error"]["code"] == "bad_request", answer
    assert headers["connection"] == "close"


def _mapped(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmSize")


def test_out_of_memory_while_the_body_arrives(served: tuple[Running, str]) -> None:
    """The live process limited to what it maps plus 4 MiB (``RLIMIT_AS``; root, as CI
    runs), a batch of 8 MiB sent in 64 KiB pieces: its memory runs out while it comes."""
    running, key = served
    messages = [{"role": "user", "content": "word " * 19_000} for _ in range(90)]
    body = json.dumps({"messages": messages}).encode()
    path = "/v1/users/alice/sessions/s1/messages/batch"
    pid = running.proc.pid
    with socket.create_connection(running.address) as sock:  # a first batch: lazy imports
        small = json.dumps({"messages": messages[:1]}).encode()
        sock.sendall(_head(key, path, len(small)) + small)
        assert sock.recv(65536).startswith(b"HTTP/1.1 201")
    resource.prlimit(pid, resource.RLIMIT_AS, (_mapped(pid) + 4 * 2**20, resource.RLIM_INFINITY))
    try:
        with socket.create_connection(running.address) as sock:
            sock.sendall(_head(key, path, len(body)))
            status, headers, answer = _rest_then_answer(sock, body, pause=0.002)
    finally:
        resource.prlimit(pid, resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert status == 503 and answer["error"]["code"] == "out_of_memory", answer
    assert headers["retry-after"] == "5" and headers["connection"] == "close"
