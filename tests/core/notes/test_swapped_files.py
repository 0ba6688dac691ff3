"""A file checked by a walk and swapped for a symlink before it is read (an outside tester's H5:
another user who can write a shared notes folder flipped a note between a file and a link to the
victim's private diary, and the diary was indexed). Deterministic: the swap happens in ``skip``,
which ``read_folder`` calls after each note it reads, so the walk has seen the later notes as
regular files already."""

import os
from pathlib import Path

from recall.notes.files import read_folder
from recall.notes.questions import read_questions_file
from recall.privacy.regular import read_inside

CANARY = "PRIVATE-CANARY-7731"


def _private(tmp_path: Path) -> Path:
    private = tmp_path / "private"
    private.mkdir()
    (private / "diary.md").write_text(f"---\nname: my private diary\ndescription: personal\n---\n{CANARY}\n")
    (private / "zz.md").write_text(f"---\nname: diary too\ndescription: personal\n---\n{CANARY}\n")
    return private


def _shared(tmp_path: Path) -> Path:
    shared = tmp_path / "shared"
    (shared / "sub").mkdir(parents=True)
    (shared / "a.md").write_text("---\nname: first\ndescription: d\n---\nfirst note\n")
    (shared / "zz.md").write_text("---\nname: harmless\ndescription: x\n---\nharmless\n")
    (shared / "sub" / "zz.md").write_text("---\nname: harmless sub\ndescription: x\n---\nharmless\n")
    return shared


def _swap_after_first(action):
    done = []

    def skip(shown: str, digest: str, key: str) -> bool:
        if not done:
            done.append(shown)
            action()
        return False

    return skip


def test_a_note_swapped_for_a_link_out_after_the_walk_is_never_read(tmp_path):
    private, shared = _private(tmp_path), _shared(tmp_path)

    def swap() -> None:
        os.symlink(private / "diary.md", shared / ".l")
        os.rename(shared / ".l", shared / "zz.md")  # atomic, as the attacker did

    notes, problems = read_folder(shared, skip=_swap_after_first(swap))
    assert all(CANARY not in n.body for n in notes)
    assert sorted(n.name for n in notes) == ["first", "harmless sub"]
    assert any(Path(p.path).name == "zz.md" and "outside the folder" in p.message for p in problems), problems


def test_a_subfolder_swapped_for_a_link_out_after_the_walk_is_never_read(tmp_path):
    private, shared = _private(tmp_path), _shared(tmp_path)

    def swap() -> None:
        os.rename(shared / "sub", shared / "sub.old")
        os.symlink(private, shared / "sub")

    notes, problems = read_folder(shared, skip=_swap_after_first(swap))
    assert all(CANARY not in n.body for n in notes)
    assert any("sub" in p.path and "outside the folder" in p.message for p in problems), problems


def test_a_link_inside_the_folder_is_still_read(tmp_path):
    shared = _shared(tmp_path)
    (shared / "alias.md").symlink_to(shared / "sub" / "zz.md")
    (shared / "inner").symlink_to("sub")  # a folder link is not walked, but a note through it reads
    notes, problems = read_folder(shared)
    assert "alias" in {n.id for n in notes} and problems == []
    assert read_inside(shared / "inner" / "zz.md", os.path.realpath(shared), 1000)[0].startswith(b"---")


def test_a_questions_file_swapped_for_a_link_out_is_not_read(tmp_path):
    private, shared = _private(tmp_path), _shared(tmp_path)
    (private / "questions.jsonl").write_text(f'{{"note": "a", "questions": ["{CANARY}?"]}}\n')
    os.symlink(private / "questions.jsonl", shared / "questions.jsonl")
    # the static check (a link out) and the open are one step now: no moment between them
    got, problems = read_questions_file(shared / "questions.jsonl")
    assert got == {} and any("outside the folder" in p.message for p in problems)


def _pages(tmp_path: Path) -> tuple[Path, Path]:
    private, shared = tmp_path / "private", tmp_path / "docs"
    private.mkdir(parents=True)
    shared.mkdir()
    (private / "diary.html").write_text(f"<html><body><h1>Diary</h1><p>{CANARY} bank pin</p></body></html>")
    for name in ("a.html", "zz.html"):
        (shared / name).write_text(f"<html><body><h1>{name}</h1><p>harmless page</p></body></html>")
    return private, shared


def _documents(shared: Path, unchanged):
    from recall.config.load import load_config
    from recall.notes.documents import read_documents

    return read_documents(shared, load_config().documents, unchanged=unchanged)


def _swap(shared: Path, name: str, target: Path) -> None:
    os.symlink(target, shared / ".l")
    os.rename(shared / ".l", shared / name)


def test_a_document_swapped_for_a_link_out_is_never_converted(tmp_path, recall_home):
    """Swapped after the walk found it and its bytes were hashed (``unchanged`` is asked then),
    before the converter opens it: the converter opens a copy taken through the check."""
    private, shared = _pages(tmp_path)

    def before_convert(path: str, rel: str, key: str) -> bool:
        if rel == "zz.html":
            _swap(shared, "zz.html", private / "diary.html")
        return False

    notes, problems = _documents(shared, before_convert)
    assert all(CANARY not in n.body for n in notes), [n.body for n in notes]
    assert any("zz.html" in p.path and "outside the folder" in p.message for p in problems), problems
