"""A switch of model (``model`` changed in config.toml) re-embeds and re-calibrates by itself.

Real daemons in subprocesses over a real socket, real SQLite and FAISS files; the two
models are the hash embedder at two sizes (hash-256 and hash-64: two model ids whose
vectors and thresholds do not mix), so the test runs without a real model.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from helpers.cli import run_cli
from helpers.daemon import HASH_CONFIG, MATCHING, Daemons, index_dirs, wait_for, write_config
from recall.ipc import client

MATCHING_ID = "feature-flags-unleash"


def query(prompt: str) -> dict:
    return client.request({"cmd": "query", "prompt": prompt, "cwd": "/"}, timeout=10.0)


def use_model(home, spec: str) -> None:
    write_config(home)
    (home / "config.toml").write_text(f'model = "{spec}"\n' + HASH_CONFIG, encoding="utf-8")


@pytest.fixture
def on_hash(recall_home, sample_notes, tmp_path):
    """The sample indexed with the hash model; the daemons a test starts, killed after it."""
    use_model(recall_home, "hash")
    index_dirs(sample_notes)
    daemons = Daemons(recall_home, tmp_path)
    yield daemons
    daemons.kill_all()


@pytest.mark.process
def test_a_new_model_in_config_is_embedded_and_calibrated_by_the_daemon(recall_home, on_hash):
    first = on_hash.start()
    before = query(MATCHING)
    assert before["model"] == "hash-256" and before["ranked"][0]["id"] == MATCHING_ID
    assert "restarting" not in before

    use_model(recall_home, "hash-64")
    # `recall status` says the notes are not indexed with the new model yet
    said = run_cli("status", check=True).stdout
    assert "last indexed with hash-256, not with hash-64" in said
    asked = run_cli("query", MATCHING)  # no index of this model yet: nothing, and why
    assert asked.returncode == 0 and "`recall index` brings this one up to date" in asked.stderr, asked.stderr

    # The running daemon answers with its model, then stops: the next question starts one with hash-64.
    reply = query(MATCHING)
    assert reply["model"] == "hash-256" and reply["restarting"] == "hash-64"
    assert wait_for(lambda: first.poll() is not None, 10), "the old daemon did not stop"

    second = on_hash.start()
    assert client.request({"cmd": "ping"})["model"] == "hash-64"

    def switched() -> dict | None:
        st = client.request({"cmd": "status"})["model_switch"]
        return st if st and st["stage"] == "done" else None

    assert wait_for(switched, 30), client.request({"cmd": "status"})
    done = switched()
    assert done["from"] == "hash-256" and done["to"] == "hash-64"
    assert done["embedded"] == done["chunks"] > 0  # every chunk again, with progress counted
    after = query(MATCHING)
    assert after["model"] == "hash-64" and after["ranked"][0]["id"] == MATCHING_ID
    assert "restarting" not in after and second.poll() is None

    # its own index and its own fitted thresholds, beside the old model's
    from recall.api import Recall

    app = Recall()
    assert {m for m, *_ in app.store.index_runs()} == {"hash-256", "hash-64"}
    assert app.switched_from() is None
    app.store.close()
    calibrated = tomllib.loads((recall_home / "calibration.toml").read_text(encoding="utf-8"))
    assert "hash-64" in calibrated["thresholds"]
    log = (recall_home / "logs" / "daemon.log").read_text(encoding="utf-8")
    assert "model switch" in log and "model switched" in log
    assert "model_switch: the notes" not in run_cli("status", check=True).stdout


def test_nothing_to_switch_before_the_first_index_or_with_the_same_model(recall_home, sample_notes):
    from recall.api import Recall

    use_model(recall_home, "hash")
    app = Recall()
    assert app.switched_from() is None  # nothing indexed yet: the first index is not a switch
    app.store.close()
    index_dirs(sample_notes)
    app = Recall()
    assert app.switched_from() is None
    app.store.close()
    use_model(recall_home, "hash-64")
    app = Recall()
    assert app.switched_from() == "hash-256"
    app.store.close()


@pytest.mark.process
def test_an_index_stopped_half_way_is_finished_by_the_next_daemon(recall_home, on_hash):
    """An outside tester stopped a model switch after its first generation was published: every
    later daemon served that half-built index (no questions, the packaged thresholds) for as long
    as it ran. A daemon now finishes an index it finds interrupted."""
    import json
    import sqlite3
    import subprocess
    import sys

    from recall.indexing.progress import FILE, read_progress

    # What a `recall index` killed in its questions phase leaves: vectors missing, its progress file.
    with sqlite3.connect(recall_home / "recall.db") as db:
        gone = db.execute("DELETE FROM vectors WHERE rowid IN "
                          "(SELECT rowid FROM vectors ORDER BY rowid DESC LIMIT 40)").rowcount
    assert gone == 40
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (recall_home / FILE).write_text(json.dumps({"pid": int(dead.stdout), "phase": "questions", "embedded": 10,
                                                "to_embed": 50, "notes": 10, "searchable": 10, "started_at": 0}))
    assert read_progress(recall_home)["running"] is False
    on_hash.start()

    def finished() -> dict | None:
        st = client.request({"cmd": "status"})["model_switch"]
        return st if st and st["stage"] == "done" else None

    assert wait_for(finished, 30), client.request({"cmd": "status"})
    assert finished()["from"] == "an interrupted index" and finished()["embedded"] == 40
    assert read_progress(recall_home) is None
    assert "to resume" not in run_cli("status", check=True).stdout


def test_a_switch_is_logged_before_status_says_it_is_done(recall_home, sample_notes, monkeypatch):
    """The daemon's status said "done" a moment before the log said "model switched": a test that
    waited for "done" and then read the log could find no line (found reading
    test_a_new_model_in_config_is_embedded_and_calibrated_by_the_daemon). Each line is written
    before the stage it tells of is shown, as "ready" is."""
    from recall.api import Recall
    from recall.config.load import load_config
    from recall.daemon import lifecycle
    from recall.daemon.state import DaemonState
    from recall.embedding.models import get_embedder

    use_model(recall_home, "hash")
    index_dirs(sample_notes)
    config = load_config()
    state = DaemonState(model_id="hash-256", transport="unix", idle_exit_s=60, lock_fd=None)
    app = Recall(config=config, embedder=get_embedder(config.model))
    shown_when_logged: list[str] = []

    def logged(event: str, **fields) -> None:
        if event == "model switched":
            shown_when_logged.append(str((state.model_switch or {}).get("stage")))

    monkeypatch.setattr(lifecycle, "log_event", logged)
    try:
        lifecycle.switch_model(state, app, config, "a test")
    finally:
        app.store.close()
    assert state.model_switch is not None and state.model_switch["stage"] == "done"
    assert shown_when_logged and "done" not in shown_when_logged, shown_when_logged


@pytest.mark.process
def test_any_setting_changed_in_config_reaches_the_running_daemon(recall_home, on_hash):
    """An outside tester raised a threshold so that nothing would be handed over: `recall
    query` obeyed, the running daemon (the hook's) went on injecting until it ended."""
    first = on_hash.start()
    before = query(MATCHING)
    assert before["decision"]["chosen"] and "restarting" not in before
    assert "restarting" not in query(MATCHING)  # nothing changed: it stays

    config = recall_home / "config.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("top_floor = 0.35", "top_floor = 0.9999"),
                      encoding="utf-8")
    reply = query(MATCHING)  # the first question after the edit is answered with it, by the same daemon
    assert reply["decision"]["chosen"] == [] and "restarting" not in reply and first.poll() is None

    # a setting the running daemon cannot take in place (its idle timeout): it restarts after answering
    config.write_text(config.read_text(encoding="utf-8") + "\n[daemon]\nidle_exit_hours = 2\n",
                      encoding="utf-8")
    assert query(MATCHING)["restarting"] == "hash-256"
    assert wait_for(lambda: first.poll() is not None, 10), "the old daemon did not stop"


