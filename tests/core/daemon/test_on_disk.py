"""What recall hands over or shows exists on disk as shown, whatever the watcher's state (off, the
default, here): an outside tester's note deleted after `recall index` was handed over by the hook,
with its path, a minute later, and listed by `recall search`, `recall query` and the MCP tools
until the next index; an edited one kept its old headline; `recall status` said notes=3 with no
sign the index was behind the disk, and never whether the daemon's watcher was on. Run as a user
runs them: a real daemon, the hook and the MCP server as processes of their own."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from helpers import mcp_server
from helpers.cli import run_cli
from helpers.daemon import wait_for
from helpers.env import env_with
from helpers.notes import write_note
from helpers.paths import PY

CONFIG = """model = "hash"
[sources]
conversations = false
[selector]
calibrate = false
[thresholds."hash-256"]
gap_floor = 0.0
top_floor = 0.0
full_gap = 0.11
full_margin = 0.05
"""
ASKED = "description 2 body of note 2 tok2"


@pytest.fixture
def notes(recall_home, hash_model, tmp_path):
    """Three notes indexed by `recall index DIR`; the second is the one ``ASKED`` finds."""
    recall_home.mkdir(parents=True, exist_ok=True)
    (recall_home / "config.toml").write_text(CONFIG, encoding="utf-8")
    folder = tmp_path / "notes"
    for i in (1, 2, 3):
        write_note(folder, f"n{i}", f"note{i}", f"description {i}", f"body of note {i} tok{i}")
    run_cli("index", "-q", folder, check=True)
    time.sleep(0.05)  # a file's time is the kernel's coarse clock: edits below come after the index's
    return folder


def hook(prompt: str) -> str:
    """What the hook printed for a message (no session: nothing is held back as a repeat)."""
    event = {"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": "/tmp"}
    proc = subprocess.run([PY, "-P", "-m", "recall.agents.hook"], input=json.dumps(event).encode(),
                          capture_output=True, env=env_with(), timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode()


def mcp_search(cwd, prompt: str) -> str:
    """The MCP server's ``recall_search`` answer, as text."""
    proc = mcp_server.start(cwd, subprocess.PIPE, subprocess.PIPE)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(mcp_server.HELLO + mcp_server.call(1, "recall_search", {"query": prompt, "k": 5}))
        proc.stdin.flush()
        replies = mcp_server.read_replies(proc.stdout.fileno(), 2, 60)
    finally:
        proc.kill()
        proc.wait(10)
    answer = [r for r in replies if r.get("id") == 1]
    assert answer, replies
    return json.dumps(answer[0])


def notes_indexed() -> int:
    return json.loads(run_cli("status", "--json", check=True).stdout)["counts"]["notes"]


@pytest.mark.process
def test_a_deleted_note_is_never_handed_over_nor_listed_and_leaves_the_index_by_itself(notes, daemons, tmp_path):
    daemons.start()
    assert wait_for(lambda: "note2" in hook(ASKED), 20)  # within the hook's budget on a busy machine
    (notes / "n2.md").unlink()
    handed = hook(ASKED)
    assert "note2" not in handed and "n2.md" not in handed, handed
    for args in (("query", "--json", ASKED), ("query", ASKED), ("search", "--json", ASKED)):
        shown = run_cli(*args, check=True)
        assert "note2" not in shown.stdout and "n2.md" not in shown.stdout, (args, shown.stdout)
    found = mcp_search(tmp_path, ASKED)
    assert "note1" in found or "note3" in found, found  # it answered
    assert "note2" not in found and "n2.md" not in found, found
    # the daemon indexed the folder again by itself (the watcher is off): not only hidden, gone
    assert wait_for(lambda: notes_indexed() == 2, 30)


@pytest.mark.process
def test_an_edited_note_is_handed_over_with_its_new_headline_by_the_next_messages(notes, daemons):
    daemons.start()
    write_note(notes, "n2", "note2 renamed", "description 2 edited", "body of note 2 tok2")
    hook(ASKED)  # handed over as indexed (if within the budget): its folder is indexed again behind this answer
    assert wait_for(lambda: "note2 renamed" in hook(ASKED), 30)


@pytest.mark.process
def test_status_says_notes_changed_since_the_last_index_with_the_repair_and_the_daemons_watcher(notes, daemons):
    assert "notes_on_disk" not in run_cli("status", check=True).stdout
    (notes / "n2.md").unlink()
    write_note(notes, "n1", "note1", "description 1 edited", "body of note 1 tok1")
    write_note(notes, "n4", "note4", "description 4", "body of note 4 tok4")
    lines = run_cli("status", check=True).stdout.splitlines()
    behind = [line for line in lines if line.startswith("notes_on_disk:")]
    assert behind, lines
    assert "1 deleted, 1 changed, 1 new" in behind[0] and f"`recall index {notes}`" in behind[0], behind
    assert "notes=3" in "\n".join(lines)  # what is indexed, still said as it is
    run_cli("index", "-q", notes, check=True)
    assert "notes_on_disk" not in run_cli("status", check=True).stdout
    daemons.start()
    daemon = [line for line in run_cli("status", check=True).stdout.splitlines() if line.startswith("daemon:")]
    assert daemon and "watcher=off" in daemon[0], daemon
