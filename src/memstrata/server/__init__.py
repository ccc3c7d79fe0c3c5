"""The HTTP service (``memstrata serve``): FastAPI over the memory, API-key tenants, the
inspector at ``/ui``. Needs the ``server`` extra: ``pip install 'memstrata[server]'``.

Importing this package imports nothing heavy; :func:`create_app` loads FastAPI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import MissingDependencyError

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["create_app", "require_server_extra"]


def require_server_extra() -> None:
    try:
        import fastapi  # noqa: F401
        import prometheus_client  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"the HTTP server needs the 'server' extra ({exc.name} is missing): "
            "pip install 'memstrata[server]'"
        ) from None


def create_app(*args: Any, **kwargs: Any) -> FastAPI:
    """See :func:`memstrata.server.app.create_app`."""
    require_server_extra()
    from .app import create_app as build

    return build(*args, **kwargs)
