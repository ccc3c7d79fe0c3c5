"""Shared fixtures: a Memory on a real SQLite file with the hashing embedder and a fixed clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory, Scope
from servers import (  # noqa: F401  (fixtures: real PostgreSQL and Redis)
    pg_server,
    pg_url,
    redis_buffer_url,
    shared_redis,
)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop this process's PostgreSQL and Redis when its tests are done (each pytest-xdist
    worker's own, tests/servers.py), not only at interpreter exit."""
    from servers import stop_all

    stop_all()


def _fuzz_profile() -> None:
    """``MEMSTRATA_FUZZ=<n>`` (``make fuzz``): every property test runs randomised with n
    times its examples (its own ``max_examples``, a state machine's or an inner ``@given``'s
    included), no deadline, the failing example's blob printed. Unset (CI's derandomised
    ``ci`` profile, a developer's default one) nothing changes."""
    import os

    factor = os.environ.get("MEMSTRATA_FUZZ")
    if not factor:
        return
    import hypothesis
    from hypothesis import HealthCheck, settings
    from hypothesis import core as hypothesis_core

    n = int(factor)
    if n < 1:
        raise ValueError(f"MEMSTRATA_FUZZ={factor!r}: give a factor of 1 or more (e.g. 10)")
    slow = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile(
        "fuzz",
        derandomize=False,
        deadline=None,
        print_blob=True,
        suppress_health_check=slow,
    )
    settings.load_profile("fuzz")
    # a test's own max_examples wins over a profile: scale it where hypothesis runs a test
    # (the one place every @given, inner or stateful, goes through; private, so checked)
    state = getattr(hypothesis_core, "StateForActualGivenExecution", None)
    if state is None or "settings" not in state.__init__.__code__.co_varnames:
        raise RuntimeError(f"MEMSTRATA_FUZZ: hypothesis {hypothesis.__version__} moved its runner")
    init = state.__init__

    def scaled(
        self: object, stuff: object, test: object, given_settings: settings, *args: Any, **kw: Any
    ) -> None:
        given_settings = settings(
            given_settings,
            max_examples=given_settings.max_examples * n,
            derandomize=False,
            deadline=None,
            print_blob=True,
            suppress_health_check=[*given_settings.suppress_health_check, *slow],
        )
        init(self, stuff, test, given_settings, *args, **kw)

    state.__init__ = scaled


_fuzz_profile()


def _hypothesis_printer() -> None:
    """Give hypothesis its own printer back. schemathesis (its pytest plugin imports it)
    swaps ``hypothesis.core.RepresentationPrinter`` for one that prints no value, to save
    time in its coverage phase; every failing example of the suite then read ``x=,``
    (session 31). The printer only runs for a failing example (or a verbose run), so a
    passing run costs the same. Done once schemathesis has patched (its ``setup`` runs
    once), so its later imports leave hypothesis's printer in place."""
    try:
        from schemathesis.generation.hypothesis import setup
    except ImportError:  # schemathesis is a dev dependency; without it nothing is swapped
        return
    from hypothesis import core as hypothesis_core
    from hypothesis.vendor import pretty

    setup()
    hypothesis_core.RepresentationPrinter = pretty.RepresentationPrinter  # type: ignore[attr-defined]


_hypothesis_printer()


@pytest.fixture(autouse=True, scope="session")
def _cli_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """CLI calls (and their subprocesses) keep their state (cli/llm_outage.py) in a cache
    folder of the test session, never in the user's ~/.cache."""
    import os

    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))


@pytest.fixture(params=["sqlite", "memory", "postgresql", "postgresql+redis"])
def mem(request: pytest.FixtureRequest, tmp_path: Path, clock: FixedClock) -> Iterator[Memory]:
    url = f"sqlite:///{tmp_path / 'm.db'}" if request.param == "sqlite" else "memory://"
    if request.param.startswith("postgresql"):
        url = request.getfixturevalue("pg_url")  # a fresh schema on the session's server
    # a fresh key prefix on the session's Redis, its keys deleted after the test
    buffer = request.getfixturevalue("redis_buffer_url") if "redis" in request.param else None
    m = Memory(url, embedder="hashing", clock=clock, background=False, buffer=buffer)
    yield m
    m.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store URL: a fresh SQLite file, or a fresh schema on the session's PostgreSQL (a
    module's own ``url`` fixture, with other stores, takes its place)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'm.db'}"
    else:
        yield request.getfixturevalue("pg_url")


@pytest.fixture
def alice() -> Scope:
    return Scope("acme", "alice", session="s1")


@pytest.fixture
def bob() -> Scope:
    return Scope("acme", "bob", session="s1")
