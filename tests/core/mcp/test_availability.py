"""What a client can do to the MCP server's availability (an outside tester's D3-D5): a line that
costs its screening seconds, one socket for stdin and stdout, a client that goes or stops reading.
The server is the real one, a subprocess on the descriptors each test chooses."""

from __future__ import annotations

import subprocess
import time

import pytest

from helpers import mcp_server
from recall.mcp.ids import ID_SCAN_BYTES, leading_id, over_cap_id
from recall.mcp.stdio import MAX_LINE_BYTES, screen


def _padded(start: bytes, size: int) -> bytes:
    return start + b"a" * (size - len(start) - 1) + b"}"


def _escaped_quotes(pairs: int, size: int = MAX_LINE_BYTES + 10) -> bytes:
    """``{`` then ``"\\`` ``pairs`` times: one string never closed, an escaped quote every 2 bytes."""
    return _padded(b"{" + b'"\\' * pairs, size)


def _timed(fn, arg) -> float:
    t0 = time.perf_counter()
    fn(arg)
    return time.perf_counter() - t0


def test_reading_the_id_of_a_line_takes_time_linear_in_it():
    """An unclosed string of escaped quotes cost ``leading_id`` a rescan to the end of its 64 KB
    at each quote (2,000 pairs 2.6 s, 32,000 pairs 22 s: the server stalled); a start of
    repeated ``"method":"tools/call",`` cost the search for a recall_context call 1.2 s."""
    screen(b"{}")  # its imports
    screen(b"x" * (MAX_LINE_BYTES + 1))
    start = _escaped_quotes(2000, ID_SCAN_BYTES).decode()
    assert _timed(leading_id, start) < 0.2
    for raw in (_escaped_quotes(2000), _escaped_quotes(32000),
                _padded(b'{"id": 1, ' + b'"method":"tools/call",' * 3000, MAX_LINE_BYTES + 10),
                _padded(b'{"id": 1, ' + b'"name":"recall_context",' * 2800, MAX_LINE_BYTES + 10),
                _padded(b'{"id": 1, "a": ' + b'"' * 70000, MAX_LINE_BYTES + 10),
                _padded(b"[" * 500000, MAX_LINE_BYTES - 1)):
        assert _timed(screen, raw) < 0.2, raw[:40]
    # What they still find: the id before an unclosed string, a context call in either order.
    assert leading_id('{"id": 7, "a": "\\"\\"\\') == 7 and over_cap_id(_escaped_quotes(10)) is None
    for call in (b'{"id": 3, "method": "tools/call", "params": {"name": "recall_context", "arguments": {"p": "',
                 b'{"params": {"name": "recall_context"}, "method": "tools/call", "id": 3, "x": "'):
        answer = screen(_padded(call, MAX_LINE_BYTES + 10))[1].message
        assert answer.id == 3 and answer.result == {"content": [{"type": "text", "text": ""}], "isError": False}


@pytest.mark.process
def test_a_line_of_escaped_quotes_is_answered_at_once_and_so_is_the_next(indexed, tmp_path):
    """The line the tester sent: its -32600 came after 18.3 s and a recall_context behind it
    after 18.6 s (Claude Code's hook waits 5 s). Both come at once now."""
    proc = mcp_server.start(tmp_path, subprocess.PIPE, subprocess.PIPE)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(mcp_server.HELLO)
        proc.stdin.flush()
        assert [r["id"] for r in mcp_server.read_replies(proc.stdout.fileno(), 1, 30)] == [0]
        t0 = time.monotonic()
        proc.stdin.write(_escaped_quotes(32000) + b"\n" + mcp_server.call(2, "recall_context", {"prompt": "hi"}))
        proc.stdin.flush()
        replies = mcp_server.read_replies(proc.stdout.fileno(), 2, 5)
        assert [r["id"] for r in replies] == [None, 2] and replies[0]["error"]["code"] == -32600
        assert time.monotonic() - t0 < 3
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _searches(count: int) -> bytes:
    return b"".join(mcp_server.call(i, "recall_search", {"query": "deploy retry tests", "k": 50})
                    for i in range(1, count + 1))


def _stopped(proc: subprocess.Popen, timeout_s: float) -> int | None:
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None


@pytest.mark.process
def test_one_socket_for_stdin_and_stdout_keeps_the_server_while_the_client_reads_late(indexed, tmp_path):
    """`socat EXEC`, a terminal: stdin and stdout one file description, which asyncio's reader made
    non-blocking; with the client's buffers full a write raised EAGAIN and the server died (rc 1
    after 2 of 20 answers). It waits for the reader now."""
    import socket

    ours, theirs = socket.socketpair()
    for end in (ours, theirs):  # small buffers: the answers fill them long before they are read
        end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    proc = mcp_server.start(tmp_path, theirs.fileno(), theirs.fileno())
    theirs.close()
    try:
        ours.sendall(mcp_server.HELLO + _searches(20))
        time.sleep(3)  # not reading: the server's writes meet a full socket
        replies = mcp_server.read_replies(ours.fileno(), 21, 30)
        assert sorted(r["id"] for r in replies) == list(range(21)), proc.poll()
        assert all(len(r["result"]["structuredContent"]["results"]) > 10 for r in replies[1:])
        assert proc.poll() is None  # still serving
        ours.shutdown(socket.SHUT_WR)
        assert _stopped(proc, 15) == 0
        assert proc.stderr is not None and b"Traceback" not in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait(timeout=10)
        ours.close()


@pytest.mark.process
def test_a_client_that_closes_its_end_of_stdout_ends_the_server_with_one_line(indexed, tmp_path):
    """It ended rc 1 (right) with a 40-line ExceptionGroup / BrokenPipeError traceback."""
    import os

    read_end, write_end = os.pipe()
    proc = mcp_server.start(tmp_path, subprocess.PIPE, write_end)
    os.close(write_end)
    try:
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(mcp_server.HELLO)
        proc.stdin.flush()
        assert [r["id"] for r in mcp_server.read_replies(read_end, 1, 30)] == [0]
        os.close(read_end)
        proc.stdin.write(_searches(3))
        proc.stdin.flush()
        assert _stopped(proc, 15) == 1
        said = proc.stderr.read().decode().strip().splitlines()
        assert len(said) == 1 and "closed its end of stdout" in said[0], said
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.process
def test_a_client_that_stops_reading_cannot_keep_the_server_past_its_input_and_drain(indexed, tmp_path):
    """The blocking write to a full pipe held the event loop: the end of stdin and DRAIN_S were
    never seen (alive 120 s after stdin closed). It ends within DRAIN_S (here 2 s) and CLOSE_S."""
    import fcntl
    import os

    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    proc = mcp_server.start(tmp_path, subprocess.PIPE, write_end, drain_s=2.0)
    os.close(write_end)
    try:
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(mcp_server.HELLO + _searches(20))
        proc.stdin.close()  # and never a byte read
        t0 = time.monotonic()
        assert _stopped(proc, 20) is not None, "still running 20 s after its input ended"
        assert time.monotonic() - t0 < 12
        assert b"Traceback" not in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait(timeout=10)
        os.close(read_end)
