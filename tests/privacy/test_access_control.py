"""Access control (seed 003, issue 10 §4): ``visibility``, ``allowed_users`` and
``allowed_roles`` are enforced inside the stores' queries for a caller passed with the scope.
Property: over random records and callers, 0 forbidden records returned, 0 allowed missing,
by get, get_many, list, count, history and every search mode, on both stores."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory, Scope
from memstrata.errors import NotFoundError, ValidationError
from memstrata.filters import Filters

USERS = ["alice", "bob", "carol", "dave"]
ROLES = ["admin", "editor", "viewer"]

access = st.tuples(
    st.sampled_from(["private", "shared", "public"]),
    st.lists(st.sampled_from(USERS), max_size=3, unique=True),
    st.lists(st.sampled_from(ROLES), max_size=2, unique=True),
)
callers = st.tuples(st.sampled_from(USERS), st.frozensets(st.sampled_from(ROLES), max_size=2))


def allowed(rule: tuple[str, list[str], list[str]], caller: str, roles: frozenset[str]) -> bool:
    visibility, users, rule_roles = rule
    return (
        caller == "alice"
        or visibility == "public"
        or caller in users
        or bool(roles & set(rule_roles))
    )


def _url(kind: str) -> str:
    if kind != "postgresql":
        return kind
    import servers  # tests/servers.py: the session's real PostgreSQL

    try:
        return servers.postgres().url()
    except RuntimeError as exc:
        servers.unavailable("PostgreSQL", str(exc))
        raise


@pytest.mark.parametrize("url", ["memory://", "sqlite://:memory:", "postgresql"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=st.lists(access, min_size=1, max_size=8), caller=callers)
def test_a_caller_sees_exactly_what_the_rules_allow(
    url: str,
    rules: list[tuple[str, list[str], list[str]]],
    caller: tuple[str, frozenset[str]],
) -> None:
    who, roles = caller
    mem = Memory(_url(url), embedder="hashing", background=False)
    try:
        owner = Scope("acme", "alice")
        ids = []
        for n, (visibility, users, rule_roles) in enumerate(rules):
            rec = mem.add(owner, f"shared garden note number {n} about tulips", dedup=False)
            mem.set_access(
                owner, rec.id, visibility=visibility, allowed_users=users, allowed_roles=rule_roles
            )
            ids.append(rec.id)
        if who != "alice":
            mem.add(Scope("acme", who), "the caller's own note about tulips")
        view = Scope("acme", "alice", caller=who, roles=roles)
        expected = {i for i, rule in zip(ids, rules, strict=True) if allowed(rule, who, roles)}

        assert {r.id for r in mem.list(view, limit=1000)} == expected
        assert mem.store.count(view, Filters()) == len(expected)
        assert {r.id for r in mem.store.get_many(view, ids)} == expected
        for rid in ids:
            if rid in expected:
                assert mem.get(view, rid).id == rid
                assert mem.history(view, rid)
            else:
                with pytest.raises(NotFoundError):
                    mem.get(view, rid)
                with pytest.raises(NotFoundError):
                    mem.history(view, rid)
        for mode in ("lexical", "dense", "hybrid"):
            hits = {h.id for h in mem.search(view, "garden tulips", top_k=100, mode=mode)}
            assert hits <= expected, mode  # 0 forbidden
            if mode == "lexical":
                assert hits == expected  # every allowed record holds both terms: 0 missing
    finally:
        mem.close()


def test_a_caller_cannot_write_the_owners_memory(mem: Memory) -> None:
    owner = Scope("acme", "alice")
    rec = mem.add(owner, "a public recipe for lemon cake")
    mem.set_access(owner, rec.id, visibility="public")
    view = Scope("acme", "alice", caller="bob")
    assert mem.get(view, rec.id).id == rec.id
    for write in (
        lambda: mem.add(view, "bob writes into alice"),
        lambda: mem.update(view, rec.id, expected_version=2, content="changed"),
        lambda: mem.delete(view, rec.id),
        lambda: mem.purge(view),
        lambda: mem.forget(view, [rec.id]),
        lambda: mem.maintain(view),
        lambda: mem.set_access(view, rec.id, visibility="private"),
    ):
        with pytest.raises(ValidationError, match="may read"):
            write()
    assert mem.get(owner, rec.id).version == 2 and mem.get(owner, rec.id).is_active
    # and the stores refuse too, whoever calls them directly
    with pytest.raises(NotFoundError):
        mem.store.replace(
            view,
            mem.store.get(owner, rec.id)  # type: ignore[arg-type]
            and __import__("memstrata.store.base", fromlist=["RecordWrite"]).RecordWrite(
                mem.get(owner, rec.id), None, ()
            ),
            expected_version=2,
        )
    assert mem.store.set_status(view, [rec.id], "deleted", mem.clock.now()) == []  # type: ignore[arg-type]


def test_access_rules_are_validated(mem: Memory) -> None:
    owner = Scope("acme", "alice")
    rec = mem.add(owner, "a note")
    before = mem.get(owner, rec.id)
    for bad in (
        lambda: mem.set_access(owner, rec.id, allowed_roles=["superuser"]),
        lambda: mem.set_access(owner, rec.id, visibility="everyone"),
        lambda: mem.set_access(owner, rec.id, allowed_users="bob"),
        lambda: mem.set_access(owner, rec.id, allowed_users=[""]),
    ):
        with pytest.raises(ValidationError):
            bad()
    assert mem.get(owner, rec.id) == before
    with pytest.raises(ValidationError):
        Scope("acme", "alice", caller="bob", roles=frozenset({""}))
    with pytest.raises(ValidationError):
        Memory("memory://", embedder="hashing", roles="admin")


def test_declared_roles_are_accepted(tmp_path: Path) -> None:
    m = Memory(
        f"sqlite:///{tmp_path / 'r.db'}", embedder="hashing", background=False, roles=["auditor"]
    )
    owner = Scope("acme", "alice")
    rec = m.add(owner, "quarterly numbers")
    m.set_access(owner, rec.id, allowed_roles=["auditor"])
    assert m.get(Scope("acme", "alice", caller="eve", roles=frozenset({"auditor"})), rec.id)
    with pytest.raises(NotFoundError):
        m.get(Scope("acme", "alice", caller="eve"), rec.id)
    m.close()
