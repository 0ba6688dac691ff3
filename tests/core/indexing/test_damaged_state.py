"""Damage an outside tester made to RECALL_HOME that no command said or repaired (stop 44): a
flipped bit in the store's text, a folder where the hook's settings file goes, a damaged store
behind the page."""

from __future__ import annotations

import json
import shutil
import sqlite3

from helpers.cli import run_cli
from helpers.ui import page_client


def _flip_a_text_byte(db_path) -> None:
    """One stored chunk's text made invalid UTF-8, as one flipped bit on the disk makes it."""
    db = sqlite3.connect(db_path)
    try:
        pk = db.execute("SELECT MIN(note_id) FROM chunks WHERE role = 'text'").fetchone()[0]
        db.execute("UPDATE chunks SET text = CAST(X'6C' || X'E9' || X'73736F6E' AS TEXT) WHERE note_id = ? AND ord = 0",
                   (pk,))
        db.execute("UPDATE notes SET name = CAST(X'46' || X'FF' || X'6C616773' AS TEXT)"
                   " WHERE id = (SELECT MIN(id) FROM notes)")
        db.commit()
    finally:
        db.close()


def test_a_flipped_bit_in_the_stores_text_stops_no_command(recall_home, sample_notes, hash_model):
    assert run_cli("index", "-q", str(sample_notes)).returncode == 0
    _flip_a_text_byte(recall_home / "recall.db")
    for args in (("search", "--all", "feature flags unleash"), ("status",), ("index", "-q", str(sample_notes)),
                 ("index", "-q", "--rebuild"), ("search", "--all", "--json", "lesson")):
        proc = run_cli(*args)
        said = proc.stderr
        assert proc.returncode == 0 and "Traceback" not in said and "decode" not in said, (args, said)
    hits = json.loads(run_cli("search", "--all", "--json", "Feature flags via Unleash").stdout)["results"]
    assert hits[0]["id"] == "feature-flags-unleash"


def test_a_folder_where_the_hooks_settings_go_is_moved_aside(recall_home, sample_notes, hash_model):
    assert run_cli("index", "-q", str(sample_notes)).returncode == 0
    snapshot = recall_home / "hook.json"
    snapshot.unlink(missing_ok=True)
    (snapshot / "inside").mkdir(parents=True)
    assert run_cli("status").returncode == 0
    assert snapshot.is_file() and json.loads(snapshot.read_text())["settings"]["budget_ms"] > 0
    assert [p.name for p in recall_home.glob("hook.json.stray-*/*")] == ["inside"]  # moved, not deleted


def test_the_page_over_a_damaged_store_says_the_line_and_the_repair(recall_home, sample_notes, hash_model):
    assert run_cli("index", "-q", str(sample_notes)).returncode == 0
    with open(recall_home / "recall.db", "r+b") as fh:
        fh.write(b"\0" * 100)  # the header gone
    client = page_client(8791)
    for route in ("/notes", "/status", "/injections"):
        page = client.get(route)
        assert page.status_code == 503 and "recall index --rebuild" in page.text, (route, page.status_code)


def test_an_index_of_one_folder_over_a_lost_store_brings_the_others_back(recall_home, tmp_path, hash_model):
    """recall.db deleted, then `recall index B`: the store's new list of folders held B alone,
    and A, named only by the index on disk, was dropped for good, `--rebuild` included (an
    outside tester's, stop 56). Any index over a store that knows no folder while the index on
    disk names some reads them all again."""
    from helpers.notes import write_note

    a, b = tmp_path / "a", tmp_path / "b"
    write_note(a, "alpha", "Alpha zebrafalcon", "alpha note", "alpha body")
    write_note(b, "beta", "Beta", "beta note", "beta body")
    for folder in (a, b):
        assert run_cli("index", "-q", str(folder)).returncode == 0
    (recall_home / "recall.db").unlink()
    again = run_cli("index", "-q", str(b))
    assert again.returncode == 0 and "held no folder: 2 read back from the index on disk" in again.stderr, again.stderr
    hits = json.loads(run_cli("search", "--all", "--json", "Alpha zebrafalcon").stdout)["results"]
    assert hits and hits[0]["id"] == "alpha", hits


def test_a_folder_replaced_by_a_link_to_its_new_place_is_indexed_there_once(recall_home, tmp_path, hash_model):
    """`notes` made a link to `notes.v2` (a release switch): the old row, read through the link,
    kept each note beside its copy under notes.v2 (an outside tester's, stop 56)."""
    import shutil

    from helpers.notes import write_note

    notes = tmp_path / "notes"
    write_note(notes, "one", "One zebrafalcon", "first", "body one")
    assert run_cli("index", "-q", str(notes)).returncode == 0
    shutil.copytree(notes, tmp_path / "notes.v2")
    shutil.rmtree(notes)
    notes.symlink_to(tmp_path / "notes.v2")
    write_note(notes, "two", "Two", "second", "body two")
    for args in (("index", "-q", str(notes)), ("index", "-q")):
        out = run_cli(*args)
        assert out.returncode == 0, out.stderr
        assert ("now leads to" in out.stderr) is (args[-1] == str(notes)), out.stderr  # said at the first run
        hits = json.loads(run_cli("search", "--all", "--json", "-k", "10", "One zebrafalcon").stdout)["results"]
        assert sorted(h["path"] for h in hits) == [str(tmp_path / "notes.v2" / f"{n}.md") for n in ("one", "two")]


