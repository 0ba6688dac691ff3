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


KAIGI = ("---\nname: 会議メモ\ndescription: 来週のリリース計画について\n---\n"
         "本番環境へのデプロイは金曜日に行わないこと。\n")


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_note_in_utf16_without_a_mark_in_japanese_is_read(tmp_path, encoding):
    """An outside tester's Japanese note saved as UTF-16 without a byte-order mark was "binary
    file; skipped": only mostly-ASCII UTF-16 was recognised."""
    (tmp_path / "kaigi.md").write_bytes(KAIGI.encode(encoding))
    notes, problems = read_folder(tmp_path)
    [note] = notes
    assert (note.name, note.description, note.body) == ("会議メモ", "来週のリリース計画について",
                                                        "本番環境へのデプロイは金曜日に行わないこと。")
    [said] = [p.message for p in problems]
    assert "read as UTF-16" in said and "saving it as UTF-8 makes sure" in said, said


def test_a_russian_document_in_utf16_without_a_mark_is_read_and_random_bytes_are_not(tmp_path):
    import random

    from recall.config.load import load_config
    from recall.notes.documents import read_documents

    text = "Резервное копирование базы выполняется каждую ночь в три часа.\nПроверьте журнал утром.\n"
    (tmp_path / "backup.txt").write_bytes(text.encode("utf-16-le"))
    rng = random.Random(7)
    (tmp_path / "noise.txt").write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    (tmp_path / "sparse.txt").write_bytes(bytes(rng.randrange(256) if i % 3 else 0 for i in range(4096)))
    notes, problems = read_documents(tmp_path, load_config().documents)
    assert [n.id for n in notes] == ["backup.txt"] and "Проверьте журнал утром" in notes[0].body
    said = {p.path.rpartition("/")[2]: p.message for p in problems}
    assert "read as UTF-16 LE" in said["backup.txt"] and {"noise.txt", "sparse.txt"} <= set(said)


@pytest.mark.parametrize(("text", "encoding"), [
    ("---\nname: 中文笔记\ndescription: 部署在周五之前完成不要忘记备份数据库\n---\n周五不要部署到生产环境\n", "gb2312"),
    ("---\nname: 회의 메모\ndescription: 배포는 금요일에 하지 마세요\n---\n백업을 잊지 마세요\n", "euc_kr"),
])
def test_chinese_and_korean_legacy_notes_are_not_read_as_japanese(tmp_path, text, encoding):
    """GB2312 Chinese and EUC-KR Korean decode as EUC-JP too, which is tried before them: 中文笔记
    was indexed as 嶄猟永芝 (the encodings' tester, stop 58). Among readings that hold, the one a
    character-set detector finds likeliest is taken."""
    (tmp_path / "n.md").write_bytes(text.encode(encoding))
    [note], problems = read_folder(tmp_path)
    assert (note.name, note.description) == (text.split("\n")[1][6:], text.split("\n")[2][13:]), (note.name,)
    assert text.split("---\n")[-1].strip() in note.body
    assert "euc_jp" not in " ".join(p.message for p in problems)
