"""Real daemons in subprocesses, and what tests of the daemon and the hook share.

``Daemons`` starts real daemon subprocesses and kills them all at teardown; the
``daemons`` and ``indexed`` fixtures built on it live in conftest.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from helpers.cores import allow_cores
from helpers.env import env_with
from helpers.paths import PY
from recall.ipc import client

# Hash embedder (lexical): a question naming a note's words scores ~0.43 with a gap of
# ~0.29; chit-chat tops out ~0.23. These thresholds split the two.
HASH_CONFIG = """
[thresholds."hash-256"]
gap_floor = 0.15
top_floor = 0.35
full_gap = 0.25
full_margin = 0.05
"""
MATCHING = "Feature flags via Unleash: how do we add a feature flag?"
CHITCHAT = "hello how are you doing today"


def write_config(home: Path, extra: str = "") -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(HASH_CONFIG + extra, encoding="utf-8")
    return path


def index_dirs(*dirs: Path) -> None:
    """Index folders in this process (same RECALL_HOME and model as the daemon)."""
    from recall.api import Recall
    from recall.indexing.indexer import SourceSpec

    app = Recall()
    try:
        app.index([SourceSpec("dir", d) for d in dirs])
    finally:
        app.store.close()


def daemon_pids(home: Path) -> list[int]:
    """Daemons of this test: processes running recall.daemon with this RECALL_HOME."""
    wanted = f"RECALL_HOME={home}".encode()
    return pids_where((b"recall.daemon",), lambda environ: wanted in environ)


def pids_where(marks: tuple[bytes, ...], env_ok: Callable[[list[bytes]], bool]) -> list[int]:
    """Processes whose command line holds one of ``marks`` and whose environment (a list of
    ``NAME=value`` bytes) passes ``env_ok``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if any(m in cmdline for m in marks) and env_ok(environ.split(b"\0")):
            pids.append(int(entry.name))
    return pids


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def raw_connect(home: Path, timeout: float = 5.0):
    """A bare connection to the daemon's socket (for probes that misbehave on purpose)."""
    import socket

    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(str(home / "run" / "daemon.sock"))
    return s


def wait_for(pred, timeout_s: float, poll_s: float = 0.05) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(poll_s)
    return bool(pred())


class Daemons:
    """Starts daemons for one test and kills every one of them at teardown, including
    those the hook started detached (found by their RECALL_HOME)."""

    def __init__(self, home: Path, tmp: Path) -> None:
        self.home = home
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []

    def start(self, wait_s: float = 20.0, ready: bool = True, nofile: int | None = None, cores: bool = False,
              **env: str) -> subprocess.Popen:
        """``nofile``: the daemon's RLIMIT_NOFILE (soft and hard), to run it out of descriptors;
        ``cores``: started with core dumps allowed (RLIMIT_CORE raised, as a user's shell may)."""
        err = open(self.tmp / f"daemon-{len(self.procs)}.err", "wb")  # noqa: SIM115

        def limit() -> None:
            import resource

            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
            if cores:
                allow_cores()

        proc = subprocess.Popen([PY, "-P", "-m", "recall.daemon", "--foreground"], env=env_with(**env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True, preexec_fn=limit if nofile or cores else None)
        err.close()
        self.procs.append(proc)
        if ready:
            reply = client.wait_until_ready(timeout_s=wait_s)
            assert reply is not None, self.stderr(proc)
            assert reply["pid"] == proc.pid
        return proc

    def stderr(self, proc: subprocess.Popen) -> str:
        i = self.procs.index(proc)
        return (self.tmp / f"daemon-{i}.err").read_text(errors="replace")

    def kill_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait(timeout=10)
        for pid in daemon_pids(self.home):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def refreshes_done(data: Path, wait_s: float = 60.0) -> None:
    """Wait until the plugin's background work for its data folder ``data`` is over: no process of
    ``scripts/recall_plugin.py`` runs for it (a session start's refresh or setup, started detached:
    it runs from before the session start returns) and no refresh holds ``refresh.lock``. A refresh
    starts the daemon, then indexes: a daemon it starts after the test's kill outlives the test."""
    import fcntl

    end = time.monotonic() + wait_s
    ours = f"CLAUDE_PLUGIN_DATA={data}".encode()
    while pids_where((b"recall_plugin.py",), lambda environ: ours in environ) and time.monotonic() < end:
        time.sleep(0.1)
    lock = data / "refresh.lock"
    if not lock.exists():
        return
    fd = os.open(lock, os.O_RDWR)
    try:
        while time.monotonic() < end:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError:
                time.sleep(0.1)
    finally:
        os.close(fd)


def dead_socket(path: Path) -> None:
    """A socket file at ``path`` that nobody listens on (what a killed daemon leaves)."""
    import socket

    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()


# The ways a live daemon's socket file can go: each is answered by binding it again.
LOST_SOCKET = ("deleted", "replaced by a file", "replaced by a dead socket", "chmod 000", "chmod 777",
               "its folder chmod 000")


def lose_socket(sock: Path, how: str) -> None:
    """Take ``sock`` from under its daemon in one of the ``LOST_SOCKET`` ways."""
    if how.startswith("chmod"):
        sock.chmod(int(how.split()[1], 8))
        return
    if how == "its folder chmod 000":
        sock.parent.chmod(0)
        return
    sock.unlink()
    if how == "replaced by a file":
        sock.write_text("not a socket")
    elif how == "replaced by a dead socket":
        dead_socket(sock)


def plant_stale_daemon_files(home: Path, **status: object) -> int:
    """What a killed daemon leaves behind: a socket file nobody listens on and a status
    file naming a dead pid (returned). ``status`` adds keys to the status file."""
    import json

    run = home / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    dead = subprocess.Popen([PY, "-c", "pass"])
    dead.wait()
    dead_socket(run / "daemon.sock")
    (run / "daemon.json").write_text(json.dumps({"pid": dead.pid, "socket": str(run / "daemon.sock"), **status}))
    for name in ("daemon.json", "daemon.sock"):  # as a daemon leaves them: 0600 (the client refuses others)
        (run / name).chmod(0o600)
    return dead.pid
