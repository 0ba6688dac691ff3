"""stdio for the MCP server: every line a client sends is read here, and answered or served.

The SDK's own reader drops some lines without a reply (a request whose id has the wrong
type parses as a notification) and leaves others to a repair that could raise (arguments
nested 1,000 deep). So the server reads stdin itself and runs each line through ``screen``,
which by construction cannot raise and cannot recurse without bound:

* a line longer than ``MAX_LINE_BYTES``      -> -32600 (the rest of the line is skipped), with
                                               the id its start or its end holds (``over_cap_id``);
                                               a ``recall_context`` call: its empty answer
* nesting deeper than ``MAX_DEPTH``          -> -32600, found by a flat scan, before parsing
* not JSON                                   -> -32700, id null
* not an object, an id that is not an
  integer or a string (object, list, float,
  null, bool), not a JSON-RPC message        -> -32600 (with the id when it is valid)
* lone surrogates in strings                 -> U+FFFD, then served
* anything else that goes wrong in ``screen`` -> -32603, id null

Neither side costs a worker-thread hop per message (bench/bench_mcp.py): lines are read on the
event loop (``stream_lines``; a worker thread per line only when stdin is a regular file), and
replies are handed to a writer thread of their own (``output.Stdout``: a queue put, no hop
awaited; a client that stops reading no longer holds the loop), which writes them to a private
duplicate of fd 1 while fd 1 itself points at stderr, so a stray print cannot corrupt the stream
(the SDK's own claim, done here). The SDK keeps the session.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from recall.mcp.ids import ID_SCAN_BYTES, over_cap_id
from recall.mcp.output import ClientGone, Stdout

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer


PARSE_ERROR, INVALID_REQUEST, INTERNAL_ERROR = -32700, -32600, -32603
# An MCP message nests a few levels (params.arguments.<a value>); the SDK's parser stops near
# 200. Deeper is refused before any recursive code sees it.
MAX_DEPTH = 128
# One line is one message; a tool call's arguments are a few KB (and only the start of a
# message is searched). Longer lines are refused before they are parsed: an outside tester's
# 7.5 MB message took the SDK's parsing 0.9-1.9 s, far past the hook's budget, to be cut anyway.
MAX_LINE_BYTES = 1 << 20
# How long a server whose input has ended still answers the requests it read (a search that
# loads the model first takes seconds): then it ends, as the SDK would have at once.
DRAIN_S = 60.0
# A line longer than this is screened in a worker thread (one hop; most lines are a few KB).
SCREEN_ON_LOOP_BYTES = 64 << 10

_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = str.maketrans({"[": "\x01", "{": "\x01", "]": "\xff", "}": "\xff"})


def nesting_depth(line: str) -> int:
    """How deep ``line``'s arrays and objects nest (strings skipped), without recursion."""
    import array
    from itertools import accumulate

    # Each bracket as a signed byte, +1 opening and -1 closing, summed in C: a loop over them
    # in Python took 0.12 s for a line of half a million (an outside tester's D3).
    steps = _NOT_BRACKET.sub("", _STRING.sub("", line)).translate(_STEP).encode("latin-1")
    return max(0, max(accumulate(array.array("b", steps)), default=0))


# Two searches, each linear: one pattern of both in either order (`.*?` between them) began again at
# each "method" and read to the end of the 64 KB each time (2 s for a start of repeated
# `"method":"tools/call",`; an outside tester's D3).
_TOOLS_CALL = re.compile(r'"method"\s*+:\s*+"tools/call"')
_CONTEXT_NAME = re.compile(r'"name"\s*+:\s*+"recall_context"')


def _context_call(start: str) -> bool:
    return _TOOLS_CALL.search(start) is not None and _CONTEXT_NAME.search(start) is not None


def _too_long(raw: bytes) -> Any:
    """The answer to a line past ``MAX_LINE_BYTES``: a ``recall_context`` call gets the tool's
    empty answer (docs/mcp.md: "answers empty text ..., never an error"), anything else -32600."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    msg_id = over_cap_id(raw)
    if msg_id is not None and _context_call(raw[:ID_SCAN_BYTES].decode("utf-8", errors="replace")):
        empty = {"content": [{"type": "text", "text": ""}], "isError": False}  # what the tool answers for ""
        return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=msg_id, result=empty))
    return _error(INVALID_REQUEST, f"Invalid Request: longer than {MAX_LINE_BYTES} bytes", msg_id)


_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone surrogate (json.loads joins the pairs)


def _clean_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings replaced by U+FFFD.

    JSON allows ``"\\ud800"``; pydantic refuses it. Recursive, but only ever called on values
    ``nesting_depth`` has bounded to ``MAX_DEPTH``.
    """
    if isinstance(value, str):  # one regular expression, not a Python loop over each character of a message
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
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
            return None, _too_long(raw)
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            return None, None
        return _parse(line)
    except Exception:  # noqa: BLE001 - nothing a client sends ends the server
        try:
            return None, _error(INTERNAL_ERROR, "Internal error")
        except Exception:  # noqa: BLE001
            return None, None


def read_line(stream: Any, limit: int = MAX_LINE_BYTES) -> tuple[bytes, bool]:
    """The next line of ``stream`` (binary), at most ``limit + 1`` bytes kept; of the rest of a
    longer line only its last ``ID_SCAN_BYTES`` (``over_cap_id``). (b"", True) at end of input."""
    line = stream.readline(limit + 1)
    if not line:
        return b"", True
    if len(line) > limit and not line.endswith(b"\n"):
        tail = b""
        while True:
            rest = stream.readline(1 << 20)
            tail = (tail + rest)[-ID_SCAN_BYTES:]
            if not rest or rest.endswith(b"\n"):
                break
        return line + tail, False
    return line, False


