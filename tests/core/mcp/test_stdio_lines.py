"""The MCP server's stdin reader on the event loop (``stream_lines``) gives ``read_line``'s lines
exactly: the same lines, the same cut of a line too long (its start and its end kept), the same
end of input, whatever sizes the pipe delivers them in."""

from __future__ import annotations

import asyncio
import io
import random

from recall.mcp.stdio import read_line, stream_lines

LIMIT = 16


def _threaded(data: bytes) -> list[bytes]:
    stream, lines = io.BytesIO(data), []
    while True:
        line, eof = read_line(stream, LIMIT)
        if eof:
            return lines
        lines.append(line)


def _on_loop(data: bytes, sizes: random.Random) -> list[bytes]:
    async def run() -> list[bytes]:
        reader = asyncio.StreamReader(limit=LIMIT)

        async def pipe() -> None:  # a pipe hands over whatever has arrived, in pieces of any size
            pos = 0
            while pos < len(data):
                take = sizes.randint(1, 3 * LIMIT)
                reader.feed_data(data[pos:pos + take])
                pos += take
                await asyncio.sleep(0)
            reader.feed_eof()

        feeding = asyncio.create_task(pipe())
        lines, next_line = [], stream_lines(reader, LIMIT)
        while True:
            line, eof = await next_line()
            if eof:
                await feeding
                return lines
            lines.append(line)

    return asyncio.run(run())


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
    """A line too long keeps its first ``LIMIT + 1`` bytes and its last ``ID_SCAN_BYTES`` (where
    the MCP TypeScript SDK writes the id: AG01); its middle is dropped."""
    from recall.mcp.stdio import ID_SCAN_BYTES

    end = b"z" * (ID_SCAN_BYTES - 1) + b"\n"
    data = b"x" * (LIMIT + 1) + b"y" * (3 * ID_SCAN_BYTES) + end + b'{"ok": 1}\n'
    expected = [b"x" * (LIMIT + 1) + end, b'{"ok": 1}\n']
    assert _on_loop(data, random.Random(1)) == expected and _threaded(data) == expected
