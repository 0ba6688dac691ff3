"""stdio for the MCP server, with answers for lines the SDK would drop."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer


PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def _clean_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings replaced by U+FFFD.

    JSON allows ``"\\ud800"``; the SDK's parser refuses it and would leave the request
    unanswered, so such a request is parsed with ``json`` and cleaned instead.
    """
    if isinstance(value, str):
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value) \
            if any("\ud800" <= c <= "\udfff" for c in value) else value
    if isinstance(value, list):
        return [_clean_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_clean_surrogates(k): _clean_surrogates(v) for k, v in value.items()}
    return value


def repair(exc: Exception) -> tuple[Any, Any]:
    """For a line the SDK could not read: (a message to serve instead, or an error reply).

    One of the two is None. A line that is not JSON gets a JSON-RPC parse error (-32700,
    id null); JSON that is not a JSON-RPC message gets -32600 with its id when it has one.
    """
    import json

    import mcp_types as types
    from mcp.shared.message import SessionMessage

    def error(code: int, message: str, msg_id: Any = None) -> SessionMessage:
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=msg_id,
                                                 error=types.ErrorData(code=code, message=message)))

    try:
        details = exc.errors()  # type: ignore[attr-defined]  # pydantic's ValidationError
    except Exception:  # noqa: BLE001
        details = []
    line = next((d.get("input") for d in details if d.get("type") == "json_invalid"), None)
    whole = next((d.get("input") for d in details if d.get("loc") == ()), None)
    if isinstance(line, str | bytes):
        try:
            data = json.loads(line)  # Python's json reads lone surrogates; the SDK's parser does not
        except ValueError:
            return None, error(PARSE_ERROR, "Parse error")
    elif isinstance(whole, dict | list):
        data = whole
    elif details:
        return None, error(INVALID_REQUEST, "Invalid Request")  # JSON, but not a JSON-RPC message
    else:
        return None, error(PARSE_ERROR, "Parse error")
    msg_id = data.get("id") if isinstance(data, dict) and isinstance(data.get("id"), int | str) else None
    try:
        message = types.jsonrpc_message_adapter.validate_python(_clean_surrogates(data), by_name=False)
    except Exception:  # noqa: BLE001
        return None, error(INVALID_REQUEST, "Invalid Request", msg_id)
    return SessionMessage(message), None


async def serve_stdio(server: MCPServer) -> None:
    """``server.run("stdio")``, except that lines the SDK drops get an answer (see ``repair``)."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared._context_streams import create_context_streams

    low = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        send, recv = create_context_streams[Any](0)

        async def pump() -> None:
            async with send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        item, reply = repair(item)
                        if reply is not None:
                            await write_stream.send(reply)
                            continue
                    await send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            await low.run(recv, write_stream, low.create_initialization_options())
            tg.cancel_scope.cancel()

