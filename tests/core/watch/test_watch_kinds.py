"""One note file, one copy in the index, whatever kinds its folders were indexed under, and the
daemon's watcher keeps that copy in step with the disk (an outside tester's repro1: a folder
indexed as `dir` and as `rule` was kept up to date under one kind only; the other copy handed
over a deleted note and the old text of an edited one, and `recall status` counted each note
twice). And a watched link pointed elsewhere is followed by the daemon's watcher too (repro2)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from helpers.cli import run_cli
from helpers.daemon import wait_for, write_config
from helpers.notes import write_note

pytestmark = pytest.mark.process

WATCHING = "[watch]\nenabled = true\ndebounce_ms = 100\n[sources]\nconversations = false\n"
TOKEN = "quorvantile"


def _found(query: str = f"{TOKEN} note") -> list[dict]:
    out = run_cli("search", "--all", "--json", "-k", "20", query)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["results"]


def _held(home: Path) -> list[tuple[str, str]]:
    """(kind, path) of every note row the store holds: a copy is a row, shown or not."""
    import sqlite3

    db = sqlite3.connect(home / "recall.db")
    try:
        return sorted(db.execute("SELECT s.kind, n.path FROM notes n JOIN sources s ON s.id = n.source_id"))
    finally:
        db.close()


def _notes(folder: Path, n: int = 3) -> None:
    for i in range(1, n + 1):
        write_note(folder, f"n{i}", f"{TOKEN} note {i}", f"old description {i}", f"body of note {i}")


def _counted() -> int:
    return json.loads(run_cli("status", "--json").stdout)["counts"]["notes"]


def _edit_and_delete(folder: Path) -> None:
    (folder / "n2.md").unlink()
    write_note(folder, "n1", f"{TOKEN} note 1", "NEW description 1", "body of note 1")


def _in_step(home: Path, folder: Path) -> bool:
    held = _held(home)
    found = {h["id"]: h["description"] for h in _found()}
    return (len(held) == 2 and found == {"n1": "NEW description 1", "n3": "old description 3"}
            and sorted(p for _k, p in held) == [str(folder / "n1.md"), str(folder / "n3.md")])


def test_a_folder_indexed_as_rule_then_as_dir_is_one_copy_the_watcher_keeps_in_step(tmp_path, recall_home, daemons):
    write_config(recall_home, WATCHING)
    notes = tmp_path / "notes"
    _notes(notes)
    assert run_cli("index", "-q", "--kind", "rule", str(notes)).returncode == 0
    out = run_cli("index", "-q", str(notes))  # no --kind: the folder is read again as what it is
    assert out.returncode == 0, out.stderr
    assert "indexed as rule" in out.stderr, out.stderr
    assert [k for k, _p in _held(recall_home)] == ["rule"] * 3
    assert _counted() == 3
    daemons.start()
    _edit_and_delete(notes)
    assert wait_for(lambda: _in_step(recall_home, notes), 20), (_held(recall_home), _found())
    assert _counted() == 2


def test_a_kind_given_with_kind_moves_the_folder_to_it(tmp_path, recall_home, hash_model):
    notes = tmp_path / "notes"
    _notes(notes)
    assert run_cli("index", "-q", str(notes)).returncode == 0
    out = run_cli("index", "-q", "--kind", "rule", str(notes))
    assert out.returncode == 0 and "now indexed as rule" in out.stderr, out.stderr
    assert [k for k, _p in _held(recall_home)] == ["rule"] * 3
    assert {h["kind"] for h in _found()} == {"rule"}


def test_a_subfolder_indexed_under_another_kind_holds_its_notes_once(tmp_path, recall_home, daemons):
    """A parent as `dir`, a subfolder as `rule` (either order): the subfolder's notes are the
    rule's alone, and a delete there leaves the index."""
    write_config(recall_home, WATCHING)
    base = tmp_path / "base"
    _notes(base / "rules")
    write_note(base, "top", f"{TOKEN} note top", "the parent's own", "body")
    assert run_cli("index", "-q", str(base)).returncode == 0
    assert run_cli("index", "-q", "--kind", "rule", str(base / "rules")).returncode == 0
    expected = [("dir", str(base / "top.md"))] + [("rule", str(base / "rules" / f"n{i}.md")) for i in (1, 2, 3)]
    assert _held(recall_home) == expected
    assert run_cli("index", "-q", str(base)).returncode == 0  # the parent again: still once
    assert _held(recall_home) == expected
    assert _counted() == 4
    daemons.start()
    _edit_and_delete(base / "rules")
    assert wait_for(lambda: len(_held(recall_home)) == 3 and {h["id"]: h["description"] for h in _found()}
                    .get("n1") == "NEW description 1" and "n2" not in {h["id"] for h in _found()}, 20), \
        (_held(recall_home), _found())
    assert [k for k, _p in _held(recall_home)] == ["dir", "rule", "rule"]


