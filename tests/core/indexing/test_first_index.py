"""A first index is useful before it ends (issue #22): a real ``recall index`` process,
slowed by ``[index] debug_delay_ms`` (the deterministic hash embedder is instant), watched
from outside through ``recall status`` and ``recall query``.

* notes are searchable as they are embedded, every note's text before any question;
* progress shows: the progress bar on a terminal, ``recall status`` while it runs;
* an index killed midway is reported as interrupted and resumed by the next
  ``recall index``, which embeds only what is missing.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from helpers.cli import run_cli, run_cli_process
from helpers.daemon import write_config
from helpers.notes import write_note

pytestmark = pytest.mark.process

NOTES = 160  # one chunk each: 5 batches of note text, then 5 of questions
WORDS = ("amber basalt cobalt dune ember fjord garnet harbor indigo jasper kelp lagoon marble nectar "
         "onyx pewter quartz russet sierra tundra umber velvet willow xenon yarrow zephyr").split()


def unique_words(i: int) -> str:
    return f"{WORDS[i % 26]}{i} {WORDS[(i * 7) % 26]}{i} {WORDS[(i * 11) % 26]}{i}"


def write_collection(folder: Path) -> None:
    folder.mkdir()
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(NOTES):
            (folder / f"note-{i:03d}.md").write_text(
                f"---\nname: Note {i}\ndescription: about {unique_words(i)}\ntype: project\n---\n\n"
                f"The {unique_words(i)} procedure, written down once.\n", encoding="utf-8")
            fh.write(json.dumps({"note": f"note-{i:03d}", "questions": [f"how do I run the {WORDS[i % 26]}{i} job?"]})
                     + "\n")


@pytest.fixture
def slow_home(recall_home, hash_model, tmp_path):
    """A home whose index embeds one batch per 0.4 s, publishing every 0.5 s."""
    write_config(recall_home, "\n[index]\ndebug_delay_ms = 400\npublish_every_s = 0.5\n")
    folder = tmp_path / "collection"
    write_collection(folder)
    return folder


def status() -> dict:
    return json.loads(run_cli("status", "--json", check=True).stdout)


def start_index(folder: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "recall.cli", "index", str(folder)],
                            env={**os.environ}, **kw)


def status_page() -> str:
    """The web page's status, in this process over the same home (as test_ui_pages does)."""
    from helpers.ui import page_client

    with page_client(8123) as c:
        return c.get("/status").text


def ranked_ids(text: str) -> list[str]:
    out = run_cli("query", "--all", "--json", text)
    return [h["id"] for h in json.loads(out.stdout)["ranked"]] if out.returncode == 0 else []


def test_notes_are_searchable_while_the_first_index_runs(slow_home):
    master, slave = pty.openpty()  # a terminal, so that the progress bar is drawn
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))  # 100 columns wide
    proc = start_index(slow_home, stdout=slave, stderr=slave)
    os.close(slave)
    seen: list[dict] = []
    found_mid_index, page = False, ""
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            st = status().get("indexing")
            if st and st["running"]:
                seen.append(st)
                if st["phase"] == "questions" and not page:
                    page = status_page()
                if st["searchable"] and not found_mid_index:
                    # The first notes' text is in the live index while the rest is embedded.
                    found_mid_index = ranked_ids(unique_words(0))[:1] == ["note-000"] \
                        and status().get("indexing", {}).get("running", False)
            time.sleep(0.1)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        output = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        os.close(master)
    text = output.decode("utf-8", "replace")
    # Progress: the bar on the terminal names the phases and counts passages.
    assert "notes:" in text and "questions:" in text and "passage" in text, text[-2000:]
    assert f"added {NOTES}" in text
    # recall status showed the index running: notes first, searchable as they were embedded.
    phases = [s["phase"] for s in seen]
    assert "notes" in phases and "questions" in phases
    assert phases.index("notes") < phases.index("questions")
    partly = [s for s in seen if s["phase"] == "notes" and 0 < s["searchable"] < s["notes"]]
    assert partly, seen
    assert all(s["searchable"] == s["notes"] == NOTES for s in seen if s["phase"] == "questions")
    assert found_mid_index
    assert "Index: indexing (questions: " in page and f"{NOTES:,} of {NOTES:,} notes searchable" in page
    # Once done, nothing is left to report, and every note is found.
    assert "indexing" not in status()
    assert ranked_ids(unique_words(NOTES - 1))[:1] == [f"note-{NOTES - 1:03d}"]


