"""Whose memory an MCP call reads and writes: never the model's choice.

Over stdio the server is one local process for one person: tenant and user come from its
configuration (``--key`` names the tenant through an API key, or ``--tenant``; ``--user``).
Over HTTP every request carries an API key (``Authorization: Bearer``) that names the tenant;
the user comes from the ``X-Memstrata-User`` header, else the user the key is bound to, else
the configured default; the session from ``X-Memstrata-Session`` or the configured default.
A key bound to one user that names another user in the header acts as a *caller* on that
user's memory (``Scope(caller=, roles=)``): it reads only what was shared with it and every
write is refused by the library. No tool has a tenant or user argument,
and tools refuse arguments their schema does not declare.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import ValidationError
from ..scope import Scope
from ..server.keys import ApiKey, KeyStore

__all__ = ["KEY_STATE", "USER_HEADER", "SESSION_HEADER", "Identity", "bearer_of"]

USER_HEADER = "x-memstrata-user"
SESSION_HEADER = "x-memstrata-session"
# Where the HTTP transport's key check leaves the key it accepted (the ASGI scope's
# ``state``, which no client can set), so that a tool call does not look it up again
KEY_STATE = "memstrata_api_key"


def bearer_of(headers: Mapping[str, str]) -> str | None:
    auth = headers.get("authorization") or ""
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return headers.get("x-api-key") or None


def _header_text(headers: Mapping[str, str], name: str) -> str | None:
    """The header's value as the client wrote it, without the spaces and tabs around it
    (RFC 9110 §5.5: they are no part of a field's value; uvicorn's httptools parser kept
    the trailing ones, so ``dave `` wrote into another user than ``dave``). Starlette
    decodes header bytes as latin-1, and clients send an id such as "café" as UTF-8, which
    latin-1 turns into "cafÃ©": another user, the one the HTTP API's path never names."""
    value = headers.get(name)
    if not value:
        return value
    value = value.strip(" \t")
    try:
        raw = value.encode("latin-1")
    except UnicodeEncodeError:  # not from the wire: already text
        return value
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError(
            f"the {name} header is not UTF-8: send the id's UTF-8 bytes (as the HTTP API's "
            "paths take them, percent-decoded)"
        ) from None


def _lowered(headers: Mapping[str, str] | None) -> dict[str, str]:
    """``headers`` by lower-case name; a user or session header given twice is refused
    (a client's and a proxy's, say: which one the sender meant cannot be known, and the
    last one won without a word). Starlette's ``Headers.items()`` gives every field."""
    lower: dict[str, str] = {}
    for k, v in (headers or {}).items():
        name = k.lower()
        if name in lower and name in (USER_HEADER, SESSION_HEADER):
            raise ValidationError(
                f"the {name} header was given twice ({lower[name]!r} and {v!r}); send it once "
                "(a proxy may be adding one: configure it to replace the client's)"
            )
        lower[name] = v
    return lower


@dataclass(frozen=True, slots=True)
class Identity:
    """The configured identity; :meth:`scope` applies a request's credential to it."""

    tenant: str | None = None
    user: str | None = None
    session: str | None = None
    agent: str | None = None
    keys: KeyStore | None = None  # set for HTTP: every request must carry a key
    caller: str | None = None  # stdio with another user's key: read-only, what was shared
    roles: frozenset[str] = frozenset()

    def scope(self, headers: Mapping[str, str] | None, checked: ApiKey | None = None) -> Scope:
        """``checked``: the key the HTTP transport accepted for this request (the
        request's bearer), used as it is; otherwise the bearer is looked up in ``keys``."""
        if self.keys is None:
            if not self.tenant or not self.user:
                raise ValidationError(
                    "the MCP server has no tenant/user configured; start it "
                    "with --key (or --tenant) and --user"
                )
            scope = Scope(self.tenant, self.user, self.agent, self.session)
            return scope.as_caller(self.caller, self.roles) if self.caller else scope
        lower = _lowered(headers)
        secret = bearer_of(lower)
        if checked is not None:
            key: ApiKey | None = checked
        else:
            key = self.keys.authenticate(secret) if secret else None
        if key is None:
            raise ValidationError(
                "this MCP endpoint needs a valid API key in Authorization: Bearer ms_..."
            )
        user = _header_text(lower, USER_HEADER) or key.user or self.user
        if not user:
            raise ValidationError(
                f"no user: send the {USER_HEADER} header, use a key bound to a user "
                "(memstrata keys create --for-user U) or start the server with --user"
            )
        session = _header_text(lower, SESSION_HEADER) or self.session
        scope = Scope(key.tenant, user, self.agent, session)
        if key.user is not None and key.user != user:
            # Another user's key reads only what that user shared with it, and writes nothing.
            scope = scope.as_caller(key.user, key.access_roles)
        return scope
