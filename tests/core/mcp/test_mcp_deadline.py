"""The MCP tool ``recall_context`` (the hook path with no process per message) is bounded by the
hook's budget as a whole: with RECALL_HOME stalled (every ``openat`` and ``stat`` of the server
waiting 3 s, injected by ``strace -p`` into the running server), each call took over 15 s (an
outside tester's; 13 ms warm). Now each answers empty within the budget, a thread stuck on the
stall is left behind, at most a few of them, and the server answers as before once the stall ends."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import anyio
import pytest

from helpers.daemon import MATCHING, pids_where
from helpers.paths import ROOT

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace injects the stall (apt install strace)")

WALL_LIMIT_S = 1.5  # a 300 ms budget, well within; the stall is 3 s
CALLS = 7  # more than the threads a stall may hold (recall.mcp.tools.CONTEXT_THREADS)


def _text(result) -> str:
    assert not result.is_error, result.content
    return "".join(getattr(c, "text", "") for c in result.content)


async def _answered(session: ClientSession, tag: str, tries: int) -> bool:
    for i in range(tries):
        args = {"prompt": MATCHING, "cwd": "/", "session_id": f"{tag}-{i}"}
        if "additionalContext" in _text(await session.call_tool("recall_context", args)):
            return True
        await anyio.sleep(0.3)
    return False


def _attach(home) -> subprocess.Popen:
    """strace on the running server, every thread: each ``openat``/``stat`` waits 3 s first."""
    pids = pids_where((b"recall.mcp",), lambda environ: f"RECALL_HOME={home}".encode() in environ)
    assert len(pids) == 1, pids
    tracer = subprocess.Popen(["strace", "-f", "-qq", "-o", os.devnull, "-p", str(pids[0]), "-e",
                               "inject=newfstatat,statx,openat,stat,lstat:delay_enter=3000000"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    end = time.monotonic() + 10
    task = f"/proc/{pids[0]}/task"
    while time.monotonic() < end and tracer.poll() is None:
        traced = [open(f"{task}/{t}/status").read().count("TracerPid:\t0\n") == 0 for t in os.listdir(task)]
        if all(traced):
            return tracer
        time.sleep(0.02)
    tracer.kill()
    pytest.skip(f"strace cannot attach here: {tracer.stderr.read(300) if tracer.stderr else b''!r}")


async def _session(params: StdioServerParameters, home) -> dict:
    out: dict = {"walls": [], "texts": []}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out["warm_before"] = await _answered(session, "before", 5)
        tracer = _attach(home)
        try:
            for i in range(CALLS):
                t0 = time.monotonic()
                with anyio.fail_after(30):
                    result = await session.call_tool("recall_context", {"prompt": MATCHING, "cwd": "/",
                                                                        "session_id": f"stalled-{i}"})
                out["walls"].append(time.monotonic() - t0)
                out["texts"].append(_text(result))
        finally:
            tracer.terminate()  # detaches: the stalled calls go on
            tracer.wait(10)
        out["warm_after"] = await _answered(session, "after", 20)
    return out


@pytest.mark.process
def test_recall_context_answers_empty_within_the_budget_while_the_home_stalls(indexed, daemons):
    daemons.start()
    env = {"RECALL_HOME": str(indexed), "RECALL_MODEL": "hash", "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "CLAUDE_CONFIG_DIR": str(indexed.parent / "claude")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "recall.mcp"], env=env, cwd="/")
    out = anyio.run(_session, params, indexed)
    assert out["warm_before"]
    assert out["texts"] == [""] * CALLS, out["texts"]  # the empty answer, never an error
    assert max(out["walls"]) < WALL_LIMIT_S, [round(w, 2) for w in out["walls"]]
    assert out["warm_after"]  # the stuck threads finished, and the next message is answered
