"""Limits of the system a command meets, each said as itself with its repair: a file-size limit
(SQLite says only "disk I/O error"), a home whose path SQLite cannot open (it says only "unable
to open database file"). An outside tester got those bare words, naming neither."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

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


def test_a_home_too_long_for_sqlite_is_said_with_its_repair(tmp_path):
    home = tmp_path / ("h" * 200) / ("o" * 200) / ("m" * 200)
    notes = tmp_path / "notes"
    write_note(notes, "n", "note", "a note", "text")
    out = recall("index", str(notes), env={"RECALL_HOME": str(home), "RECALL_MODEL": "hash"})
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "too long for SQLite" in out.stderr and "shorter path" in out.stderr, out.stderr
