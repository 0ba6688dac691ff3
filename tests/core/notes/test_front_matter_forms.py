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


def test_each_warning_about_a_note_says_the_repair(tmp_path):
    """An outside tester's: "unknown type 'meeting'", "broken front matter (line 3)", "binary
    file; skipped" said what was wrong, not what to do; a header value of the wrong shape was
    read in silence (`name: {a: 1}` the file stem, `type: [x]` 'x')."""
    from recall.notes.files import NOTE_TYPES, read_folder

    (tmp_path / "meeting.md").write_text("---\nname: Standup\ntype: meeting\nquestions: {a: 1}\n---\nBody.\n")
    (tmp_path / "broken.md").write_text("---\nname: A\ndescription: a: b: c\n---\nBody.\n")
    (tmp_path / "alias.md").write_text("---\nname: &x A\ndescription: *x\n---\nBody.\n")
    (tmp_path / "blob.md").write_bytes(bytes(range(32)) * 8)
    (tmp_path / "shapes.md").write_text("---\nname: {a: 1}\ndescription: [a, b]\ntype: [project]\n---\nBody.\n")
    notes, problems = read_folder(tmp_path)
    said = {p.path.rpartition("/")[2]: [] for p in problems}
    for p in problems:
        said[p.path.rpartition("/")[2]].append(p.message)
    assert any(all(t in m for t in NOTE_TYPES) for m in said["meeting.md"]), said["meeting.md"]
    assert any("  - how do I" in m for m in said["meeting.md"])
    assert "fix the YAML at that line" in said["broken.md"][0]
    assert "write the value out" in said["alias.md"][0]
    assert "iconv" in said["blob.md"][0] and "control bytes" in said["blob.md"][0]
    shapes = next(n for n in notes if n.id == "shapes")
    assert (shapes.name, shapes.description, shapes.type) == ("shapes", "a, b", "project")
    assert sorted(m.split("'")[1] for m in said["shapes.md"]) == ["description", "name", "type"], said["shapes.md"]
    assert all("write it as" in m for m in said["shapes.md"])


JA = "name：デプロイ凍結\ndescription：金曜日はデプロイしない\ntype：feedback\n"


@pytest.mark.parametrize("text", [
    "---\n" + JA + "---\n本文。\n",  # full-width colons
    "ーーー\nname: デプロイ凍結\ndescription: 金曜日はデプロイしない\ntype: feedback\nーーー\n本文。\n",  # IME dashes
    "－－－\n" + JA + "－－－\n本文。\n",
    "---\nname:\u3000デプロイ凍結\ndescription:\u3000金曜日はデプロイしない\ntype:\u3000feedback\n---\n本文。\n",
    "---\nｎａｍｅ: デプロイ凍結\nｄｅｓｃｒｉｐｔｉｏｎ: 金曜日はデプロイしない\nｔｙｐｅ: feedback\n---\n本文。\n",
])
def test_a_header_typed_with_a_japanese_input_method_is_read_and_the_fix_said(tmp_path, text):
    """An outside tester's (F2): with a Japanese input method on, '---' becomes 'ーーー', ':' becomes
    '：', a space after it '\u3000', the keys full-width letters; the note lost its name (named by its
    file, described as 'ーーー'), mostly without a word."""
    (tmp_path / "freeze.md").write_text(text, encoding="utf-8")
    note, problems = read_note(tmp_path / "freeze.md")
    assert (note.name, note.description, note.type, note.body) == ("デプロイ凍結", "金曜日はデプロイしない",
                                                                   "feedback", "本文。")
    [said] = [p.message for p in problems]
    assert "full-width" in said and "ASCII" in said, said


def test_full_width_text_in_a_value_or_the_body_is_kept(tmp_path):
    """Only the header's syntax is read as ASCII: a value's and the body's own characters stay."""
    text = "---\nname: 設定：本番\ndescription: ｎｐｍ　ｉｎｓｔａｌｌ\ntype: feedback\n---\nーーー\nname：本文\n"
    (tmp_path / "keep.md").write_text(text, encoding="utf-8")
    note, problems = read_note(tmp_path / "keep.md")
    assert (note.name, note.description, problems) == ("設定：本番", "ｎｐｍ　ｉｎｓｔａｌｌ", [])
    assert note.body == "ーーー\nname：本文"


def test_rules_of_long_dashes_around_prose_stay_plain_text(tmp_path):
    (tmp_path / "prose.md").write_text("———\nA quote, set off.\n———\nBody.\n", encoding="utf-8")
    note, problems = read_note(tmp_path / "prose.md")
    assert problems == [] and "A quote, set off." in note.body
