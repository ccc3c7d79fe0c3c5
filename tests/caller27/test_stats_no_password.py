"""``Memory.stats`` (served by ``GET /v1/users/{user}/stats`` to every key of the tenant,
a key bound to another user included) named the store by its URL, password and all: a
PostgreSQL store's password reached any member or caller. Found by caller27's audit; the
URL is now given with its password as ``***`` (``store.migrate.report.redact_url``).
Fails before the fix."""

from __future__ import annotations

from memstrata import Memory, Scope


def test_the_stats_name_the_store_without_its_password(pg_url: str) -> None:
    # the suite's server trusts local connections: any password opens it
    url = pg_url.replace("postgres:@", "postgres:hunter2@", 1)
    assert "hunter2" in url
    with Memory(url, embedder="hashing", background=False) as mem:
        for scope in (Scope("acme", "bob"), Scope("acme", "bob").as_caller("carol")):
            stats = mem.stats(scope)
            assert "hunter2" not in str(stats) and stats["store"].startswith("postgresql://")
            assert "postgres:***@" in stats["store"]
