"""Core dumps in tests: start a process with them allowed (as a user's `ulimit -c unlimited`
shell would), and read the limit a running process holds."""

from __future__ import annotations

from pathlib import Path


def allow_cores() -> None:
    """``preexec_fn``: the child may dump core (RLIMIT_CORE raised to its hard limit), and
    SIGQUIT does what it does in a terminal (a test run started in the background by a
    non-interactive shell inherits SIGQUIT ignored, and the child then outlived it)."""
    import resource
    import signal

    hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def core_limit(pid: int) -> list[str] | None:
    """[soft, hard] of a running process's core limit as /proc shows it ("0", "unlimited"), or
    None where there is no /proc."""
    limits = Path(f"/proc/{pid}/limits")
    if not limits.exists():
        return None
    line = next(x for x in limits.read_text().splitlines() if x.startswith("Max core file size"))
    return line.split()[4:6]


def cores_in(folder: Path) -> list[Path]:
    """The core files in ``folder`` (where a kernel with ``core_pattern`` = core writes them)."""
    return [p for p in folder.iterdir() if p.name.startswith("core")]


def crashes_without_core(proc, sig: int, folder: Path, wait_s: float = 30.0) -> None:
    """``proc`` (started with ``allow_cores``) comes to hold a core limit of 0 within ``wait_s``,
    dies of ``sig`` and leaves no core file in ``folder`` (its cwd). Skips where there is no /proc."""
    import time

    import pytest

    if core_limit(proc.pid) is None:
        pytest.skip("no /proc here")
    end = time.monotonic() + wait_s
    while core_limit(proc.pid) != ["0", "0"] and time.monotonic() < end and proc.poll() is None:
        time.sleep(0.05)
    assert core_limit(proc.pid) == ["0", "0"]
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == -sig
    assert cores_in(folder) == []
