"""The deadlines of server/slow_clients.py on a real uvicorn (in a thread) with small ASGI
apps: what ``memstrata serve`` needs several seconds and megabytes to show — a slow-loris
that keeps sending, a second request on a kept-alive connection, a client that does not
read its answer, a slow app that is not the client's fault — in a fraction of a second."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from memstrata.server.run import GracefulServer
from memstrata.server.slow_clients import TimedConfig
from serving import free_port


@contextmanager
def running(app: Any, **deadlines: float) -> Iterator[tuple[tuple[str, int], GracefulServer]]:
    port = free_port()
    config = TimedConfig(app, host="127.0.0.1", port=port, log_config=None, access_log=False,
                         lifespan="off", **deadlines)  # fmt: skip
    server = GracefulServer(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield ("127.0.0.1", port), server
    finally:
        server.should_exit = True
        thread.join(timeout=10)


async def echo(scope: Any, receive: Any, send: Any) -> None:
    """Reads the whole body, answers its length."""
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    answer = str(size).encode()
    headers = [(b"content-length", str(len(answer)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


def _status(sock: socket.socket) -> str:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data.split(b" ")[1].decode() if data else "closed"


def test_a_slowloris_sending_a_byte_at_a_time_is_cut_at_the_header_deadline() -> None:
    with running(echo, header_timeout=1.0, body_timeout=5.0) as (address, _):
        sock = socket.create_connection(address, timeout=10)
        with sock:
            t0 = time.monotonic()
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            try:
                for _ in range(40):  # a header byte every 0.1 s: moving, never done
                    sock.sendall(b"X")
                    time.sleep(0.1)
            except OSError:  # cut while sending
                pass
            assert _status(sock) == "408"
            assert 0.9 < time.monotonic() - t0 < 2.5


def test_the_header_deadline_of_a_later_request_counts_from_its_first_byte() -> None:
    with running(echo, header_timeout=1.0, body_timeout=5.0) as (address, server):
        sock = socket.create_connection(address, timeout=10)
        with sock:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
            assert sock.recv(4096).endswith(b"3")
            time.sleep(1.5)  # idle between requests: the keep-alive timeout's (5 s), not this
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab")
            assert sock.recv(4096).endswith(b"2")
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n")  # then nothing
            assert _status(sock) == "408"
        assert not server.server_state.connections


def test_a_body_that_moves_is_not_cut_one_that_stops_is() -> None:
    with running(echo, header_timeout=1.0, body_timeout=0.5) as (address, server):
        sock = socket.create_connection(address, timeout=10)
        with sock:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n")
            for _ in range(6):  # 2 s in all, 0.3 s between chunks
                time.sleep(0.3)
                sock.sendall(b"ab")
            assert sock.recv(4096).endswith(b"12")
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\nab")
            t0 = time.monotonic()
            assert _status(sock) == "408"
            assert 0.4 < time.monotonic() - t0 < 2
        time.sleep(0.1)
        assert not server.server_state.connections and not server.server_state.tasks


async def slow_reader(scope: Any, receive: Any, send: Any) -> None:
    """Takes 1.5 s before it reads the body: the server's delay, not the client's."""
    await asyncio.sleep(1.5)
    await echo(scope, receive, send)


def test_time_the_app_takes_before_reading_is_not_the_clients() -> None:
    with running(slow_reader, header_timeout=1.0, body_timeout=0.5) as (address, _):
        sock = socket.create_connection(address, timeout=10)
        with sock:
            body = b"x" * 300_000  # more than uvicorn buffers: it stops reading meanwhile
            head = f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
            sock.sendall(head.encode() + body)
            assert sock.recv(4096).endswith(str(len(body)).encode())


def test_a_client_that_stops_reading_its_answer_is_disconnected() -> None:
    done = threading.Event()

    async def watched(scope: Any, receive: Any, send: Any) -> None:
        """An endless answer; the app learns the client is gone from receive(), as
        Starlette's streaming responses do (uvicorn's send then returns at once)."""

        async def endless() -> None:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            while True:
                await send({"type": "http.response.body", "body": b"x" * 65536,
                            "more_body": True})  # fmt: skip

        task = asyncio.ensure_future(endless())
        while (await receive())["type"] != "http.disconnect":
            pass
        task.cancel()
        done.set()

    with running(watched, header_timeout=1.0, body_timeout=0.5) as (address, server):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(address)
        with sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert sock.recv(100).startswith(b"HTTP/1.1 200")
            # and read nothing more
            assert done.wait(10), "the server kept writing to a client that took nothing"
        time.sleep(0.1)
        assert not server.server_state.connections
