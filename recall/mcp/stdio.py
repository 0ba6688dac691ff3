"""stdio for the MCP server: every line a client sends is read here, and answered or served.

The SDK's own reader drops some lines without a reply (a request whose id has the wrong
type parses as a notification) and leaves others to a repair that could raise (arguments
nested 1,000 deep). So the server reads stdin itself and runs each line through ``screen``,
which by construction cannot raise and cannot recurse without bound:

* a line longer than ``MAX_LINE_BYTES``      -> -32600 (the rest of the line is skipped)
* nesting deeper than ``MAX_DEPTH``          -> -32600, found by a flat scan, before parsing
* not JSON                                   -> -32700, id null
* not an object, an id that is not an
  integer or a string (object, list, float,
  null, bool), not a JSON-RPC message        -> -32600 (with the id when it is valid)
* lone surrogates in strings                 -> U+FFFD, then served
* anything else that goes wrong in ``screen`` -> -32603, id null

The SDK keeps the writing side (stdout, its claim on fd 1) and the session.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer


PARSE_ERROR, INVALID_REQUEST, INTERNAL_ERROR = -32700, -32600, -32603
# An MCP message nests a few levels (params.arguments.<a value>); the SDK's parser stops near
# 200. Deeper is refused before any recursive code sees it.
MAX_DEPTH = 128
# One line is one message; a tool call's arguments are a few KB. Longer lines are refused.
MAX_LINE_BYTES = 8 << 20

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def nesting_depth(line: str) -> int:
    """How deep ``line``'s arrays and objects nest (strings skipped), without recursion."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", line))
    depth = deepest = 0
    for ch in brackets:
        depth += 1 if ch in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _clean_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings replaced by U+FFFD.

    JSON allows ``"\\ud800"``; pydantic refuses it. Recursive, but only ever called on values
    ``nesting_depth`` has bounded to ``MAX_DEPTH``.
    """
    if isinstance(value, str):
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value) \
            if any("\ud800" <= c <= "\udfff" for c in value) else value
    if isinstance(value, list):
        return [_clean_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_clean_surrogates(k): _clean_surrogates(v) for k, v in value.items()}
    return value


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _error(code: int, message: str, msg_id: Any = None) -> Any:
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=msg_id,
                                             error=types.ErrorData(code=code, message=message)))


def _parse(line: str) -> tuple[Any, Any]:
    import json

    import mcp_types as types
    from mcp.shared.message import SessionMessage

    if nesting_depth(line) > MAX_DEPTH:
        return None, _error(INVALID_REQUEST, f"Invalid Request: nested deeper than {MAX_DEPTH}")
    try:
        data = json.loads(line)  # Python's json reads lone surrogates; pydantic's parser does not
    except (ValueError, RecursionError):
        return None, _error(PARSE_ERROR, "Parse error")
    if not isinstance(data, dict):
        return None, _error(INVALID_REQUEST, "Invalid Request")  # a batch, a number, ...
    if "id" in data and not _valid_id(data["id"]):
        return None, _error(INVALID_REQUEST, "Invalid Request: id must be an integer or a string")
    msg_id = data.get("id")
    try:
        message = types.jsonrpc_message_adapter.validate_python(_clean_surrogates(data), by_name=False)
    except Exception:  # noqa: BLE001 - pydantic's ValidationError, or anything it raises
        return None, _error(INVALID_REQUEST, "Invalid Request", msg_id)
    return SessionMessage(message), None


def screen(raw: bytes) -> tuple[Any, Any]:
    """One line from the client: (a message to serve, None) or (None, the error to answer).

    Never raises (an unexpected failure is answered -32603). A blank line is (None, None),
    the only line with no reply.
    """
    try:
        if len(raw) > MAX_LINE_BYTES:
            return None, _error(INVALID_REQUEST, f"Invalid Request: longer than {MAX_LINE_BYTES} bytes")
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            return None, None
        return _parse(line)
    except Exception:  # noqa: BLE001 - nothing a client sends ends the server
        try:
            return None, _error(INTERNAL_ERROR, "Internal error")
        except Exception:  # noqa: BLE001
            return None, None


def read_line(stream: Any) -> tuple[bytes, bool]:
    """The next line of ``stream`` (binary), at most ``MAX_LINE_BYTES + 1`` bytes kept; the
    rest of a longer line is read and dropped. (b"", True) at end of input."""
    line = stream.readline(MAX_LINE_BYTES + 1)
    if not line:
        return b"", True
    if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
        while True:
            rest = stream.readline(1 << 20)
            if not rest or rest.endswith(b"\n"):
                break
    return line, False


class _NoInput:
    """Given to the SDK as its stdin so that its own reader ends at once: ``serve_stdio`` reads."""

    def __aiter__(self) -> _NoInput:
        return self

    async def __anext__(self) -> str:
        raise StopAsyncIteration


async def serve_stdio(server: MCPServer) -> None:
    """``server.run("stdio")``, except that every line goes through ``screen``."""
    import sys

    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared._context_streams import create_context_streams

    low = server._lowlevel_server
    stdin = sys.stdin.buffer
    async with stdio_server(stdin=_NoInput()) as (_unused, write_stream):  # type: ignore[arg-type]
        send, recv = create_context_streams[Any](0)

        async def pump() -> None:
            async with send:
                while True:
                    raw, eof = await anyio.to_thread.run_sync(read_line, stdin, abandon_on_cancel=True)
                    if eof:
                        return
                    message, reply = screen(raw)
                    if reply is not None:
                        await write_stream.send(reply)
                    elif message is not None:
                        await send.send(message)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            await low.run(recv, write_stream, low.create_initialization_options())
            tg.cancel_scope.cancel()
