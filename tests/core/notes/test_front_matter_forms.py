"""Front matter written otherwise than recall's ``---`` on the first line: read where it can be
read safely, said with the edit that fixes it; a delimiter line is never a name or description."""

import pytest

from recall.notes.files import read_note

HEADER = "name: Deploy freeze\ndescription: no deploys on Friday\ntype: feedback\n"


@pytest.mark.parametrize(("text", "fix"), [
    ("\n---\n" + HEADER + "---\nBody.\n", "delete the 1 line(s) above its opening '---'"),
    ("\n\n\ufeff---\n" + HEADER + "---\nBody.\n", "delete the 2 line(s) above its opening '---'"),
    ("%YAML 1.2\n---\n" + HEADER + "---\nBody.\n", "'%YAML' directive"),
    ("----\n" + HEADER + "----\nBody.\n", "write its lines of dashes as exactly '---'"),
])
def test_a_header_not_on_the_first_line_or_with_other_dashes_is_read_and_the_fix_said(tmp_path, text, fix):
    """An outside tester's note with a blank line above its '---' was named by its file,
    described as '---', its type lost and its header indexed as its body."""
    (tmp_path / "freeze.md").write_text(text, encoding="utf-8")
    note, problems = read_note(tmp_path / "freeze.md")
    assert (note.name, note.description, note.type, note.body) == ("Deploy freeze", "no deploys on Friday",
                                                                   "feedback", "Body.")
    [said] = [p.message for p in problems]
    assert fix in said, said


def test_toml_front_matter_is_read_as_toml(tmp_path):
    """Hugo's and Zola's `+++` header: the description was '+++'."""
    (tmp_path / "hugo.md").write_text('+++\nname = "Deploy freeze"\ndescription = "no deploys on Friday"\n'
                                      'type = "feedback"\n+++\nBody.\n', encoding="utf-8")
    note, problems = read_note(tmp_path / "hugo.md")
    assert (note.name, note.description, note.type, note.body) == ("Deploy freeze", "no deploys on Friday",
                                                                   "feedback", "Body.")
    assert problems == []
    (tmp_path / "bad.md").write_text('+++\nname = Deploy\n+++\nBody.\n', encoding="utf-8")
    note, problems = read_note(tmp_path / "bad.md")
    assert (note.name, note.description) == ("bad", "Body.")
    assert "broken TOML front matter" in problems[0].message and "fix the TOML" in problems[0].message


@pytest.mark.parametrize("text", ["---\n---\n---\n", "---\n", "+++\n", "***\n\nBody.\n", "___\n"])
def test_a_delimiter_line_is_never_a_name_or_description(tmp_path, text):
    (tmp_path / "rules.md").write_text(text, encoding="utf-8")
    note, _ = read_note(tmp_path / "rules.md")
    assert note.name == "rules" and note.description in ("", "Body."), (note.name, note.description)


def test_a_second_header_block_is_said_and_not_the_description(tmp_path):
    (tmp_path / "two.md").write_text("---\nname: A\n---\nname: B\n---\nBody.\n", encoding="utf-8")
    note, problems = read_note(tmp_path / "two.md")
    assert (note.name, note.description, note.body) == ("A", "Body.", "Body.")
    assert "a second front-matter block" in problems[0].message and "merge the two" in problems[0].message


def test_a_rule_then_text_that_names_no_note_field_stays_plain_text(tmp_path):
    (tmp_path / "plain.md").write_text("\n---\nSee also: the runbook\n---\nBody.\n", encoding="utf-8")
    note, problems = read_note(tmp_path / "plain.md")
    assert (note.name, note.description, problems) == ("plain", "See also: the runbook", [])