def test_a_folder_replaced_by_a_loop_of_links_is_gone_and_the_others_are_indexed(recall_home, tmp_path, hash_model):
    """A known folder made a loop of links was a traceback on every plain `recall index`, and no other
    folder was synced (an outside tester's, stop 56)."""
    from helpers.notes import write_note

    notes, other = tmp_path / "notes", tmp_path / "other"
    write_note(notes, "one", "One", "first", "body one")
    write_note(other, "two", "Two zebrafalcon", "second", "body two")
    assert run_cli("index", "-q", str(notes), str(other)).returncode == 0
    notes.rename(tmp_path / "notes.bak")
    notes.symlink_to(tmp_path / "loop")
    (tmp_path / "loop").symlink_to(notes)
    write_note(other, "three", "Three zebrafalcon", "third", "body three")
    out = run_cli("index", "-q")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "the folder is gone" in out.stderr
    hits = json.loads(run_cli("search", "--all", "--json", "-k", "10", "zebrafalcon").stdout)["results"]
    assert sorted(h["id"] for h in hits) == ["three", "two"], hits


def test_a_folder_made_a_link_into_or_around_another_indexed_folder_holds_each_note_once(recall_home, tmp_path,
                                                                                         hash_model):
    """A known folder made a link to a folder that holds another indexed one, or to one inside
    another: both were known, and their notes listed twice (an outside tester's, stop 56)."""
    from helpers.notes import write_note

    def paths() -> list[str]:  # as stored: a search shows one of two copies
        db = sqlite3.connect(recall_home / "recall.db")
        try:
            return sorted(path for (path,) in db.execute("SELECT path FROM notes"))
        finally:
            db.close()

    big, notes = tmp_path / "big", tmp_path / "notes"
    write_note(big / "sub", "s", "S zebrafalcon note", "sub", "sub note")
    write_note(big, "b", "B zebrafalcon note", "big", "big note")
    write_note(notes, "n", "N zebrafalcon note", "n", "n note")
    assert run_cli("index", "-q", str(big / "sub"), str(notes)).returncode == 0
    shutil.rmtree(notes)
    notes.symlink_to(big)  # around the indexed big/sub
    for _ in range(2):
        assert run_cli("index", "-q").returncode == 0
        assert paths() == [str(big / "b.md"), str(big / "sub" / "s.md")]
    notes.unlink()
    write_note(notes, "n", "N zebrafalcon note", "n", "n note")
    assert run_cli("index", "-q", str(notes)).returncode == 0
    shutil.rmtree(notes)
    notes.symlink_to(big / "sub")  # into the indexed big
    assert run_cli("index", "-q").returncode == 0
    assert paths() == [str(big / "b.md"), str(big / "sub" / "s.md")]


def test_a_link_pointed_elsewhere_keeps_the_folder_another_name_still_leads_to(recall_home, tmp_path, hash_model):
    """`l1` and `l2` both led to v; `l1` pointed at w dropped v, though `l2` still leads there (an
    outside tester's, stop 56)."""
    from helpers.notes import write_note

    v, w = tmp_path / "v", tmp_path / "w"
    write_note(v, "vee", "Vee zebrafalcon", "v", "vee")
    write_note(w, "dub", "Dub zebrafalcon", "w", "dub")
    (tmp_path / "l1").symlink_to(v)
    (tmp_path / "l2").symlink_to(v)
    assert run_cli("index", "-q", str(tmp_path / "l1"), str(tmp_path / "l2")).returncode == 0
    (tmp_path / "l1").unlink()
    (tmp_path / "l1").symlink_to(w)
    out = run_cli("index", "-q", str(tmp_path / "l1"))
    assert out.returncode == 0 and "were dropped" not in out.stderr, out.stderr
    hits = json.loads(run_cli("search", "--all", "--json", "-k", "5", "zebrafalcon").stdout)["results"]
    assert sorted(h["id"] for h in hits) == ["dub", "vee"], hits


def test_many_gone_folders_are_three_warnings_and_one_line_counting_the_rest(recall_home, tmp_path, hash_model):
    """30 folders removed were 30 near-identical warnings (an outside tester's D6): three, and
    one line counting the rest, as files with one problem are (docs/security.md, class 8)."""
    from helpers.notes import write_note

    folders = [tmp_path / f"p{i}" for i in range(7)]
    for i, folder in enumerate(folders):
        write_note(folder, f"n{i}", f"Note {i}", "a note", f"body {i}")
    assert run_cli("index", "-q", *map(str, folders)).returncode == 0
    for folder in folders[1:]:
        shutil.rmtree(folder)
    out = run_cli("index", "-q", str(folders[0]))
    assert out.returncode == 0 and "removed 6," in out.stdout, out.stdout + out.stderr
    lines = out.stderr.splitlines()
    assert sum("the folder is gone" in line for line in lines) == 3, out.stderr
    assert sum("3 more folders" in line and "their 3 note(s)" in line for line in lines) == 1, out.stderr
