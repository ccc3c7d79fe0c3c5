"""A dead LLM endpoint costs one CLI call, not every call (cli/llm_outage.py), and the
breaker's outage survives from one `memstrata` process to the next."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata.cli.llm_outage import forget_or_save, outage_file, restore
from memstrata.llm.breaker import CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_open_for_opens_without_a_second_first_failure() -> None:
    clock = Clock()
    breaker = CircuitBreaker(60, clock=clock)
    breaker.open_for(30)
    assert breaker.is_open and not breaker.allow() and breaker.seconds_left() == 30
    clock.t += 31
    assert breaker.allow()  # the trial after the restored cool-down
    assert breaker.failure() is False  # the outage was already reported
    assert breaker.seconds_left() == 60
    with pytest.raises(ValueError):
        breaker.open_for(0)


def test_restore_and_save_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "c" / "memstrata" / "llm-outages.json"
    first = CircuitBreaker(60, clock=Clock())
    assert restore(first, "m at u", path, now=0.0) == 0.0 and not first.is_open
    first.failure()
    forget_or_save(first, "m at u", path, now=100.0)
    assert json.loads(path.read_text()) == {"m at u": 160.0}

    second = CircuitBreaker(60, clock=Clock())
    assert restore(second, "m at u", path, now=130.0) == 30.0 and second.is_open
    assert restore(CircuitBreaker(), "other at u", path, now=130.0) == 0.0
    assert restore(CircuitBreaker(), "m at u", path, now=170.0) == 0.0  # over

    second.success()  # the endpoint answered: the entry goes
    forget_or_save(second, "m at u", path, now=131.0)
    assert json.loads(path.read_text()) == {}


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"m at u": "soon"}', ""])
def test_a_corrupt_file_means_no_known_outage(tmp_path: Path, content: str) -> None:
    path = tmp_path / "llm-outages.json"
    path.write_text(content)
    breaker = CircuitBreaker(60, clock=Clock())
    assert restore(breaker, "m at u", path, now=0.0) == 0.0 and not breaker.is_open
    breaker.failure()
    forget_or_save(breaker, "m at u", path, now=0.0)  # and it is replaced by a good one
    assert json.loads(path.read_text()) == {"m at u": 60.0}


def test_an_unwritable_cache_costs_nothing_but_time(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    breaker = CircuitBreaker()
    breaker.failure()
    forget_or_save(breaker, "m at u", blocker / "sub" / "llm-outages.json")  # no exception


def test_a_failed_rename_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "llm-outages.json"
    path.mkdir()  # os.replace onto a directory fails after the temp file was written
    (path / "keep").write_text("x")
    breaker = CircuitBreaker()
    breaker.failure()
    forget_or_save(breaker, "m at u", path)  # no exception
    assert sorted(p.name for p in tmp_path.iterdir()) == ["llm-outages.json"]


def test_the_file_follows_xdg_cache_home() -> None:
    assert outage_file({"XDG_CACHE_HOME": "/x"}) == Path("/x/memstrata/llm-outages.json")
    assert outage_file({}).parts[-3:] == (".cache", "memstrata", "llm-outages.json")


@pytest.fixture
def dead_endpoint() -> Iterator[tuple[str, list[int]]]:
    """An endpoint that accepts each connection and closes it at once (the SDK retries it
    like a refused one); the list counts the connections."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    accepted = [0]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted[0] += 1
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/v1", accepted
    stop.set()
    thread.join(5)
    server.close()


def test_a_dead_endpoint_is_tried_by_one_cli_call_only(
    tmp_path: Path, dead_endpoint: tuple[str, list[int]]
) -> None:
    url, accepted = dead_endpoint
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSTRATA_", "OPENAI_"))}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    base = ["--db", "sqlite:///o.db", "--tenant", "t", "--user", "u", "--embedder", "hashing"]
    base += ["--llm", "openai:m", "--openai-base-url", url, "-v"]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(
            [sys.executable, "-c", "from memstrata.cli.app import main; main()", *base, *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert res.returncode == 0, res.stderr
        return res

    # each note's importance job asks the LLM once, in `add`'s worker or in `worker --once`
    first = [cli("add", "I keep bees in my garden"), cli("worker", "--once")]
    after_first = accepted[0]
    assert after_first == 4  # one call: the SDK's attempt and its 3 retries, then fallback
    second = [cli("add", "My passport expires in May"), cli("worker", "--once")]
    assert accepted[0] == after_first  # the next calls knew the endpoint was down
    stderr = "".join(r.stderr for r in first + second)
    warnings = [x for x in stderr.splitlines() if x.startswith("WARNING")]
    assert len(warnings) == 1 and "could not connect" in warnings[0], stderr
    assert "failed in an earlier memstrata call" in "".join(r.stderr for r in second)