def _ids(text: str) -> list[str]:
    from recall.api import Recall
    from recall.ranking.scope import Scope

    app = Recall()
    try:
        return [h.note["id"] for h in app.query(text, Scope(everything=True), search_short=True).hits]
    finally:
        app.store.close()


GONE = "feature-flags-unleash"


@pytest.mark.process
def test_a_switch_back_to_an_earlier_model_reads_the_notes_changed_since(recall_home, on_hash, sample_notes):
    """An outside tester switched to another model, deleted a note, indexed, and switched
    back: the first model's old index handed the deleted note over, and nothing said so."""
    use_model(recall_home, "hash-64")
    index_dirs(sample_notes)
    (sample_notes / f"{GONE}.md").unlink()
    index_dirs(sample_notes)
    use_model(recall_home, "hash")
    said = run_cli("status", check=True).stdout
    assert "last indexed with hash-64, not with hash-256" in said, said
    asked = run_cli("query", MATCHING)  # before anything is indexed again: nothing, and why
    assert asked.returncode == 0 and GONE not in asked.stdout and "`recall index`" in asked.stderr, asked.stderr
    on_hash.start()

    def finished() -> dict | None:
        st = client.request({"cmd": "status"})["model_switch"]
        return st if st and st["stage"] == "done" else None

    assert wait_for(finished, 30), client.request({"cmd": "status"})
    assert GONE not in [h["id"] for h in query(MATCHING)["ranked"]]
    assert GONE not in _ids(MATCHING)