def _held_twice(recall_home: Path, folder: Path) -> None:
    """A home from before: the folder held under `rule` and under `dir` (written through the
    write path itself, as the older `recall index` did)."""
    from recall.api import Recall
    from recall.indexing.indexer import SourceSpec

    assert run_cli("index", "-q", "--kind", "rule", str(folder)).returncode == 0
    app = Recall(home=recall_home)
    try:
        indexer = app.indexer()
        indexer.sync_source(SourceSpec("dir", folder))
        indexer.rebuild()
    finally:
        app.close()
    assert len(_held(recall_home)) == 6


@pytest.mark.parametrize("by", ["recall index", "the daemon"])
def test_a_home_holding_a_folder_twice_is_repaired(tmp_path, recall_home, daemons, by):
    write_config(recall_home, WATCHING)
    notes = tmp_path / "notes"
    _notes(notes)
    _held_twice(recall_home, notes)
    if by == "recall index":
        assert run_cli("index", "-q", cwd=tmp_path).returncode == 0
        assert [k for k, _p in _held(recall_home)] == ["rule"] * 3
    else:
        daemons.start()
        assert wait_for(lambda: len(_held(recall_home)) == 3, 20), _held(recall_home)
        _edit_and_delete(notes)
        assert wait_for(lambda: _in_step(recall_home, notes), 20), (_held(recall_home), _found())
    assert _counted() == len(_held(recall_home))


def test_the_daemon_follows_an_indexed_link_pointed_elsewhere(tmp_path, recall_home, daemons):
    """`ln -s A notes; recall index notes`, the daemon watching, then `ln -sfn B notes`: B's note
    was never indexed, and A's stayed, edits and all (an outside tester's repro2)."""
    write_config(recall_home, WATCHING)
    a, b, link = tmp_path / "A", tmp_path / "B", tmp_path / "notes"
    write_note(a, "x", f"{TOKEN} note A", "note in folder A", "body A")
    write_note(b, "x", f"{TOKEN} note B", "note in folder B", "body B")
    link.symlink_to(a)
    assert run_cli("index", "-q", str(link)).returncode == 0
    daemons.start()
    tmp_link = tmp_path / "notes.tmp"
    tmp_link.symlink_to(b)
    os.replace(tmp_link, link)  # `ln -sfn B notes`
    time.sleep(0.5)
    write_note(a, "x", f"{TOKEN} note A", "A EDITED after the link left it", "body A")
    assert wait_for(lambda: [p for _k, p in _held(recall_home)] == [str(b / "x.md")], 20), _held(recall_home)
    assert [h["description"] for h in _found()] == ["note in folder B"]
    # where the link leads, as the daemon left it: `recall index notes` keeps B alone
    assert run_cli("index", "-q", str(link)).returncode == 0
    assert [p for _k, p in _held(recall_home)] == [str(b / "x.md")]
