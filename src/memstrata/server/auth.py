"""Who is calling: the API key on each request names the tenant; the path names the user."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from ..scope import Scope
from .errors import ApiError
from .key_cache import lookup
from .keys import ApiKey, Role
from .limits import admit
from .paths import Decoded
from .state import state_of

__all__ = ["CREDENTIALS", "Caller", "CallerDep", "UserPath", "credentials_twice", "require_admin"]

_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer ms_<id>_<secret>")
_header = APIKeyHeader(
    name="X-API-Key", auto_error=False, description="The same key in an X-API-Key header"
)

UserPath = Annotated[
    str,
    Decoded,
    Path(min_length=1, max_length=256, description="The user's id within the key's tenant"),
]


@dataclass(frozen=True, slots=True)
class Caller:
    """The key behind a request: its tenant, and who it is for access control.

    A service key (no user) acts as the owner of every user of its tenant. A key bound to a
    user owns that user's memory; on another user's memory it is a *caller* (seed 003):
    the store shows it only records that are public, name it in ``allowed_users`` or share
    one of its roles, and every write is refused with 403 (:meth:`owner_scope`)."""

    key: ApiKey

    @property
    def tenant(self) -> str:
        return self.key.tenant

    @property
    def actor(self) -> str:
        return self.key.actor

    def scope(self, user: str, *, session: str | None = None, agent: str | None = None) -> Scope:
        """The scope of ``user`` in the key's tenant, carrying the key's identity when it is
        another user's key (a ValidationError for bad ids)."""
        scope = Scope(self.key.tenant, user, agent, session)
        if self.key.user is not None and self.key.user != user:
            scope = scope.as_caller(self.key.user, self.key.access_roles)
        return scope

    def owner_scope(
        self, user: str, *, session: str | None = None, agent: str | None = None
    ) -> Scope:
        """:meth:`scope` for a write: 403 when the key belongs to another user."""
        scope = self.scope(user, session=session, agent=agent)
        if scope.caller is not None:
            raise ApiError(
                403,
                "forbidden",
                f"this key belongs to user {scope.caller!r}: it may read what {user!r} shared "
                f"with it but not change {user!r}'s memory; use {user!r}'s own key or a "
                "service key (created without --for-user)",
            )
        return scope


# The headers that carry an API key: one of them given twice names two keys (or a proxy
# added one), and which is meant cannot be known: the HTTP API took the first, /mcp the
# last, so a request with tenant A's key then tenant B's wrote into one of them (session 31).
CREDENTIALS = ("authorization", "x-api-key")


def credentials_twice(name: str) -> ApiError:
    """The 401 for an API-key header given twice (``name``: its lower-case name)."""
    return ApiError(
        401,
        "unauthorized",
        f"the {name} header was given twice: which key is meant cannot be known; send one "
        "API key (a proxy may be adding one: configure it to replace the client's)",
        {"WWW-Authenticate": "Bearer"},
    )


_MISSING = (
    "this request needs an API key: send Authorization: Bearer ms_... (create one with "
    "`memstrata keys create --tenant NAME`)"
)


async def _caller(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    header: Annotated[str | None, Depends(_header)],
) -> Caller:
    state = state_of(request.app)
    for name in CREDENTIALS:
        if len(request.headers.getlist(name)) > 1:
            raise credentials_twice(name)
    secret = bearer.credentials if bearer is not None else header
    challenge = {"WWW-Authenticate": "Bearer"}
    if not secret:
        raise ApiError(401, "unauthorized", _MISSING, challenge)

    # The rate limits spend the tokens this process holds on the loop; only a refill waits
    # on the store.
    key = await lookup(state.keys, secret.strip(), blocking=state.blocking_keys)
    if key is None:
        raise ApiError(
            401,
            "unauthorized",
            "the API key is unknown or revoked; create a new one with `memstrata keys create`",
            challenge,
        )
    request.state.tenant = key.tenant
    request.state.key_id = key.id
    refusal = await admit(state.limiter, state.tenant_limiter, key.id, key.tenant)
    if refusal is not None:
        raise refusal
    return Caller(key)


CallerDep = Annotated[Caller, Depends(_caller)]


def require_admin(caller: Caller, action: str) -> None:
    if caller.key.role is not Role.ADMIN:
        raise ApiError(
            403,
            "forbidden",
            f"{action} needs an admin key (this key {caller.key.id} is a "
            f"{caller.key.role.value}); create one with "
            "`memstrata keys create --tenant T --role admin`",
        )
