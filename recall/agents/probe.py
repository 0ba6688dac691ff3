"""The latency check after `recall install`: the daemon started if needed, warm questions timed
through it and whole hook processes, against the hook's budget."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recall.agents.install import EVENT, HOOK_MODULE, InstallError

# A question close to everyday work, for timing only (its answer is not shown).
PROBE_PROMPT = "how do we roll back a failed deploy to production without losing data?"
PROBE_ROUNDS = 5


def latency_check(budget_ms: float, cwd: Path, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Start the daemon if needed, time warm questions through it and whole hook processes.

    Returns the measurements; ``fits`` says whether a warm exchange fits in the budget.
    """
    import statistics
    import subprocess

    from recall.ipc import client

    report: dict[str, Any] = {"budget_ms": budget_ms, "started_daemon": False}
    if client.wait_until_ready(timeout_s=0.5) is None:
        say("starting the daemon (it loads the model once)...")
        t0 = time.perf_counter()
        client.spawn_daemon(cooldown_s=0)
        if client.wait_until_ready(timeout_s=120) is None:
            raise InstallError("the daemon did not start; `recall serve --foreground` shows why")
        report["started_daemon"] = True
        report["start_s"] = round(time.perf_counter() - t0, 2)
    status = client.request({"cmd": "status"}, timeout=10)
    report.update(model=status.get("model"), device=status.get("device"))
    say(f"model: {status.get('model')} on {status.get('device')}")

    query = {"cmd": "query", "prompt": PROBE_PROMPT, "cwd": str(cwd), "check": True}  # not one of your messages
    client.request(query, timeout=30)  # the first question warms caches
    exchanges, embeds = [], []
    for _ in range(PROBE_ROUNDS):
        t0 = time.perf_counter()
        reply = client.request(query, timeout=30)
        exchanges.append((time.perf_counter() - t0) * 1000)
        embeds.append(float(reply.get("timings_ms", {}).get("embed_ms", 0.0)))
    hook_runs = []
    event = json.dumps({"prompt": PROBE_PROMPT, "cwd": str(cwd), "hook_event_name": EVENT}).encode()
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-P", "-m", HOOK_MODULE], input=event, capture_output=True,
                       timeout=30, check=False, env={**os.environ, client.CHECK_ENV: "1"})
        hook_runs.append((time.perf_counter() - t0) * 1000)
    report.update(
        exchange_ms=round(statistics.median(exchanges), 1),
        exchange_max_ms=round(max(exchanges), 1),
        embed_ms=round(statistics.median(embeds), 1),
        hook_process_ms=round(statistics.median(hook_runs), 1),
    )
    report["fits"] = max(exchanges) <= budget_ms
    say(f"warm question through the daemon: median {report['exchange_ms']} ms, worst "
        f"{report['exchange_max_ms']} ms (embedding {report['embed_ms']} ms); whole hook process "
        f"{report['hook_process_ms']} ms")
    return report
