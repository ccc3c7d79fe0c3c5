"""Who is calling: the API key on each request names the tenant; the path names the user."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from ..scope import Scope
from .errors import ApiError
from .keys import ApiKey, Role
from .state import state_of

__all__ = ["Caller", "CallerDep", "UserPath", "require_admin"]

_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer ms_<id>_<secret>")
_header = APIKeyHeader(
    name="X-API-Key", auto_error=False, description="The same key in an X-API-Key header"
)

UserPath = Annotated[
    str, Path(min_length=1, max_length=256, description="The user's id within the key's tenant")
]


@dataclass(frozen=True, slots=True)
class Caller:
    key: ApiKey

    @property
    def tenant(self) -> str:
        return self.key.tenant

    def scope(self, user: str, *, session: str | None = None, agent: str | None = None) -> Scope:
        """The scope of ``user`` in the key's tenant (a ValidationError for bad ids)."""
        return Scope(self.key.tenant, user, agent, session)


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
    secret = bearer.credentials if bearer is not None else header
    challenge = {"WWW-Authenticate": "Bearer"}
    if not secret:
        raise ApiError(401, "unauthorized", _MISSING, challenge)
    key = state.keys.authenticate(secret.strip())
    if key is None:
        raise ApiError(
            401,
            "unauthorized",
            "the API key is unknown or revoked; create a new one with `memstrata keys create`",
            challenge,
        )
    request.state.tenant = key.tenant
    request.state.key_id = key.id
    wait = state.limiter.acquire(key.id)
    if wait:
        raise ApiError(
            429,
            "rate_limited",
            f"rate limit of {state.limiter.rate:g} requests/s for this key exceeded; "
            "retry after the Retry-After seconds",
            {"Retry-After": state.limiter.retry_after(wait)},
        )
    return Caller(key)


CallerDep = Annotated[Caller, Depends(_caller)]


def require_admin(caller: Caller, action: str) -> None:
    if caller.key.role is not Role.ADMIN:
        raise ApiError(
            403,
            "forbidden",
            f"{action} needs an admin key; create one with "
            "`memstrata keys create --tenant T --role admin`",
        )
