"""What the README and `--help` promise, held to by each command (stop 48: an outside tester ran
every synopsis as written, W01-W10)."""

from __future__ import annotations

import json
import os
import re

import pytest

from helpers.cli import run_cli


def test_a_home_that_runs_through_a_file_names_the_file_and_a_repair_that_works(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    res = run_cli("status", env={"RECALL_HOME": str(blocker / "sub")})
    line = res.stderr.strip()
    assert res.returncode == 1 and len(line.splitlines()) == 1, line
    assert f"runs through {blocker}, which is a file" in line and f"mv {blocker} {blocker}.old" in line
    assert "chmod" not in line


def test_a_recall_config_that_names_no_file_is_said_by_status_and_config(recall_home, tmp_path):
    typo = tmp_path / "my-setings.toml"
    for args in (("status",), ("config",)):
        res = run_cli(*args, env={"RECALL_CONFIG": str(typo)})
        assert res.returncode == 0, res.stderr
        assert f"RECALL_CONFIG names {typo}, which does not exist" in res.stdout + res.stderr
    assert "does not exist" not in run_cli("status", env={"RECALL_CONFIG": os.devnull}).stdout


@pytest.mark.parametrize("args", [("query", "--repo", "x", "--all", "deploy"),
                                  ("search", "--repo", "x", "--all", "deploy"),
                                  ("query", "--repo", "", "deploy"), ("search", "--repo", " ", "deploy")])
def test_repo_and_all_are_alternatives_and_a_blank_repo_is_no_project(recall_home, args):
    res = run_cli(*args)
    assert res.returncode == 2 and "--repo" in res.stderr and "Traceback" not in res.stderr, res.stderr


@pytest.mark.parametrize("option", ["--reports", "--upload-dir"])
def test_the_page_refuses_a_folder_that_is_not_there(recall_home, tmp_path, option):
    extra = ["--allow-writes"] if option == "--upload-dir" else []
    res = run_cli("ui", "--no-open", *extra, option, str(tmp_path / "missing"))
    assert res.returncode == 2 and "does not exist" in res.stderr, res.stderr


def test_a_config_error_names_a_command_that_lists_every_key(recall_home):
    recall_home.mkdir(parents=True)
    (recall_home / "config.toml").write_text("[selector]\nmax_note = 3\n")
    res = run_cli("status")
    assert res.returncode == 1 and "`recall config --defaults` lists every key" in res.stderr, res.stderr
    listed = run_cli("config", "--defaults", env={"RECALL_CONFIG": os.devnull})
    assert listed.returncode == 0 and "target_silence = 0.9" in listed.stdout and "[selector]" in listed.stdout
    # its range beside each number, as --help says (an outside tester's AI08: none was printed)
    lines = listed.stdout.splitlines()
    assert any(line.startswith("hook_budget_ms = 300") and line.endswith("(from 1 to 60,000)") for line in lines)
    assert any(line.startswith("convert_timeout_s = 120") and line.endswith("# from 0.001 to 86,400") for line in lines)
    import tomllib

    assert tomllib.loads(listed.stdout)["daemon"]["hook_budget_ms"] == 300  # still the packaged file, valid TOML


def test_the_silence_target_has_one_range_in_the_file_and_on_the_command_line(recall_home, tmp_path):
    recall_home.mkdir(parents=True)
    (recall_home / "config.toml").write_text("[selector]\ntarget_silence = 0.05\n")
    res = run_cli("status")
    assert res.returncode == 1 and "target_silence must be a number from 0.5 to 1" in res.stderr, res.stderr
    (recall_home / "config.toml").unlink()
    res = run_cli("calibrate", "--target-silence", "0.05")
    assert res.returncode == 2 and "0.5<=x<=1" in res.stderr, res.stderr


def test_json_is_the_answer_the_agent_gets_unescaped(recall_home, hash_model, tmp_path):
    from helpers.notes import write_note

    notes = tmp_path / "notes"
    write_note(notes, "deploy", "Deploy", "how we deploy billing", "blue green deploys")
    assert run_cli("index", "-q", str(notes)).returncode == 0
    plain = json.loads(run_cli("search", "--json", "deploy billing").stdout)
    agent = json.loads(run_cli("search", "--for-agent", "deploy billing").stdout)
    assert set(plain) == set(agent) and plain["results"][0]["name"] == agent["results"][0]["name"] == "Deploy"


@pytest.mark.process
def test_serve_wait_zero_starts_the_daemon_and_returns(recall_home, hash_model):
    from helpers.daemon import daemon_pids, wait_for

    res = run_cli("serve", "--wait", "0")
    assert res.returncode == 0 and "starting in the background" in res.stdout, res.stderr
    try:
        assert wait_for(lambda: "running=yes" in run_cli("status").stdout, 120)
        said = run_cli("status").stdout  # read as a person reads it (a first-hour tester's, stop 58)
        assert re.search(r"started=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", said), said
        assert not re.search(r"\d\.\d{5,}", said), said  # no load_s=0.9928382090001833
    finally:
        run_cli("stop")
    assert wait_for(lambda: not daemon_pids(recall_home), 20)


@pytest.mark.process
def test_ctrl_c_on_the_page_is_one_line_and_130(recall_home, hash_model):
    """Ctrl-C on `recall ui` (and `recall mcp`) was click's "Aborted!" and exit 1 (stop 48, Z07)."""
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-m", "recall.cli", "ui", "--no-open"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,  # SIGINT not ignored, whatever this run inherited
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline()]
        while "http://127.0.0.1:" not in lines[-1] and lines[-1] and len(lines) < 10:
            lines.append(proc.stdout.readline())
        assert "http://127.0.0.1:" in lines[-1], lines
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        run_cli("stop")  # the daemon the page started
    assert proc.returncode == 130 and "interrupted" in err and "Aborted" not in err, (proc.returncode, err)
