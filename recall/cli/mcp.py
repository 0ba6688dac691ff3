"""`recall mcp`: the MCP server over stdio."""

from __future__ import annotations

import click


@click.command("mcp")
def mcp_cmd() -> None:
    """Run the MCP server over stdio (for `claude mcp add`).

    Register it with: claude mcp add --scope user --transport stdio recall -- PYTHON -m recall.mcp
    """
    from recall.mcp.server import main as serve

    serve()
