"""``python -m recall.mcp``: the MCP server over stdio (see ``recall.mcp_server``)."""

from recall.mcp_server import main

if __name__ == "__main__":
    main()
