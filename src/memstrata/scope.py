"""Scope: who a memory belongs to, and the one rule that decides who may see it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .calls import checked_init
from .errors import ValidationError
from .validation import MAX_ID_BYTES, id_too_wide

__all__ = ["Scope"]

_MAX_ID_CHARS = 256


def _check_id(name: str, value: str | None, *, required: bool) -> None:
    if value is None:
        if required:
            raise ValidationError(
                f"scope.{name} is required: pass Scope(tenant=..., user=...) with non-empty ids"
            )
        return
    if not isinstance(value, str):
        raise ValidationError(f"scope.{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError(f"scope.{name} must not be empty or whitespace; give a real id")
    if len(value) > _MAX_ID_CHARS:
        raise ValidationError(f"scope.{name} is longer than {_MAX_ID_CHARS} characters")
    if "\x00" in value:
        raise ValidationError(f"scope.{name} contains a NUL character")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        # a lone surrogate (an argv or file name decoded with surrogateescape): no store can
        # encode it, so every call with this scope would fail deep in the store
        raise ValidationError(
            f"scope.{name} contains a lone surrogate at position {exc.start}, which is not "
            "valid UTF-8: fix the decoding that produced it"
        ) from None
    if size > MAX_ID_BYTES:
        raise ValidationError(id_too_wide(f"scope.{name}", size))


@checked_init
@dataclass(frozen=True, slots=True)
class Scope:
    """``(tenant, user, agent, session)``.

    ``tenant`` and ``user`` are required for every read and write; ``agent`` and ``session``
    narrow further. A read with ``agent=A`` sees A's records, the user's agent-less records
    and records other agents marked ``shared``/``public``; a read with ``session=S`` sees
    only that session's records. A read with neither sees all of the user's memory.

    ``caller`` and ``roles`` name who is asking when it is not the user themselves (seed 003
    access control): such a caller sees only the user's live records (a deleted one is not
    shared any more) that are ``public``, list the caller in ``allowed_users`` or share a
    role with ``allowed_roles``, and cannot write.
    """

    tenant: str
    user: str
    agent: str | None = None
    session: str | None = None
    caller: str | None = None
    roles: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        _check_id("tenant", self.tenant, required=True)
        _check_id("user", self.user, required=True)
        _check_id("agent", self.agent, required=False)
        _check_id("session", self.session, required=False)
        _check_id("caller", self.caller, required=False)
        if isinstance(self.roles, str) or not all(
            isinstance(r, str) and r.strip() for r in self.roles
        ):
            raise ValidationError("scope.roles must be a set of non-empty role names")
        for role in self.roles:
            # compared with records' allowed_roles in the store's query: a NUL failed on
            # PostgreSQL, a lone surrogate on every SQL store (UnicodeEncodeError)
            _check_id("roles", role, required=True)
        object.__setattr__(self, "roles", frozenset(self.roles))
        if self.caller == self.user:
            object.__setattr__(self, "caller", None)

    @property
    def foreign(self) -> bool:
        """Whether someone other than the user is asking (access rules apply; no writes)."""
        return self.caller is not None

    def as_caller(
        self, caller: str | None, roles: frozenset[str] | set[str] = frozenset()
    ) -> Scope:
        return replace(self, caller=caller, roles=frozenset(roles))

    def with_session(self, session: str | None) -> Scope:
        return replace(self, session=session)

    def with_agent(self, agent: str | None) -> Scope:
        return replace(self, agent=agent)

    @property
    def user_scope(self) -> Scope:
        """The whole of this user's memory (no agent or session narrowing), same caller."""
        return Scope(self.tenant, self.user, caller=self.caller, roles=self.roles)

    def admits(
        self,
        tenant: str,
        user: str,
        agent: str | None,
        session: str | None,
        visibility: str,
        allowed_users: tuple[str, ...] = (),
        allowed_roles: tuple[str, ...] = (),
        status: str = "active",
    ) -> bool:
        """Whether a record with these owners is visible through this scope.

        Through a caller, a deleted record (``status``) is as missing: deleting it ends the
        sharing (until session 27 a caller read it with ``include_deleted``, in its history
        and in an export); the owner reads it, to restore it. The SQL of every store mirrors
        this function; the contract tests hold them equal.
        """
        if tenant != self.tenant or user != self.user:
            return False
        if self.session is not None and session != self.session:
            return False
        if self.agent is not None and agent not in (None, self.agent) and visibility == "private":
            return False
        if self.caller is not None:
            return status == "active" and (
                visibility == "public"
                or self.caller in allowed_users
                or not self.roles.isdisjoint(allowed_roles)
            )
        return True

    def __str__(self) -> str:
        parts = [f"tenant={self.tenant}", f"user={self.user}"]
        if self.agent:
            parts.append(f"agent={self.agent}")
        if self.session:
            parts.append(f"session={self.session}")
        if self.caller:
            parts.append(f"caller={self.caller}")
        return " ".join(parts)
