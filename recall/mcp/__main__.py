"""``python -m recall.mcp``: the MCP server over stdio (``recall.mcp.server``)."""

from recall.mcp.server import main

if __name__ == "__main__":
    main()
