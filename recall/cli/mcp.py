"""`recall mcp`: the MCP server over stdio."""

from __future__ import annotations

import click

from recall.cli.common import fail_cleanly


@click.command("mcp")
@fail_cleanly  # Ctrl-C: one line and 130, not click's "Aborted!" and 1 (stop 48, Z07)
def mcp_cmd() -> None:
    """Run the MCP server over stdio (for `claude mcp add`).

    Register it with: claude mcp add --scope user --transport stdio recall -- PYTHON -m recall.mcp
    """
    from recall.mcp.server import main as serve

    serve()