def test_an_interrupted_index_is_resumed_from_the_folders_as_they_are_now(recall_home, sample_notes):
    """An outside tester killed `recall index` half-way, deleted a note and ran the `recall
    index` that `recall status` named: it embedded the old snapshot, and the deleted note
    was handed over from then on."""
    import json
    import subprocess
    import sys

    from recall.indexing.progress import FILE

    use_model(recall_home, "hash")
    index_dirs(sample_notes)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (recall_home / FILE).write_text(json.dumps({"pid": int(dead.stdout), "phase": "notes", "embedded": 10,
                                                "to_embed": 50, "notes": 10, "searchable": 10, "started_at": 0}))
    assert "to resume" in run_cli("status", check=True).stdout
    (sample_notes / f"{GONE}.md").unlink()
    elsewhere = sample_notes.parent / "elsewhere"
    elsewhere.mkdir()
    out = run_cli("index", "--no-conversations", cwd=elsewhere)
    assert out.returncode == 0 and "removed 1" in out.stdout, out.stdout + out.stderr
    assert GONE not in _ids(MATCHING) and "to resume" not in run_cli("status", check=True).stdout


def test_a_folder_that_is_gone_takes_its_notes_with_it_and_says_so(recall_home, sample_notes, tmp_path):
    use_model(recall_home, "hash")
    other = tmp_path / "other"
    other.mkdir()
    (other / "one.md").write_text("---\nname: One\ndescription: a note\n---\nbody\n", encoding="utf-8")
    index_dirs(sample_notes, other)
    assert GONE in _ids(MATCHING)
    import shutil

    shutil.rmtree(sample_notes)
    for args in (("index", str(other)), ("index", "--rebuild")):
        out = run_cli(*args)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        if args[1] != "--rebuild":
            assert f"{sample_notes}: the folder is gone" in out.stderr and "removed 0," not in out.stdout, out.stderr
    assert GONE not in _ids(MATCHING) and "one" in _ids("One a note body")
    missing = run_cli("index", str(sample_notes))
    assert missing.returncode != 0 and "no such folder" in missing.stderr, missing.stderr
    assert "`recall index`" in missing.stderr


def _notes_count() -> int:
    from recall.api import Recall

    app = Recall()
    try:
        return app.store.counts()["notes"]
    finally:
        app.store.close()


def test_a_folder_and_its_subfolder_hold_each_note_once_whichever_is_indexed_first(recall_home, sample_notes):
    """An outside tester indexed ~/notes, then ~/notes/work: the subfolder's notes were stored
    twice, and one deleted and indexed through the subfolder was still handed over."""
    use_model(recall_home, "hash")
    work = sample_notes / "work"
    work.mkdir()
    (sample_notes / f"{GONE}.md").rename(work / f"{GONE}.md")
    n = len(list(sample_notes.rglob("*.md")))
    import shutil

    for first, second in ((sample_notes, work), (work, sample_notes)):
        shutil.rmtree(recall_home)
        use_model(recall_home, "hash")
        assert run_cli("index", str(first)).returncode == 0
        out = run_cli("index", str(second))
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        assert f"inside {sample_notes}" in out.stderr, out.stderr
        assert _notes_count() == n and _ids(MATCHING).count(GONE) == 1
    (work / f"{GONE}.md").unlink()
    assert run_cli("index", str(work)).returncode == 0
    assert GONE not in _ids(MATCHING) and _notes_count() == n - 1


