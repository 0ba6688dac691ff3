"""The MCP server's stdin reader on the event loop (``PipeLines``) gives ``read_line``'s lines
exactly: the same lines, the same cut of a line too long, the same end of input, whatever
sizes the pipe delivers them in."""

from __future__ import annotations

import io
import random

import anyio

from recall.mcp.stdio import PipeLines, read_line

LIMIT = 16


def _threaded(data: bytes) -> list[bytes]:
    stream, lines = io.BytesIO(data), []
    while True:
        line, eof = read_line(stream, LIMIT)
        if eof:
            return lines
        lines.append(line)


def _on_loop(data: bytes, sizes: random.Random) -> list[bytes]:
    pos = 0

    async def read(n: int) -> bytes:  # a pipe hands over whatever has arrived, up to n bytes
        nonlocal pos
        take = min(n, sizes.randint(1, 3 * LIMIT))
        part, pos = data[pos:pos + take], pos + take
        return part

    async def run() -> list[bytes]:
        lines, reader = [], PipeLines(read, LIMIT)
        while True:
            line, eof = await reader.next()
            if eof:
                return lines
            lines.append(line)

    return anyio.run(run)


def _stream(rng: random.Random) -> bytes:
    out = b""
    for _ in range(rng.randint(0, 12)):
        n = rng.choice([0, 1, LIMIT - 1, LIMIT, LIMIT + 1, LIMIT + 2, 3 * LIMIT, rng.randint(0, 5 * LIMIT)])
        out += bytes(rng.choice(b"ab{} \xff") for _ in range(n)) + (b"\n" if rng.random() < 0.85 else b"")
    return out


def test_same_lines_as_read_line():
    rng = random.Random(22)
    for _ in range(3000):
        data = _stream(rng)
        assert _on_loop(data, random.Random(rng.random())) == _threaded(data), data


def test_a_line_too_long_is_cut_and_the_next_one_kept():
    data = b"x" * (5 * LIMIT) + b"\n" + b'{"ok": 1}\n'
    assert _on_loop(data, random.Random(1)) == [b"x" * (LIMIT + 1), b'{"ok": 1}\n']
