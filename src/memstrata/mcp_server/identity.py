"""Whose memory an MCP call reads and writes: never the model's choice.

Over stdio the server is one local process for one person: tenant and user come from its
configuration (``--key`` names the tenant through an API key, or ``--tenant``; ``--user``).
Over HTTP every request carries an API key (``Authorization: Bearer``) that names the tenant;
the user comes from the ``X-Memstrata-User`` header or the configured default, the session
from ``X-Memstrata-Session`` or the configured default. No tool has a tenant or user argument,
and tools refuse arguments their schema does not declare.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import ValidationError
from ..scope import Scope
from ..server.keys import KeyStore

__all__ = ["USER_HEADER", "SESSION_HEADER", "Identity", "bearer_of"]

USER_HEADER = "x-memstrata-user"
SESSION_HEADER = "x-memstrata-session"


def bearer_of(headers: Mapping[str, str]) -> str | None:
    auth = headers.get("authorization") or ""
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return headers.get("x-api-key") or None


@dataclass(frozen=True, slots=True)
class Identity:
    """The configured identity; :meth:`scope` applies a request's credential to it."""

    tenant: str | None = None
    user: str | None = None
    session: str | None = None
    agent: str | None = None
    keys: KeyStore | None = None  # set for HTTP: every request must carry a key

    def scope(self, headers: Mapping[str, str] | None) -> Scope:
        if self.keys is None:
            if not self.tenant or not self.user:
                raise ValidationError(
                    "the MCP server has no tenant/user configured; start it "
                    "with --key (or --tenant) and --user"
                )
            return Scope(self.tenant, self.user, self.agent, self.session)
        lower = {k.lower(): v for k, v in (headers or {}).items()}
        secret = bearer_of(lower)
        key = self.keys.authenticate(secret) if secret else None
        if key is None:
            raise ValidationError(
                "this MCP endpoint needs a valid API key in Authorization: Bearer ms_..."
            )
        user = lower.get(USER_HEADER) or self.user
        if not user:
            raise ValidationError(
                f"no user: send the {USER_HEADER} header or start the server with --user"
            )
        return Scope(key.tenant, user, self.agent, lower.get(SESSION_HEADER) or self.session)
