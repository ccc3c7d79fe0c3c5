"""``--max-connections-per-ip`` on a real ``memstrata serve``: one client address holds at
most that many connections; one more closes that address's connection idle longest, or,
with none idle, is answered a JSON 429 and closed — and another address is served
meanwhile. (Before session 24 there was no such option: the server did not start.)

The other address is 127.0.0.2, which Linux routes to the loopback like 127.0.0.1."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from memstrata.server.keys import SQLiteKeyStore
from ops23.hostile import Answer, closed_by_server, read_until_closed, request
from serving import serve

OTHER = ("127.0.0.2", 0)


def _key(db: Path) -> str:
    keys = SQLiteKeyStore(str(db))
    try:
        return keys.create("acme").secret
    finally:
        keys.close()


def _ask(address: tuple[str, int], source: tuple[str, int] | None = None) -> Answer:
    with socket.create_connection(address, timeout=10, source_address=source) as sock:
        sock.sendall(request("GET", b"/readyz"))
        return Answer(read_until_closed(sock))


def test_past_the_cap_with_none_idle_the_address_gets_a_429(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    _key(db)
    with serve(f"sqlite:///{db}", tmp_path, "--rate-limit", "0", "--no-mcp",
               "--max-connections-per-ip", "3", "--header-timeout", "5") as s:  # fmt: skip
        busy = [socket.create_connection(s.address, timeout=10) for _ in range(3)]
        try:
            for sock in busy:  # half a request each: not idle
                sock.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n")
            time.sleep(0.3)
            refused = _ask(s.address)
            assert refused.status == "429", refused.raw[:300]
            assert refused.error_code() == "too_many_connections"
            assert b"retry-after: 1" in refused.head
            assert "this address" in refused.json()["error"]["message"]
            assert _ask(s.address, OTHER).status == "200"  # another address is served
            assert closed_by_server(busy) == []  # none of the busy ones was cut for it
        finally:
            for sock in busy:
                sock.close()
        deadline = time.monotonic() + 10  # their slots are free once they are gone
        while (status := _ask(s.address).status) != "200":
            assert time.monotonic() < deadline, status
            time.sleep(0.1)
    log = s.log_text()
    assert "Traceback" not in log and '"level": "warning"' not in log, log[-3000:]


def test_idle_connections_of_the_address_make_room(tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    _key(db)
    with serve(f"sqlite:///{db}", tmp_path, "--rate-limit", "0", "--no-mcp",
               "--max-connections-per-ip", "3") as s:  # fmt: skip
        others = [socket.create_connection(s.address, timeout=10, source_address=OTHER)
                  for _ in range(3)]  # fmt: skip
        idle = [socket.create_connection(s.address, timeout=10) for _ in range(5)]
        try:
            time.sleep(0.3)
            gone = closed_by_server(idle)
            assert len(gone) == 2  # the two over the cap closed their address's idlest
            assert _ask(s.address).status == "200"  # and a new one closes one more
            assert len(closed_by_server([c for c in idle if c not in gone])) == 1
            assert closed_by_server(others) == []  # another address's idle connections are its own
        finally:
            for sock in idle + others:
                sock.close()
