"""A real ``recall ui`` in a subprocess, for test_ui_*.py; ``page_client``, the page in this
process (starlette's TestClient, signed in).

``index_sample`` indexes the sample into its own RECALL_HOME (in this process, with that
home's environment set for the call only, so a module-scoped server does not depend on a
test's environment); ``UiServer.start`` starts ``recall ui --no-open`` and reads the
address it prints. ``stop`` ends the page and every daemon of that RECALL_HOME (the page
starts one).
"""

from __future__ import annotations

import html
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from helpers.cli import run_cli
from helpers.daemon import HASH_CONFIG, daemon_pids
from helpers.paths import PY, ROOT, SAMPLE_NOTES

START_S = 60.0
TOKEN = "t0ken"


def page_client(port: int, **launch):
    """The page in this process over the environment's RECALL_HOME, signed in with its token;
    ``launch``: the rest of ``recall.ui.app.Launch`` (reports, allow_writes, upload_dir...)."""
    from starlette.testclient import TestClient

    from recall.ui.app import Launch, build_app

    return TestClient(build_app(Launch(token=TOKEN, port=port, **launch)), base_url=f"http://127.0.0.1:{port}",
                      cookies={f"recall_ui_{port}": TOKEN})


def ui_env(home: Path, model: str = "hash", **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("RECALL_CONFIG", None)
    env.update(RECALL_HOME=str(home), RECALL_MODEL=model, CLAUDE_CONFIG_DIR=str(home.parent / "claude"),
               HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(ROOT), **extra)
    return env


def index_sample(home: Path, model: str = "hash") -> None:
    home.mkdir(parents=True, exist_ok=True)
    # A generous hook budget: the hook's message must reach the log on a busy test machine.
    config = "[daemon]\nhook_budget_ms = 20000\n" + (HASH_CONFIG if model == "hash" else "")
    (home / "config.toml").write_text(config, encoding="utf-8")
    run_cli("index", "-q", SAMPLE_NOTES, env=dict(ui_env(home, model), RECALL_CONFIG=None), cwd=home.parent,
            check=True)


def write_report(reports: Path, notes_dir: Path = SAMPLE_NOTES) -> Path:
    """A small evaluation run in the harness's layout (reports/<collection>/latest ->
    <run>/results.json), for the Quality page to find."""
    run = reports / "sample" / "20261130T000000Z-test"
    run.mkdir(parents=True, exist_ok=True)
    grid = [round(0.01 * i, 3) for i in range(11)]
    results = {
        "collection": "sample", "run_id": run.name, "created": "2026-11-30T00:00:00+00:00",
        "notes_dir": str(notes_dir), "n_notes": 51, "n_questions": 160,
        "model": {"spec": "hash", "model_id": "hash-256"},
        "thresholds": {"gap_floor": 0.05, "top_floor": 0.35, "full_gap": 0.25, "full_margin": 0.05},
        "metrics": {"injected_hit_rate": {"value": 0.5, "ci95": [0.4, 0.6], "n": 80},
                    "silence_rate": {"value": 0.75, "ci95": [0.65, 0.85], "n": 80}},
        "curve": {"gap_floor": grid, "injected_hit_rate": [1 - g * 8 for g in grid],
                  "silence_rate": [g * 9 for g in grid],
                  "current": {"gap_floor": 0.05, "injected_hit_rate": 0.6, "silence_rate": 0.45}},
    }
    (run / "results.json").write_text(json.dumps(results), encoding="utf-8")
    (reports / "sample" / "latest").write_text(run.name + "\n", encoding="utf-8")
    return run


@dataclass
class UiServer:
    home: Path
    proc: subprocess.Popen
    out: Path
    model: str = "hash"
    address: str = ""  # what `recall ui` printed: http://127.0.0.1:PORT/
    launcher: Path | None = None  # the 0600 page it opens the browser on (a one-time code in it)
    _token: str = ""

    @property
    def url(self) -> str:
        """An address with a fresh one-time code, read from the launcher file as a browser
        would (each code signs in one browser; the server then writes the next)."""
        assert self.launcher is not None
        text = self.launcher.read_text(encoding="utf-8")
        return html.unescape(text.split('href="', 1)[1].split('"', 1)[0])

    @property
    def token(self) -> str:
        """This launch's token, as the cookie a code was exchanged for carries it."""
        if not self._token:
            import httpx

            r = httpx.get(self.url, follow_redirects=False)
            assert r.status_code == 200 and "set-cookie" in r.headers, r.text
            self._token = r.cookies[f"recall_ui_{self.port}"]
        return self._token

    @property
    def port(self) -> int:
        return int(urlsplit(self.address).port or 0)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def cookie(self) -> dict[str, str]:
        return {f"recall_ui_{self.port}": self.token}

    def output(self) -> str:
        return self.out.read_text(encoding="utf-8", errors="replace")

    @classmethod
    def start(cls, home: Path, *args: str, model: str = "hash") -> UiServer:
        out = home.parent / f"ui-{time.monotonic_ns()}.out"
        with open(out, "wb") as fh:
            proc = subprocess.Popen([PY, "-m", "recall.cli", "ui", "--no-open", *args], env=ui_env(home, model),
                                    stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                    cwd=str(home.parent), start_new_session=True)
        server = cls(home, proc, out, model)
        end = time.monotonic() + START_S
        while time.monotonic() < end:
            for line in server.output().splitlines():
                if line.startswith("recall ui: http://"):
                    server.address = line.split(" ", 2)[2].strip()
                if line.startswith("open it through file://") and server.address:
                    from urllib.parse import unquote

                    server.launcher = Path(unquote(urlsplit(line.split(" ")[3]).path))
                    return server
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        server.stop()
        raise AssertionError("recall ui did not print its address:\n" + server.output())

    def hook(self, prompt: str, cwd: Path | None = None) -> str:
        """One message through the real hook (what the agent would do)."""
        event = json.dumps({"prompt": prompt, "cwd": str(cwd or self.home.parent)})
        out = subprocess.run([PY, "-P", "-m", "recall.agents.hook"], input=event.encode(),
                             env=ui_env(self.home, self.model), capture_output=True, timeout=30)
        return out.stdout.decode()

    def wait_daemon(self, timeout_s: float = 60.0) -> None:
        """Block until this home's daemon answers (the page started it)."""
        code = ("import sys; from recall.ipc import client; "
                f"sys.exit(0 if client.wait_until_ready(timeout_s={timeout_s}) else 1)")
        subprocess.run([PY, "-c", code], env=ui_env(self.home, self.model), check=True, timeout=timeout_s + 10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        for pid in daemon_pids(self.home):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