def test_a_killed_first_index_is_resumed_not_restarted(slow_home):
    proc = start_index(slow_home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            st = status().get("indexing")
            if st and st["phase"] == "notes" and st["embedded"] >= 64:
                break
            assert proc.poll() is None, "the index ended before it could be killed"
            time.sleep(0.05)
        else:
            pytest.fail("the index never reached its notes phase")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    # recall status says it was interrupted and how to resume, even when another process now
    # holds the killed index's pid (after a reboot, pids are reused): its start time tells them apart
    progress = next(Path(os.environ["RECALL_HOME"]).glob("indexing.*.json"))  # the killed run's own file
    data = json.loads(progress.read_text())
    assert isinstance(data["pid_started"], int)
    other = subprocess.Popen(["sleep", "60"])
    try:
        progress.write_text(json.dumps({**data, "pid": other.pid}))
        assert status()["indexing"]["running"] is False and "interrupted" in run_cli("status", check=True).stdout
    finally:
        other.kill()
        other.wait()
        progress.write_text(json.dumps(data))
    st = status()["indexing"]
    assert st["running"] is False and 0 < st["embedded"] < NOTES
    assert "interrupted" in run_cli("status", check=True).stdout
    assert "recall index` to resume" in run_cli("status", check=True).stdout
    assert "Index: interrupted in its notes phase" in status_page()
    chunks = status()["counts"]["chunks"]
    embedded_before = status()["counts"]["vectors"]
    assert 0 < embedded_before < chunks

    # The next run embeds only what was missing; nothing is embedded twice.
    again = run_cli_process("index", slow_home)
    assert again.returncode == 0, again.stderr
    assert f"added 0, changed 0, removed 0, unchanged {NOTES}" in again.stdout, again.stdout
    assert f"embedded {chunks - embedded_before} chunks" in again.stdout, again.stdout
    after = status()
    assert "indexing" not in after and after["counts"]["vectors"] == chunks
    assert ranked_ids(unique_words(NOTES - 1))[:1] == [f"note-{NOTES - 1:03d}"]


def test_an_index_interrupted_while_another_runs_is_still_resumed(recall_home, hash_model, tmp_path):
    """Two `recall index` at once (two terminals, two sessions' refresh), the first stopped
    half-way: the second overwrote the one progress file and deleted it when it ended, so the
    first folder's unread notes stayed out for good, unsaid (stop 47, tester U's 01)."""
    from recall.indexing.progress import process_start

    home = Path(os.environ["RECALL_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    first = subprocess.Popen(["sleep", "60"])  # stands in for the first index, running
    try:
        (home / f"indexing.{first.pid}.json").write_text(json.dumps({
            "pid": first.pid, "pid_started": process_start(first.pid), "phase": "notes", "embedded": 10,
            "to_embed": 500, "notes": 500, "searchable": 0, "started_at": time.time()}))
        notes = tmp_path / "other"
        write_note(notes, "deploy", "Deploy", "how we deploy", "blue green")
        assert run_cli("index", "-q", str(notes)).returncode == 0  # the second, to its end
    finally:
        first.kill()  # the first, stopped half-way
        first.wait()
    said = run_cli("status", check=True).stdout
    assert "interrupted" in said and "to resume" in said, said


def _kill_once_searchable(proc: subprocess.Popen, at_least: int = 1) -> int:
    """Kill ``proc`` (a slow ``recall index``) once ``at_least`` notes are searchable; how many were."""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            st = status().get("indexing")
            if st and st["running"] and st["searchable"] >= at_least:
                return st["searchable"]
            assert proc.poll() is None, "the index ended before it could be killed"
            time.sleep(0.05)
        pytest.fail("no note became searchable")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)


def test_a_resumed_index_says_what_is_searchable_and_that_it_resumes(slow_home):
    """While an interrupted index was resumed, `recall status` said none of the 124 notes found by
    a search were searchable, and that the index being resumed "resumes after this one" (an
    outside tester's AE02); of the run it killed, it gave counts that run never updated."""
    searchable = _kill_once_searchable(start_index(slow_home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    said = run_cli("status", check=True).stdout
    assert "interrupted in its notes phase" in said and "passages embedded" not in said, said
    proc = start_index(slow_home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            st = status().get("indexing")
            if st and st["running"]:
                break
            time.sleep(0.05)
        said = run_cli("status", check=True).stdout
        assert st["searchable"] >= searchable, st
        assert "it resumes the index that was interrupted" in said and "resumes after this one" not in said, said
    finally:
        assert proc.wait(timeout=120) == 0


def test_a_note_deleted_before_a_resumed_index_is_killed_again_is_not_handed_over(slow_home):
    """A first index killed after it published, a note deleted, and the resuming index killed
    too before its first publish: the live index kept handing the deleted note over, its text in
    the index's files, until some later index published (an outside tester's AE03). A removed or
    changed note leaves the live index before anything is embedded."""
    _kill_once_searchable(start_index(slow_home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), 3)
    assert ranked_ids(unique_words(0))[:1] == ["note-000"]
    (slow_home / "note-000.md").unlink()
    proc = start_index(slow_home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:  # killed as its embedding begins: before its first publish
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not ((st := status().get("indexing") or {}).get("running")
                                                   and st.get("phase") == "notes"):
            assert proc.poll() is None, "the resumed index ended before it embedded"
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert "note-000" not in ranked_ids(unique_words(0))
    home = Path(os.environ["RECALL_HOME"])
    current = next(home.glob("index/*/current"))
    assert unique_words(0).split()[0] not in (current.parent / current.read_text().strip() / "meta.json").read_text()


def test_an_index_refused_for_an_unknown_model_is_not_an_interrupted_one(recall_home, hash_model, tmp_path):
    """`recall index` refused at once for a model name it does not know left a progress file, and
    `recall status` then asked to resume an index that never started (an outside tester's AE04)."""
    notes = tmp_path / "notes"
    write_note(notes, "deploy", "Deploy", "how we deploy", "blue green")
    refused = run_cli("index", "-q", str(notes), env={"RECALL_MODEL": "bogusmodel"})
    assert refused.returncode == 1 and "unknown model" in refused.stderr
    said = run_cli("status", check=True).stdout
    assert "interrupted" not in said and "to resume" not in said, said