def stream_lines(reader: Any, limit: int = MAX_LINE_BYTES) -> Any:
    """``read_line`` on the event loop: an async ``() -> (line, eof)`` over an
    ``asyncio.StreamReader`` made with ``limit=limit``, no worker-thread hop per line, the same
    bounds (a line longer than ``limit`` comes as its first ``limit + 1`` bytes and its last
    ``ID_SCAN_BYTES``, the rest dropped: ``read_line``'s lines exactly)."""
    import asyncio

    async def next_line() -> tuple[bytes, bool]:
        try:
            return await reader.readuntil(b"\n"), False
        except asyncio.IncompleteReadError as exc:  # end of input: the last line, if any
            return (exc.partial, False) if exc.partial else (b"", True)
        except asyncio.LimitOverrunError:  # too long: its first limit + 1 bytes and its end kept
            line = await reader.readexactly(limit + 1)
        tail = b""
        while True:
            try:
                return line + (tail + await reader.readuntil(b"\n"))[-ID_SCAN_BYTES:], False
            except asyncio.IncompleteReadError as exc:
                return line + (tail + exc.partial)[-ID_SCAN_BYTES:], False
            except asyncio.LimitOverrunError as exc:
                tail = (tail + await reader.readexactly(exc.consumed))[-ID_SCAN_BYTES:]

    return next_line


async def _lines_of(stdin: Any) -> Any:
    """An async ``() -> (line, eof)`` over ``stdin``: on the event loop when it is a pipe,
    socket or terminal under asyncio; else ``read_line`` in a worker thread per line (a regular
    file, ``/dev/null`` or another device epoll refuses, another event loop)."""
    import anyio

    try:
        import asyncio
        import os
        import stat

        import sniffio

        if sniffio.current_async_library() != "asyncio":
            raise RuntimeError("not asyncio")
        mode = os.fstat(stdin.fileno()).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(stdin.fileno())):
            # asyncio takes any character device, then fails to watch it in a later callback
            # (EPERM from epoll: /dev/null) and the server waits for ever on a stdin at its end.
            raise ValueError("not a pipe")
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except (ValueError, OSError, RuntimeError, ImportError):  # a regular file: no pipe transport
        async def threaded() -> tuple[bytes, bool]:
            return await anyio.to_thread.run_sync(read_line, stdin, abandon_on_cancel=True)

        return threaded
    return stream_lines(reader)


def _claim_stdout() -> int:
    """A private descriptor for the protocol's output; fd 1 points at stderr meanwhile, so a
    stray print (ours, a library's, a child's) cannot corrupt the stream (the SDK's own claim,
    which it skips when it is given a stdout)."""
    import os
    import sys

    sys.stdout.flush()
    fd = os.dup(1)
    os.dup2(2, 1)
    return fd


def _release_stdout(fd: int) -> None:
    import os

    os.dup2(fd, 1)
    os.close(fd)


def _owed(stdout: Stdout, message: Any) -> None:
    """Count ``message`` a request owed an answer, or a client's cancellation of one."""
    import mcp_types as types

    if isinstance(message, types.JSONRPCRequest):
        stdout.asked(message.id)
    elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
        params = message.params if isinstance(message.params, dict) else {}
        stdout.dropped(params.get("requestId"))


class _NoInput:
    """Given to the SDK as its stdin so that its own reader ends at once: ``serve_stdio`` reads."""

    def __aiter__(self) -> _NoInput:
        return self

    async def __anext__(self) -> str:
        raise StopAsyncIteration


async def serve_stdio(server: MCPServer) -> None:
    """``server.run("stdio")``, except that every line goes through ``screen``. ``ClientGone``
    when the client closed its end of stdout (or read nothing of 64 MiB)."""
    import sys

    stdin = sys.stdin.buffer
    out = _claim_stdout()
    stdout = Stdout(out)
    try:
        await _serve(server, stdin, stdout)
    finally:
        if stdout.close():  # else the writer still waits on a client that reads nothing: left open
            _release_stdout(out)
    if stdout.gone is not None:
        raise ClientGone(stdout.gone)


async def _serve(server: MCPServer, stdin: Any, stdout: Stdout) -> None:
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared._context_streams import create_context_streams

    low = server._lowlevel_server
    stdout.start()
    async with stdio_server(stdin=_NoInput(), stdout=stdout) as (_unused, write_stream):  # type: ignore[arg-type]
        send, recv = create_context_streams[Any](0)

        next_line = await _lines_of(stdin)

        async def pump() -> None:
            async with send:
                while True:
                    raw, eof = await next_line()
                    if eof:
                        await stdout.drained(DRAIN_S)  # `printf ... | recall mcp`: every request answered
                        return
                    # A long line is read in a worker thread: the event loop answers meanwhile
                    # (what a line costs is bounded, yet a 1 MiB one may cost tens of ms).
                    message, reply = screen(raw) if len(raw) <= SCREEN_ON_LOOP_BYTES \
                        else await anyio.to_thread.run_sync(screen, raw)
                    if reply is not None:
                        await write_stream.send(reply)
                    elif message is not None:
                        _owed(stdout, message.message)
                        await send.send(message)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)

            async def gone() -> None:  # the client closed its end of stdout: the server ends
                await stdout.wait_gone()
                tg.cancel_scope.cancel()

            tg.start_soon(gone)
            await low.run(recv, write_stream, low.create_initialization_options())
            tg.cancel_scope.cancel()
