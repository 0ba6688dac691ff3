"""How a note's bytes are read as text when they are not UTF-8: a legacy encoding guessed only
where its reading is plausible, UTF-16 without a byte-order mark in any script."""

import pytest

from recall.notes.files import read_folder, read_note

LATIN = "---\nname: Trip to Zürich\ndescription: Hotel in Zürich, ask Señor García\ntype: project\n---\n" \
        "Book the hotel in Zürich.\n"


@pytest.mark.parametrize("text", [LATIN, "Très bien\n", "Über alles\n", "Fußgänger\n", "Garçon\n", "Informação\n",
                                  "Mañana\n"])
def test_latin1_text_is_not_read_as_a_cjk_encoding(tmp_path, text):
    """An outside tester's Latin-1 note was "read as gb18030" and indexed as 'Trip to Z黵ich';
    short words became `Tr鑚 bien`, `ﾜber alles`, `Gar輟n` (Shift_JIS)."""
    (tmp_path / "trip.md").write_bytes(text.encode("latin-1"))
    note, problems = read_note(tmp_path / "trip.md")
    assert note is not None
    assert text.split("\n---\n")[-1].strip() in note.body, ascii(note.body)
    said = " ".join(p.message for p in problems)
    assert "read as cp1252" in said and "Latin-1" in said, said
    if text == LATIN:
        assert (note.name, note.description, note.type) == ("Trip to Zürich", "Hotel in Zürich, ask Señor García",
                                                             "project")


@pytest.mark.parametrize(("text", "encoding"), [
    ("---\nname: APIキーを更新\ndescription: Gitリポジトリの鍵\n---\n本文\n", "shift_jis"),
    ("---\nname: APIキーを更新\ndescription: Gitリポジトリの鍵\n---\n本文\n", "euc_jp"),
    ("---\nname: GitのCIを速くする\ndescription: Docker版のキャッシュ\n---\nPRを出す前に確認\n", "shift_jis"),
    ("---\nname: Docker版\ndescription: AとB\n---\n本文\n", "shift_jis"),
    ("---\nname: 中文笔记：部署\ndescription: 部署前检查数据库备份\n---\n正文\n", "gb18030"),
    ("---\nname: 部署前檢查\ndescription: 資料庫備份\n---\n正文\n", "big5"),
])
def test_japanese_and_chinese_legacy_notes_are_read_as_before(tmp_path, text, encoding):
    (tmp_path / "n.md").write_bytes(text.encode(encoding))
    notes, problems = read_folder(tmp_path)
    [note] = notes
    name, description = text.split("\n")[1][6:], text.split("\n")[2][13:]
    assert (note.name, note.description) == (name, description)
    assert f"read as {encoding}" in " ".join(p.message for p in problems)
