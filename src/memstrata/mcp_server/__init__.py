"""The MCP server (``memstrata mcp``): memory tools for MCP clients over stdio or streamable
HTTP. Needs the ``mcp`` extra: ``pip install 'memstrata[mcp]'``.

The package is not named ``mcp`` so it never shadows the SDK. Importing it loads nothing.
"""

from __future__ import annotations

from ..errors import MissingDependencyError

__all__ = ["require_mcp_extra"]


def require_mcp_extra() -> None:
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"the MCP server needs the 'mcp' extra ({exc.name} is missing, or an mcp older than "
            "2.0 is installed): pip install 'memstrata[mcp]'"
        ) from None
