"""A writer killed between its write and its rename (SIGKILL, a power cut) left its temporary file
``.questions.jsonl.PID.tmp`` in the user's notes folder for good (an outside tester's crash class 3);
and the rewrite made a user's 0644 questions.jsonl 0600 without a word. The kill is injected with
strace at the rename of the folder's file, in a real `recall questions run` with a fake agent."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys

import pytest

from helpers.cli import run_cli
from helpers.fake_agent import fake_claude

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace injects the kill")

BY_HAND = '{"note": "kept-by-hand", "questions": ["written by hand?"]}\n'


def _traced(folder, env, home, *strace_args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["strace", "-f", *strace_args, sys.executable, "-m", "recall.cli", "questions", "run",
                           str(folder)], capture_output=True, text=True,
                          env={**os.environ, **env, "RECALL_HOME": str(home)}, timeout=300)


def _rename_of_questions_file(folder, tmp_path, env) -> int:
    """Which rename (counted in the process that makes it) puts a run's questions.jsonl in place."""
    dry, home, log = tmp_path / "dry" / "memory", tmp_path / "dry" / "home", tmp_path / "dry.strace"
    shutil.copytree(folder, dry)
    home.mkdir()
    (home / "config.toml").write_text('model = "hash"\n')
    out = _traced(dry, env, home, "-o", str(log), "-e", "trace=rename")
    if out.returncode != 0:
        pytest.skip(f"strace cannot trace here: {out.stderr[-300:]}")
    calls = [m.groups() for m in re.finditer(r'^(\d+) +rename\("[^"]*", "([^"]*)"', log.read_text(), re.M)]
    pid = next(p for p, target in calls if target == str(dry / "questions.jsonl"))
    return [target for p, target in calls if p == pid].index(str(dry / "questions.jsonl")) + 1


def test_a_temporary_file_a_killed_write_left_goes_with_the_next_write_and_the_files_mode_stays(
        folder, tmp_path, recall_home, hash_model):
    _record, env = fake_claude(tmp_path)
    (folder / "questions.jsonl").write_text(BY_HAND)
    (folder / "questions.jsonl").chmod(0o644)  # the user's, shared in their repository
    nth = _rename_of_questions_file(folder, tmp_path, env)
    recall_home.mkdir(parents=True, exist_ok=True)
    (recall_home / "config.toml").write_text('model = "hash"\n')
    killed = _traced(folder, env, recall_home, "-o", os.devnull, "-e", "trace=rename",
                     "-e", f"inject=rename:signal=KILL:when={nth}")
    assert killed.returncode != 0, killed.stdout + killed.stderr
    left = [n for n in os.listdir(folder) if re.fullmatch(r"\.questions\.jsonl\.\d+\.tmp", n)]
    assert left, os.listdir(folder)  # what the kill leaves
    (folder / ".questions.jsonl.1.tmp").write_text("a live process's (pid 1): not ours to remove\n")
    (folder / ".questions.jsonl.bak").write_text("the user's\n")
    again = run_cli("questions", "run", str(folder), env=env)
    assert again.returncode == 0, again.stderr
    names = set(os.listdir(folder))
    assert not names & set(left), names
    assert {".questions.jsonl.1.tmp", ".questions.jsonl.bak"} <= names
    assert stat.S_IMODE((folder / "questions.jsonl").stat().st_mode) == 0o644
    text = (folder / "questions.jsonl").read_text()
    assert text.startswith(BY_HAND) and "zq deploy-freeze" in text


def test_a_file_others_may_write_is_made_the_users_alone(folder, tmp_path, recall_home, hash_model):
    _record, env = fake_claude(tmp_path)
    (folder / "questions.jsonl").write_text(BY_HAND)
    (folder / "questions.jsonl").chmod(0o666)
    assert run_cli("questions", "run", str(folder), env=env).returncode == 0
    assert stat.S_IMODE((folder / "questions.jsonl").stat().st_mode) == 0o600
