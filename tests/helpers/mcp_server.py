"""The MCP server as a subprocess on descriptors a test chooses (a pipe, one socket for stdin and
stdout, a reader that stops reading), and the lines a client writes to it."""

from __future__ import annotations

import json
import os
import select
import subprocess
from pathlib import Path
from typing import Any

from helpers.paths import PY, ROOT


def start(cwd: Path, stdin: Any, stdout: Any, drain_s: float | None = None) -> subprocess.Popen:
    """``python -m recall.mcp`` (with ``DRAIN_S`` set to ``drain_s`` when given), stderr piped."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    args = ["-m", "recall.mcp"] if drain_s is None else [
        "-c", f"import recall.mcp.stdio as s; s.DRAIN_S = {drain_s}; from recall.mcp.server import main; main()"]
    return subprocess.Popen([PY, *args], cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)


def line(msg_id: Any, method: str, params: dict | None = None) -> bytes:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    return json.dumps(message if params is None else {**message, "params": params}).encode() + b"\n"


def call(msg_id: Any, tool: str, arguments: dict) -> bytes:
    return line(msg_id, "tools/call", {"name": tool, "arguments": arguments})


HELLO = line(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "raw", "version": "1"}}) \
    + b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'


def read_replies(fd: int, count: int, timeout_s: float) -> list[dict]:
    """The next ``count`` replies on ``fd`` (fewer if ``timeout_s`` passes or the output ends)."""
    import time

    buf, replies = b"", []
    deadline = time.monotonic() + timeout_s
    while len(replies) < count and (left := deadline - time.monotonic()) > 0:
        if not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        buf += chunk
        *done, buf = buf.split(b"\n")
        replies += [json.loads(d) for d in done if d.strip()]
    return replies
