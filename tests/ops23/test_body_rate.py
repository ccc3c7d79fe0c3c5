"""The body's minimum rate (server/slow_clients.py) on a real uvicorn in a thread: a body
that trickles (a byte every 0.3 s: never a pause long enough for the body deadline) is cut,
one that moves steadily is not, and time the server held the body is not the client's.

Before session 23 the body deadline was the only limit: a byte every 59 s (with the 60 s
default) held a connection, its request task and its body for as long as the client liked.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from typing import Any

from ops22.test_deadlines import echo, running

from .hostile import read_until_closed

HEAD = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"


def test_a_trickling_body_is_cut_below_the_minimum_rate() -> None:
    with running(echo, header_timeout=5.0, body_timeout=1.0, min_body_rate=100.0) as (
        address,
        _,
    ):
        sock = socket.create_connection(address, timeout=20)
        with sock:
            sock.sendall(HEAD % 1000)
            sent = 0
            try:
                for _ in range(60):  # 3 bytes/s, never 1 s without a byte: 18 s if not cut
                    sock.sendall(b"x")
                    sent += 1
                    time.sleep(0.3)
            except OSError:  # cut while sending
                pass
            answer = read_until_closed(sock)
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert b"application/json" in answer and b"below the minimum of 100" in answer, answer
        assert sent < 60  # cut before the client was done


def test_a_steady_body_above_the_minimum_rate_is_not_cut() -> None:
    with running(echo, header_timeout=5.0, body_timeout=1.0, min_body_rate=2000.0) as (
        address,
        _,
    ):
        sock = socket.create_connection(address, timeout=20)
        with sock:
            sock.sendall(HEAD % 30_000)
            for _ in range(30):  # 10 kB/s for 3 s, five times the minimum
                sock.sendall(b"y" * 1000)
                time.sleep(0.1)
            answer = read_until_closed(sock)
        assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"30000"), answer


def test_time_the_server_held_the_body_is_not_the_clients() -> None:
    """The app reads nothing for 2 s (uvicorn pauses reading past 64 kB): neither the
    pause deadline (3 s) nor the rate (100 kB/s) counts those 2 s against the client."""

    async def late_reader(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await asyncio.sleep(2.0)
        await echo(scope, receive, send)

    with running(late_reader, header_timeout=5.0, body_timeout=3.0, min_body_rate=100_000) as (
        address,
        _,
    ):
        sock = socket.create_connection(address, timeout=20)
        with sock:
            sock.sendall(HEAD % 201_000 + b"z" * 200_000)
            time.sleep(3.5)  # counting the hold: 200 kB in 3 s is 67 kB/s, cut at 3 s
            sock.sendall(b"z" * 1000)
            answer = read_until_closed(sock)
        assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"201000"), answer


def test_other_clients_are_served_while_bodies_trickle() -> None:
    with running(echo, header_timeout=5.0, body_timeout=1.0, min_body_rate=100.0) as (
        address,
        _,
    ):
        tricklers = [socket.create_connection(address, timeout=20) for _ in range(20)]
        stop = threading.Event()

        def trickle() -> None:
            for sock in tricklers:
                sock.sendall(HEAD % 1000)
            while not stop.is_set():
                for sock in tricklers:
                    with contextlib.suppress(OSError):
                        sock.sendall(b"x")
                time.sleep(0.3)

        thread = threading.Thread(target=trickle, daemon=True)
        thread.start()
        try:
            time.sleep(0.5)
            with socket.create_connection(address, timeout=20) as other:
                other.sendall(HEAD % 5 + b"hello")
                assert _answer_status(other) == b"200"
            answers = [read_until_closed(sock) for sock in tricklers]
        finally:
            stop.set()
            thread.join(timeout=10)
            for sock in tricklers:
                sock.close()
        assert all(a.startswith(b"HTTP/1.1 408 ") for a in answers), answers


def _answer_status(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.split(b" ")[1] if data else b"closed"
