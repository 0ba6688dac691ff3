"""Limits of the system a command meets, each said as itself with its repair: a file-size limit
(SQLite says only "disk I/O error"), a home whose path SQLite cannot open (it says only "unable
to open database file"). An outside tester got those bare words, naming neither."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time

import pytest

from helpers.notes import write_note


def recall(*args: str, env: dict[str, str], preexec=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "recall.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, preexec_fn=preexec, timeout=300)


def test_a_file_size_limit_is_said_with_its_repair(tmp_path):
    notes = tmp_path / "notes"
    for i in range(20):
        write_note(notes, f"n{i}", f"note {i}", "a note", "some text " * 50)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))

    out = recall("index", str(notes), env={"RECALL_HOME": str(tmp_path / "home"), "RECALL_MODEL": "hash"},
                 preexec=limit)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "file-size limit (`ulimit -f`" in lines[-1] and "ulimit -f unlimited" in lines[-1], out.stderr


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace injects the fault")
def test_a_disk_quota_met_by_sqlite_is_said_with_its_repair_and_damages_nothing(tmp_path):
    """Over a disk quota (EDQUOT), or out of space while SQLite grows its -shm file, SQLite says
    only "disk I/O error", and the command said "SQLite: disk I/O error (.../recall.db)": no cause,
    no repair (an outside tester's crash class 2)."""
    notes = tmp_path / "notes"
    for i in range(30):
        write_note(notes, f"n{i}", f"note {i}", f"about thing {i}", f"text {i} " * 50)
    env = {"RECALL_HOME": str(tmp_path / "home"), "RECALL_MODEL": "hash"}
    out = subprocess.run(["strace", "-f", "-o", os.devnull, "-e", "trace=pwrite64",
                          "-e", "inject=pwrite64:error=EDQUOT:when=20", sys.executable, "-m", "recall.cli", "index",
                          str(notes)], capture_output=True, text=True, env={**os.environ, **env}, timeout=300)
    if "ptrace" in out.stderr and "recall" not in out.stderr:
        pytest.skip(f"strace cannot trace here: {out.stderr[:200]}")
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert len(lines) == 1 and "over its quota" in lines[0] and "free some space" in lines[0], out.stderr
    assert "recall.db" in lines[0], out.stderr
    again = recall("index", str(notes), env=env)
    assert again.returncode == 0 and "added 30" in again.stdout, again.stdout + again.stderr
    assert recall("status", env=env).returncode == 0


def test_a_home_too_long_for_sqlite_is_said_with_its_repair(tmp_path):
    home = tmp_path / ("h" * 200) / ("o" * 200) / ("m" * 200)
    notes = tmp_path / "notes"
    write_note(notes, "n", "note", "a note", "text")
    out = recall("index", str(notes), env={"RECALL_HOME": str(home), "RECALL_MODEL": "hash"})
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "too long for SQLite" in out.stderr and "shorter path" in out.stderr, out.stderr


def test_an_address_space_limit_too_low_for_the_vector_index_is_said_not_a_crash(tmp_path):
    """Under `ulimit -v` a little above what Python and numpy take, loading FAISS (its BLAS reserves
    ~130 MB of address space per thread as it loads) crashed the process with a segmentation fault:
    no line, exit 139. Every limit from too low for the interpreter to enough for the command ends in
    an answer or one line that names the limit."""
    notes = tmp_path / "notes"
    write_note(notes, "n", "branch names", "how branches are named", "feature/<ticket>-<slug>")
    env = {"RECALL_HOME": str(tmp_path / "home"), "RECALL_MODEL": "hash"}
    assert recall("index", str(notes), env=env).returncode == 0
    for mb in range(200, 1001, 50):
        def limit(mb: int = mb) -> None:
            resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))

        out = recall("query", "how are branches named", env=env, preexec=limit)
        assert out.returncode in (0, 1), (mb, out.returncode, out.stderr[-1500:])
        if out.returncode == 1:
            assert "Traceback" not in out.stderr and "ulimit -v" in out.stderr, (mb, out.stderr[-1500:])


