"""``Memory(roles=...)`` is checked as ``set_access`` checks ``allowed_roles``: a role the
memory accepts can be granted. Before session 34, ``Memory(roles=["a\\x00b"])`` (or a role
of 300 characters, or a lone surrogate) was accepted and every ``set_access`` granting it
refused; and roles given as a generator were read twice (checked, then lost), so a memory
declared with them knew no roles at all."""

from __future__ import annotations

import asyncio

import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.errors import ValidationError

ALICE = Scope("acme", "alice")


@pytest.mark.parametrize("role", ["a\x00b", "x" * 300, "\ud800", " ", ""])
def test_a_role_no_grant_could_use_is_refused_up_front(role: str) -> None:
    with pytest.raises(ValidationError, match=r"roles\[1\]"):
        Memory("memory://", embedder="hashing", roles=["staff", role])
    with pytest.raises(ValidationError, match=r"roles\[1\]"):
        AsyncMemory("memory://", embedder="hashing", roles=["staff", role])


def test_roles_from_a_generator_are_kept() -> None:
    with Memory("memory://", embedder="hashing", roles=(r for r in ["staff", "auditor"])) as m:
        assert m.roles == {"staff", "auditor"}
        rec = m.add(ALICE, "the quarterly figures")
        shared = m.set_access(ALICE, rec.id, visibility="shared", allowed_roles=["auditor"])
        assert shared.access.allowed_roles == ("auditor",)


def test_roles_from_a_generator_are_kept_async() -> None:
    async def main() -> frozenset[str]:
        async with AsyncMemory("memory://", embedder="hashing", roles=iter(["staff"])) as m:
            return m.roles

    assert asyncio.run(main()) == {"staff"}


def test_every_role_accepted_up_front_can_be_granted() -> None:
    roles = ["café", "\u202eadmin", "r" * 256, "with space", "a/b"]
    with Memory("memory://", embedder="hashing", roles=roles) as m:
        rec = m.add(ALICE, "the quarterly figures")
        shared = m.set_access(ALICE, rec.id, visibility="shared", allowed_roles=roles)
        assert set(shared.access.allowed_roles) == set(roles)
