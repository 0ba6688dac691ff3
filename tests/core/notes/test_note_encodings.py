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


HEADER = ("---\nname: Staging box access\ndescription: how to reach the staging box\ntype: reference\n---\n"
          "SSH to staging via the bastion.\n")
APPENDED = "password: Ps7CANARYappend9\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYAPPCANARY1\n"


@pytest.mark.parametrize("saved", ["utf-16 with a mark, CRLF", "utf-16-le without a mark", "utf-16-be with a mark",
                                   "japanese utf-16 with a mark"])
def test_lines_appended_in_utf8_to_a_utf16_note_are_read_as_utf8_and_masked(tmp_path, saved):
    """A note PowerShell 5.1 or Notepad saved as UTF-16, then a line added with `echo … >> note.md`
    (UTF-8): the whole file was read as UTF-16, the added lines became CJK-looking characters
    that no masking rule read, and the secret in them was indexed (and pushed to the team store)
    in a form `.encode('utf-16-le')` gives back (an outside privacy tester's, stop 60)."""
    import subprocess
    import sys

    from recall.privacy.decoding import decode

    head = HEADER.replace("name: Staging", "name: 会議 Staging") if saved.startswith("japanese") else HEADER
    if "CRLF" in saved:
        head = head.replace("\n", "\r\n")
    encoding = {"utf-16 with a mark, CRLF": "utf-16", "utf-16-le without a mark": "utf-16-le",
                "utf-16-be with a mark": "utf-16-be", "japanese utf-16 with a mark": "utf-16"}[saved]
    raw = head.encode(encoding)
    if saved == "utf-16-be with a mark":
        raw = b"\xfe\xff" + raw
    raw += APPENDED.encode("utf-8")
    text, said = decode(raw)
    assert text.replace("\r\n", "\n").endswith(head.replace("\r\n", "\n") + APPENDED), ascii(text[-200:])
    assert any("UTF-8" in line and "appended" in line for line in said), said
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "staging-box.md").write_bytes(raw)
    home = tmp_path / "home"
    out = subprocess.run([sys.executable, "-m", "recall.cli", "index", str(notes)], capture_output=True, text=True,
                         env={**__import__("os").environ, "RECALL_HOME": str(home), "RECALL_MODEL": "hash"},
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "appended" in out.stderr, out.stderr  # said, with how to make sure
    import sqlite3

    con = sqlite3.connect(home / "recall.db")
    stored = [value for (table,) in con.execute("select name from sqlite_master where type = 'table'")
              for row in con.execute(f"select * from {table}") for value in row if isinstance(value, str)]
    con.close()
    assert any("Staging box access" in v for v in stored)
    for value in stored:  # nor given back by reading the stored text's code units as bytes
        for form in ("utf-8", "utf-16-le", "utf-16-be"):
            back = value.encode(form, errors="ignore").decode("utf-8", errors="ignore")
            assert "Ps7CANARYappend9" not in back and "bPxRfiCYAPPCANARY1" not in back, (form, value[:200])