def test_a_home_deleted_while_recall_index_runs_is_said_not_reported_as_done(tmp_path):
    """`rm -rf $RECALL_HOME` during `recall index`: the command said "added 30 ... embedded N chunks",
    exit 0, though its store was unlinked under it and nothing of it was kept (an outside tester's
    crash class 4)."""
    notes, home = tmp_path / "notes", tmp_path / "home"
    for i in range(30):
        write_note(notes, f"n{i}", f"note {i}", f"about thing {i}", f"text {i} " * 50)
    home.mkdir()
    (home / "config.toml").write_text('model = "hash"\n[index]\ndebug_delay_ms = 200\n')
    proc = subprocess.Popen([sys.executable, "-m", "recall.cli", "index", str(notes)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "RECALL_HOME": str(home)})
    try:
        deadline = time.monotonic() + 120
        while not list(home.glob("indexing.*.json")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()
        shutil.rmtree(home)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1 and "Traceback" not in err, out + err
    lines = err.strip().splitlines()
    assert "deleted" in lines[-1] and str(home) in lines[-1] and "recall index" in lines[-1], out + err


@pytest.mark.process
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace injects the fault")
@pytest.mark.parametrize("nth", [5, 7])
def test_install_whose_output_meets_a_full_disk_in_its_check_says_it_as_an_output_error(tmp_path, recall_home, nth):
    """Stdout on a full disk during install's check (the daemon started, a question timed) printed
    "hook installed, but the check failed: [Errno 28] No space left on device": an OS error's raw
    words, said nowhere else that way (an outside tester's crash class 5)."""
    recall_home.mkdir(parents=True)
    (recall_home / "config.toml").write_text('model = "hash"\n')
    out_file = tmp_path / "out.txt"
    with out_file.open("w") as stdout:
        out = subprocess.run(["strace", "-o", os.devnull, "-P", str(out_file), "-e", "trace=write",
                              "-e", f"inject=write:error=ENOSPC:when={nth}+", sys.executable, "-m", "recall.cli",
                              "install"], stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                             env={**os.environ, "HOME": str(tmp_path)}, timeout=300)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert len(lines) == 1 and "[Errno" not in lines[0], out.stderr
    assert "could not write this command's output: No space left on device" in lines[0], out.stderr


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace injects the fault")
def test_running_out_of_file_descriptors_advises_a_limit_above_the_one_in_force(tmp_path):
    """Out of file descriptors (EMFILE) under a limit of 20,000, the line said "raise it (`ulimit -n
    4096`)": lower than the limit in force, and it named the file being opened, one of recall's own
    modules, as if that file were at fault (an outside tester's, stop 60)."""
    notes = tmp_path / "notes"
    for i in range(30):
        write_note(notes, f"n{i}", f"note {i}", f"about thing {i}", f"text {i} " * 50)
    env = {"RECALL_HOME": str(tmp_path / "home"), "RECALL_MODEL": "hash"}

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))

    out = subprocess.run(["strace", "-f", "-o", os.devnull, "-e", "trace=openat",
                          "-e", "inject=openat:error=EMFILE:when=300+", sys.executable, "-m", "recall.cli", "index",
                          str(notes)], capture_output=True, text=True, env={**os.environ, **env}, timeout=300,
                         preexec_fn=limit)
    if "ptrace" in out.stderr and "recall" not in out.stderr:
        pytest.skip(f"strace cannot trace here: {out.stderr[:200]}")
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "out of file descriptors" in lines[-1] and "`ulimit -n` is 8192" in lines[-1], out.stderr
    assert "ulimit -n 16384" in lines[-1] and "ulimit -n 4096" not in lines[-1], out.stderr
    assert "nothing is damaged" in lines[-1], out.stderr
    again = recall("index", str(notes), env=env)
    assert again.returncode == 0, again.stdout + again.stderr
