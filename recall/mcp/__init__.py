"""recall's MCP server: ``python -m recall.mcp`` serves it over stdio (see ``recall.mcp.server``)."""
