"""``python -m recall.mcp``: the MCP server over stdio (``recall.mcp.server``)."""

from .server import main

if __name__ == "__main__":
    main()
