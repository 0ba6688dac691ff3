"""Reading note files: both front-matter layouts, and bad input that never stops a folder."""

from pathlib import Path

import pytest

from recall.notes import MAX_NOTE_BYTES, read_folder


def test_front_matter_top_level_and_metadata_layouts(tmp_path):
    (tmp_path / "a.md").write_text("---\nname: A\ndescription: about a\ntype: feedback\n---\nbody a\n")
    (tmp_path / "b.md").write_text(
        "---\nmetadata:\n  node_type: memory\n  type: project\n  name: B\n  description: about b\n---\nbody b\n"
    )
    (tmp_path / "c.md").write_text("\n\n# Plain title\nmore text\n")
    (tmp_path / "MEMORY.md").write_text("- [A](a.md) — index, not a note\n")
    notes, problems = read_folder(tmp_path)
    by = {n.id: n for n in notes}
    assert set(by) == {"a", "b", "c"}
    assert (by["a"].name, by["a"].description, by["a"].type, by["a"].body) == ("A", "about a", "feedback", "body a")
    assert (by["b"].name, by["b"].description, by["b"].type) == ("B", "about b", "project")
    assert (by["c"].name, by["c"].description) == ("c", "Plain title")
    assert problems == []


def test_bad_input_is_reported_and_everything_else_indexed(tmp_path):
    good = tmp_path / "good.md"
    good.write_text("---\nname: Good\ndescription: fine\ntype: user\n---\nok\n")
    (tmp_path / "badutf8.md").write_bytes(b"---\nname: Bad\ndescription: x\n---\ncaf\xe9 \xff\n")
    (tmp_path / "binary.md").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "broken.md").write_text("---\nname: [unclosed\ndescription: x\n---\nbody\n")
    (tmp_path / "big.md").write_text("---\nname: Big\ndescription: huge\n---\n" + "x" * (MAX_NOTE_BYTES + 10))
    outside = tmp_path.parent / "outside-secret.md"
    outside.write_text("secret\n")
    (tmp_path / "link.md").symlink_to(outside)
    notes, problems = read_folder(tmp_path)
    ids = {n.id for n in notes}
    assert {"good", "badutf8", "broken", "big"} <= ids
    assert "binary" not in ids and "link" not in ids
    msgs = "\n".join(str(p) for p in problems)
    assert "invalid UTF-8" in msgs
    assert "binary file" in msgs
    assert "broken front matter" in msgs
    assert "over 1 MB" in msgs
    assert "symlink leads outside" in msgs
    broken = next(n for n in notes if n.id == "broken")
    assert broken.name == "broken"  # falls back to the file stem


def test_unreadable_file_as_root_via_directory_entry(tmp_path):
    # A dangling symlink inside the folder cannot be read by anyone, root included.
    (tmp_path / "dangling.md").symlink_to(tmp_path / "missing-target.md")
    (tmp_path / "ok.md").write_text("fine\n")
    notes, problems = read_folder(tmp_path)
    assert [n.id for n in notes] == ["ok"]
    assert any("unreadable" in str(p) for p in problems)


def test_missing_folder_raises_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder"):
        read_folder(tmp_path / "nope")


def test_sample_collection_parses_cleanly():
    root = Path(__file__).resolve().parent.parent / "datasets" / "sample" / "notes"
    notes, problems = read_folder(root)
    assert len(notes) >= 45 and problems == []
    assert {n.type for n in notes} == {"user", "feedback", "project", "reference"}
    assert sum(any("\u3040" <= ch <= "\u30ff" for ch in n.body) for n in notes) >= 8  # Japanese notes
