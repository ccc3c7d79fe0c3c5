"""``memstrata serve`` while its PostgreSQL goes away and comes back (``pg_ctl stop -m
fast``, then started again on the same data directory and socket).

Before session 21 a request waited the connection pool's whole timeout (30 s; 10 s for the
API keys' pool) for a connection the pool could not make, and once the server was back the
pool's doubling back-off left the process answering 503 for another half a minute (33 s
measured); a server restarted while the process was idle cost the next requests a 503 each
(the pool handed out connections the server had closed). Now: 503 ``unavailable`` within
about 2 s (0.1 s once the process knows), and served again within a second of the restart,
by the same process.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx2

from memstrata.server.keys import open_key_store
from serving import serve

from .conftest import OwnPostgres

BOUND_S = 5.0  # a request while the store is down is answered within this


def _key(url: str) -> str:
    keys = open_key_store(url)
    try:
        return keys.create("acme", role="admin").secret
    finally:
        keys.close()


def _timed(
    client: httpx2.Client, method: str, path: str, **kw: object
) -> tuple[httpx2.Response, float]:
    t0 = time.monotonic()
    r = client.request(method, path, **kw)  # type: ignore[arg-type]
    return r, time.monotonic() - t0


def _ids(client: httpx2.Client) -> set[str]:
    """Every record id of alice's, page by page."""
    out: set[str] = set()
    offset: int | None = 0
    while offset is not None:
        page = client.get("/v1/users/alice/memories", params={"limit": 500, "offset": offset})
        assert page.status_code == 200, page.text
        out |= {m["id"] for m in page.json()["items"]}
        offset = page.json()["next_offset"]
    return out


def _until_served(client: httpx2.Client, within: float) -> float:
    """Seconds until GET /memories answers 200 again (fails after ``within``)."""
    t0 = time.monotonic()
    while True:
        r = client.get("/v1/users/alice/memories", params={"limit": 500})
        if r.status_code == 200:
            return time.monotonic() - t0
        assert r.status_code == 503, r.text
        assert time.monotonic() - t0 < within, f"still {r.status_code} after {within} s: {r.text}"
        time.sleep(0.1)


def test_serve_fails_fast_while_postgres_is_down_and_serves_again_after(
    own_pg: OwnPostgres, tmp_path: Path
) -> None:
    url = own_pg.url()
    key = _key(url)
    with (
        serve(url, tmp_path, "--rate-limit", "0", "--no-mcp") as s,
        httpx2.Client(
            base_url=s.url, headers={"Authorization": f"Bearer {key}"}, timeout=BOUND_S + 3
        ) as c,
    ):
        acked = []
        for i in range(5):
            r = c.post("/v1/users/alice/memories", json={"content": f"fact {i}", "dedup": False})
            assert r.status_code == 201, r.text
            acked.append(r.json()["id"])
        own_pg.stop("fast")
        try:
            for method, path, body in [
                ("POST", "/v1/users/alice/memories", {"content": "while down"}),
                ("GET", "/v1/users/alice/memories", None),
                ("POST", "/v1/users/alice/search", {"query": "fact"}),
                ("POST", "/v1/users/alice/context", {"query": "fact", "token_budget": 500}),
                ("POST", "/v1/users/alice/sessions/s1/messages", {"role": "user", "content": "hi"}),
            ]:
                r, took = _timed(c, method, path, json=body)
                assert r.status_code == 503, (path, r.status_code, r.text)
                assert took < BOUND_S, (path, took)
                err = r.json()["error"]
                assert err["code"] == "unavailable"
                assert "PostgreSQL" in err["message"] and "retry" in err["message"], err
                assert int(r.headers["retry-after"]) > 0
            ready, took = _timed(c, "GET", "/readyz")
            assert ready.status_code == 503 and took < BOUND_S, (ready.text, took)
            assert c.get("/healthz").status_code == 200  # the process itself is up
        finally:
            own_pg.start()
        # the same process serves again, promptly (the pool reconnects), losing nothing
        assert _until_served(c, within=BOUND_S) < BOUND_S
        after = c.post("/v1/users/alice/memories", json={"content": "after", "dedup": False})
        assert after.status_code == 201, after.text
        assert set(acked) | {after.json()["id"]} <= _ids(c)

        # the pool's own warnings are log lines like the others (JSON), not console boxes
        pool_lines = [x for x in s.log_text().splitlines() if "error connecting in" in x]
        assert pool_lines, s.log_text()[-2000:]
        assert all(json.loads(x)["logger"] == "psycopg.pool" for x in pool_lines), pool_lines[:3]

        # a restart while the process is idle: the connections the server closed are not
        # handed to the next requests (each was a 503 before)
        own_pg.stop("fast")
        own_pg.start()
        for i in range(6):
            r = c.post("/v1/users/alice/memories", json={"content": f"again {i}", "dedup": False})
            assert r.status_code == 201, (i, r.text)
            assert c.get("/v1/whoami").status_code == 200


def test_writes_in_flight_when_postgres_dies_are_acknowledged_and_kept_or_refused(
    own_pg: OwnPostgres, tmp_path: Path
) -> None:
    """Four writers add through the outage (``pg_ctl stop -m immediate``: no shutdown
    checkpoint, connections cut mid-statement): every 201 is in the store afterwards, every
    other answer is a 503 — no 500, no hang."""
    url = own_pg.url()
    key = _key(url)
    with serve(url, tmp_path, "--rate-limit", "0", "--no-mcp") as s:
        acked: list[str] = []
        answers: list[int] = []
        stop = threading.Event()

        def writer(n: int) -> None:
            with httpx2.Client(base_url=s.url, headers={"Authorization": f"Bearer {key}"},
                               timeout=BOUND_S + 3) as c:  # fmt: skip
                i = 0
                while not stop.is_set():
                    note = {"content": f"writer {n} note {i}", "dedup": False}
                    r = c.post("/v1/users/alice/memories", json=note)
                    answers.append(r.status_code)
                    if r.status_code == 201:
                        acked.append(r.json()["id"])
                    i += 1

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        try:
            time.sleep(1.0)
            own_pg.stop("immediate")
            time.sleep(3.0)  # longer than a request waits before it probes (2 s): 503s
        finally:
            own_pg.start()
        time.sleep(1.5)
        stop.set()
        for t in threads:
            t.join(30)
        assert not any(t.is_alive() for t in threads)
        assert set(answers) <= {201, 503}, sorted(set(answers))
        assert 503 in answers and answers.count(201) > 10
        with httpx2.Client(base_url=s.url, headers={"Authorization": f"Bearer {key}"},
                           timeout=30) as c:  # fmt: skip
            _until_served(c, within=BOUND_S)
            assert set(acked) <= _ids(c), "an acknowledged write was lost"
