"""The user's config file under faults an outside tester found: a link to nothing, a
``RECALL_CONFIG`` naming no file or given relative, a rewrite on a full disk, a file recall
cannot parse when it rewrites it. Each is one line with its repair, and nothing is lost."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from helpers.cli import run_cli
from helpers.daemon import HASH_CONFIG, MATCHING, Daemons, index_dirs, write_config
from recall.ipc import client

CONFIG = '# mine\nmodel = "hash"\n[selector]\nneg_weight = 0.25   # tuned by hand\n'


def one_line(out: subprocess.CompletedProcess) -> str:
    lines = out.stderr.strip().splitlines()
    assert out.returncode != 0 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    return lines[0]


@pytest.mark.parametrize("args", [("status",), ("query", "how do we deploy"), ("questions", "off")])
def test_a_config_that_links_to_nothing_is_said_not_silently_dropped(recall_home, tmp_path, args):
    recall_home.mkdir(parents=True)
    (recall_home / "config.toml").symlink_to(tmp_path / "dotfiles" / "config.toml")
    line = one_line(run_cli(*args))
    assert "is a link to" in line and "does not exist" in line and "fix the link" in line
    loop = tmp_path / "loop.toml"
    loop.symlink_to(loop)
    assert "loop of links" in one_line(run_cli(*args, env={"RECALL_CONFIG": str(loop)}))


def test_recall_config_in_a_folder_that_is_not_there_is_said(recall_home, tmp_path):
    line = one_line(run_cli("status", env={"RECALL_CONFIG": str(tmp_path / "no-such-folder" / "recall.toml")}))
    assert "RECALL_CONFIG names" in line and "does not exist" in line and "unset RECALL_CONFIG" in line
    # a file yet to be written, in a folder that is there (`recall-eval tune` writes it): the defaults
    assert run_cli("status", env={"RECALL_CONFIG": str(tmp_path / "recall.toml")}).returncode == 0


def _fake_agent(tmp_path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\nexit 3\n")
    (bin_dir / "claude").chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_consent_written_on_a_full_disk_leaves_the_config_whole_and_off(recall_home, tmp_path):
    recall_home.mkdir(parents=True)
    config = recall_home / "config.toml"
    config.write_text(CONFIG + "# " + "x" * 3000 + "\n")
    before = config.read_bytes()

    def full_disk() -> None:  # writes past 2 KB fail (EFBIG), as on a disk that is full
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    out = subprocess.run([sys.executable, "-m", "recall.cli", "questions", "on", "--agent", "claude"],
                         capture_output=True, text=True, env=_fake_agent(tmp_path), preexec_fn=full_disk,
                         timeout=120)
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
    assert config.read_bytes() == before  # not cut, and consent not turned on
    assert [p.name for p in recall_home.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("text", ["[a]\nx = 1\n[a]\ny = 2\n", "# caf\xe9\n"], ids=["duplicate-table", "latin-1"])
def test_consent_withdrawn_from_a_file_recall_cannot_read_is_one_line_and_the_file_kept(recall_home, text):
    recall_home.mkdir(parents=True)
    config = recall_home / "config.toml"
    config.write_bytes(text.encode("latin-1") if "\xe9" in text else text.encode("utf-8"))
    before = config.read_bytes()
    assert "not valid TOML" in one_line(run_cli("questions", "off"))
    assert config.read_bytes() == before


@pytest.mark.parametrize("bom", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be"])
def test_a_config_with_a_byte_order_mark_is_read_and_rewritten(recall_home, bom):
    """PowerShell 5.1's `Set-Content -Encoding UTF8` and Notepad write a byte-order mark: the
    config was refused "at line 1, column 1", where the user sees nothing wrong (stop 47, tester T's 12).
    UTF-16 without a mark is read too, as the README says (an outside tester's AI07)."""
    recall_home.mkdir(parents=True)
    config = recall_home / "config.toml"
    config.write_bytes("[daemon]\nhook_budget_ms = 400\n".encode(bom))
    shown = run_cli("config")
    assert shown.returncode == 0 and "daemon.hook_budget_ms = 400" in shown.stdout, shown.stderr
    assert run_cli("questions", "off").returncode == 0
    assert "hook_budget_ms = 400" in run_cli("config").stdout


@pytest.mark.process
def test_a_relative_recall_config_is_the_daemons_config_too(recall_home, sample_notes, tmp_path):
    write_config(recall_home)
    (recall_home / "config.toml").write_text('model = "hash"\n' + HASH_CONFIG)
    index_dirs(sample_notes)
    work = tmp_path / "work"
    work.mkdir()
    (work / "quiet.toml").write_text('model = "hash"\n' + HASH_CONFIG.replace("top_floor = 0.35", "top_floor = 0.9999"))
    daemons = Daemons(recall_home, tmp_path)
    try:
        served = subprocess.run([sys.executable, "-m", "recall.cli", "serve"], cwd=work, capture_output=True,
                                text=True, env={**os.environ, "RECALL_CONFIG": "quiet.toml"}, timeout=120)
        assert served.returncode == 0, served.stderr
        reply = client.request({"cmd": "query", "prompt": MATCHING, "cwd": "/"}, timeout=10.0)
        assert reply["ok"] and reply["ranked"] and reply["decision"]["chosen"] == []
    finally:
        daemons.kill_all()


@pytest.mark.parametrize("args", [("config", "--path"), ("--help",)])
def test_output_that_cannot_be_written_is_not_blamed_on_recall_home(recall_home, args):
    with open("/dev/full", "w") as full:
        out = subprocess.run([sys.executable, "-m", "recall.cli", *args], stdout=full, stderr=subprocess.PIPE,
                             text=True, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "could not write this command's output" in out.stderr and "RECALL_HOME" not in out.stderr


def test_a_table_for_a_model_not_in_use_is_said_with_the_id_meant(recall_home):
    recall_home.mkdir(parents=True)
    (recall_home / "config.toml").write_text(
        'model = "usem3"\n[thresholds."google/universal-sentence-encoder-multilingual3"]\ntop_floor = 0.9\n'
        '[thresholds."intfloat/multilingual-e5-small"]\ntop_floor = 0.8\n')
    out = run_cli("config")
    assert out.returncode == 0, out.stderr
    notes = out.stderr.strip().splitlines()
    assert len(notes) == 2 and all(line.startswith("note: [thresholds.") for line in notes)
    assert 'did you mean [thresholds."google/universal-sentence-encoder-multilingual-3"]?' in notes[0]
    assert "applies when that model is `model`" in notes[1]


def test_the_config_path_is_printed_as_it_is_for_scripts(tmp_path, monkeypatch):
    """Everything the CLI prints is masked; a RECALL_HOME whose folder name reads as a random key
    made `recall config --path` print `[REDACTED].toml`, which a script cannot use."""
    home = tmp_path / "Xk9fQ2LmZp8RtV3wB7nCq4Ys"
    monkeypatch.setenv("RECALL_HOME", str(home))
    out = run_cli("config", "--path")
    assert out.returncode == 0 and out.stdout.strip() == str(home / "config.toml"), out.stdout
