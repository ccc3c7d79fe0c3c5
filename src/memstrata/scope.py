"""Scope: who a memory belongs to, and the one rule that decides who may see it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .errors import ValidationError

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


@dataclass(frozen=True, slots=True)
class Scope:
    """``(tenant, user, agent, session)``.

    ``tenant`` and ``user`` are required for every read and write; ``agent`` and ``session``
    narrow further. A read with ``agent=A`` sees A's records, the user's agent-less records
    and records other agents marked ``shared``/``public``; a read with ``session=S`` sees
    only that session's records. A read with neither sees all of the user's memory.
    """

    tenant: str
    user: str
    agent: str | None = None
    session: str | None = None

    def __post_init__(self) -> None:
        _check_id("tenant", self.tenant, required=True)
        _check_id("user", self.user, required=True)
        _check_id("agent", self.agent, required=False)
        _check_id("session", self.session, required=False)

    def with_session(self, session: str | None) -> Scope:
        return replace(self, session=session)

    def with_agent(self, agent: str | None) -> Scope:
        return replace(self, agent=agent)

    @property
    def user_scope(self) -> Scope:
        """The whole of this user's memory (no agent or session narrowing)."""
        return Scope(self.tenant, self.user)

    def admits(self, tenant: str, user: str, agent: str | None, session: str | None,
               visibility: str) -> bool:
        """Whether a record with these owners is visible through this scope.

        The SQL of every store mirrors this function; the contract tests hold them equal.
        """
        if tenant != self.tenant or user != self.user:
            return False
        if self.session is not None and session != self.session:
            return False
        if self.agent is not None and agent not in (None, self.agent):
            return visibility != "private"
        return True

    def __str__(self) -> str:
        parts = [f"tenant={self.tenant}", f"user={self.user}"]
        if self.agent:
            parts.append(f"agent={self.agent}")
        if self.session:
            parts.append(f"session={self.session}")
        return " ".join(parts)
