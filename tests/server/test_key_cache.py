"""A server process remembers accepted keys for a bounded time (server/key_cache.py)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from memstrata.server.factory import ServeConfig, build_app
from memstrata.server.key_cache import CachedKeys
from memstrata.server.keys import ApiKey, InMemoryKeyStore, open_key_store


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_key_revoked_elsewhere_works_here_for_at_most_the_ttl() -> None:
    store, clock = InMemoryKeyStore(), Clock()
    keys = CachedKeys(store, 1.0, clock=clock)
    new = store.create("acme")
    assert keys.authenticate(new.secret) == new.key
    store.revoke(new.key.id)  # another process, or `memstrata keys revoke`
    clock.now += 0.9
    assert keys.authenticate(new.secret) == new.key  # remembered: no lookup
    clock.now += 0.2
    assert keys.authenticate(new.secret) is None  # looked up again: revoked


def test_a_key_revoked_or_purged_through_the_cache_stops_at_once() -> None:
    store, clock = InMemoryKeyStore(), Clock()
    keys = CachedKeys(store, 60.0, clock=clock)
    a, b = keys.create("acme"), keys.create("acme", user="bob")
    assert keys.authenticate(a.secret) and keys.authenticate(b.secret)
    assert keys.revoke(a.key.id).revoked_at is not None
    assert keys.authenticate(a.secret) is None
    assert keys.purge_user("acme", "bob") == 1
    assert keys.authenticate(b.secret) is None
    assert keys.list("acme") == store.list("acme")


def test_unknown_keys_are_not_remembered_and_secrets_are_not_kept() -> None:
    store, clock = InMemoryKeyStore(), Clock()
    keys = CachedKeys(store, 60.0, clock=clock)
    assert keys.authenticate("ms_000000000000_" + "x" * 43) is None
    new = store.create("acme")  # created elsewhere just now: works at its first request
    assert keys.authenticate(new.secret) == new.key
    assert keys.remembered(new.secret) == new.key
    assert new.secret not in repr(keys._known)  # only its SHA-256


def test_a_lookup_that_overlaps_a_revocation_is_not_remembered() -> None:
    clock = Clock()

    class Slow(InMemoryKeyStore):
        """Revoked (through the cache) while its lookup is under way."""

        def authenticate(self, secret: str) -> ApiKey | None:
            found = super().authenticate(secret)
            keys.revoke(new.key.id)
            return found

    store = Slow()
    keys = CachedKeys(store, 60.0, clock=clock)
    new = store.create("acme")
    assert keys.authenticate(new.secret) == new.key  # in flight before the revocation
    assert keys.remembered(new.secret) is None
    assert InMemoryKeyStore.authenticate(store, new.secret) is None


def test_memstrata_serves_with_the_cache_and_its_own_revocations_count_at_once(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/m.db"
    app, memory, keys = build_app(
        ServeConfig(url=url, embedder="hashing", background=False, mcp=False, rate=0)
    )
    assert isinstance(keys, CachedKeys) and keys.ttl == 1.0
    admin, member = keys.create("acme", role="admin"), keys.create("acme")
    elsewhere = open_key_store(url)
    other = elsewhere.create("acme")
    with TestClient(app) as client:

        def whoami(secret: str) -> int:
            r = client.get("/v1/whoami", headers={"Authorization": f"Bearer {secret}"})
            return r.status_code

        keys.ttl = 60.0  # no lapse during the test
        assert whoami(member.secret) == whoami(other.secret) == 200
        elsewhere.revoke(other.key.id)
        assert whoami(other.secret) == 200  # remembered for at most the ttl
        r = client.delete(
            f"/v1/keys/{member.key.id}", headers={"Authorization": f"Bearer {admin.secret}"}
        )
        assert r.status_code == 200
        assert whoami(member.secret) == 401  # revoked here: at once
    elsewhere.close()