@pytest.mark.process
def test_a_daemon_whose_index_another_model_overtook_catches_up_by_itself(recall_home, on_hash, sample_notes,
                                                                          monkeypatch):
    """`RECALL_MODEL=other recall index` once, a note deleted before it: the running daemon's
    index is older than the notes. It answers nothing (not the deleted note), and brings its
    index up to date by itself instead of staying silent until someone runs `recall index`."""
    on_hash.start()
    assert query(MATCHING)["ranked"][0]["id"] == MATCHING_ID
    (sample_notes / f"{GONE}.md").unlink()
    monkeypatch.setenv("RECALL_MODEL", "hash-64")
    index_dirs(sample_notes)
    monkeypatch.delenv("RECALL_MODEL")
    first = query(MATCHING)
    assert first["model"] == "hash-256" and GONE not in [h["id"] for h in first["ranked"]]

    def caught_up() -> bool:
        ranked = query(MATCHING)["ranked"]
        return bool(ranked) and GONE not in [h["id"] for h in ranked]

    assert wait_for(caught_up, 30), client.request({"cmd": "status"})


def test_an_index_is_the_newest_whatever_the_clock_said_when_another_model_was_indexed(recall_home, on_hash,
                                                                                       sample_notes):
    """A clock three hours ahead while another model indexed (a dual-boot clock, a VM restored
    from a snapshot), then set right: the model in use, indexed again, still counted as older
    than the other, answered nothing and said to run `recall index`, which changed nothing, for
    three hours (stop 47, tester T's 02)."""
    import os
    import time

    use_model(recall_home, "hash-64")
    index_dirs(sample_notes)
    ahead = time.time() + 3 * 3600
    other = recall_home / "index" / "hash-64" / "current"
    os.utime(other, (ahead, ahead))
    import sqlite3

    with sqlite3.connect(recall_home / "recall.db") as db:
        db.execute("UPDATE index_runs SET built_at = ? WHERE model_id = 'hash-64'", (ahead,))
    use_model(recall_home, "hash")
    index_dirs(sample_notes)
    assert "last indexed with" not in run_cli("status", check=True).stdout
    asked = run_cli("query", MATCHING)
    assert asked.returncode == 0 and "`recall index`" not in asked.stderr and "Unleash" in asked.stdout, asked.stderr


def test_a_folder_named_through_a_link_that_now_leads_elsewhere_is_replaced(recall_home, tmp_path):
    """An outside tester indexed `notes -> v1`, re-pointed it to v2 and indexed `notes` again:
    v1's notes stayed beside v2's, and the old version's near tie kept the hook silent (AJ06)."""
    from recall.api import Recall

    use_model(recall_home, "hash")
    for version, word in (("v1", "zebra"), ("v2", "bison")):
        folder = tmp_path / version
        folder.mkdir()
        (folder / "pg.md").write_text(f"---\nname: pg migrations\ndescription: codeword {word}\ntype: feedback\n---\n\n"
                                      f"never edit an applied migration, {word}\n", encoding="utf-8")
    link = tmp_path / "notes"
    link.symlink_to(tmp_path / "v1")
    assert run_cli("index", str(link)).returncode == 0
    link.unlink()
    link.symlink_to(tmp_path / "v2")
    out = run_cli("index", str(link))
    assert out.returncode == 0 and "now leads to" in out.stderr and "were dropped" in out.stderr, out.stderr
    app = Recall()
    try:
        assert [Path(root).name for _id, _kind, root, _p in app.store.sources()] == ["v2"]
        assert _notes_count() == 1
    finally:
        app.store.close()
    assert run_cli("index", str(tmp_path / "v1")).returncode == 0  # named on its own: kept beside
    assert _notes_count() == 2
