"""Bytes to text, one way for every text file recall reads: notes, documents, questions and
negatives files, config.toml.

Each reader used to decide on its own (stop 47, an outside tester): a note in Shift_JIS was
indexed as U+FFFD while the same bytes as a ``.txt`` document were read as Shift_JIS; one NUL
byte made a note "binary" and removed it from the index; a byte-order mark was read in notes
but broke the first line of ``questions.jsonl`` and of ``config.toml``. Here, in order:

1. a byte-order mark (UTF-8, UTF-16, UTF-32) says the encoding, and is dropped;
2. UTF-16 without one (NUL in every other byte, or text in another script that reads as it) is
   read as UTF-16, said;
3. NUL bytes anywhere else (a crashed editor, a sync tool's padding) are dropped, said,
   with the command that removes them; a file mostly of NULs is binary;
4. UTF-8 is read as it is; else the legacy encodings in ``LEGACY`` are tried strictly, a CJK
   reading that is Latin-1 read wrong ("Z黵ich" for "Zürich", ``_latin_misread``) passed over
   (said: saving it as UTF-8 makes sure); else UTF-8 with the bad bytes replaced, said.

Standard library only.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from collections import Counter

from recall.errors import RecallError

# A byte-order mark and its encoding (UTF-32 first: its little-endian mark starts with UTF-16's).
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"), (codecs.BOM_UTF8, "utf-8-sig"))
# ... and each mark's encoding in words, for a line that says how a file was read.
_MARK_NAMES = {codecs.BOM_UTF32_LE: "UTF-32 LE", codecs.BOM_UTF32_BE: "UTF-32 BE", codecs.BOM_UTF16_LE: "UTF-16 LE",
               codecs.BOM_UTF16_BE: "UTF-16 BE"}
# Tried, strictly, in this order, for text that is not UTF-8: Japanese, Chinese and Korean
# legacy encodings, then Windows' Western one (Latin-1 text decodes as none of the others whole).
LEGACY = ("shift_jis", "cp932", "euc_jp", "gb18030", "big5", "euc_kr", "cp1252")
# ... each in words, where its codec's name does not say it.
_LEGACY_NAMES = {"cp1252": " (Windows-1252, Latin-1)", "cp932": " (Windows Shift_JIS)", "euc_jp": " (EUC-JP)",
                 "euc_kr": " (EUC-KR)", "big5": " (Big5)"}
SAMPLE = 8192  # bytes looked at to tell UTF-16 without a mark, and binary data


# Characters no text is written in: a legacy encoding that yields them is a wrong guess.
_PRIVATE_USE = re.compile("[\ue000-\uf8ff]")
# A run of non-ASCII characters.
_NON_ASCII_RUN = re.compile("[^\x00-\x7f]+")
# One character of such a run that Latin-1 text read as a CJK encoding yields (an accented
# letter and the byte after it read as one ideograph or hangul, or alone as half-width
# katakana), not kana or CJK punctuation, which a particle between two English words is.
_GLUED = re.compile("[^\u3000-\u30ff\uff01-\uff60]+")
# C0 control bytes that text holds (tab, line feed, vertical tab, form feed, carriage return, escape).
_TEXT_CONTROLS = frozenset(b"\t\n\x0b\x0c\r\x1b")


class Binary(RecallError, ValueError):
    """Not text: the line says so, with the repair where there is one (``str(exc)``)."""


# What a file's first bytes say it is, for one named as text whose extension lies: a PDF named
# .txt was indexed as its raw syntax, a PNG named .md was "binary", and a compressed PDF was
# told to `tr -d '\000'`, which makes garbage of it (an outside tester's, stop 56).
_MAGIC = (
    (b"%PDF-", "a PDF", "pdf"), (b"\x89PNG\r\n\x1a\n", "a PNG image", "png"), (b"\xff\xd8\xff", "a JPEG image", "jpg"),
    (b"GIF87a", "a GIF image", "gif"), (b"GIF89a", "a GIF image", "gif"),
    (b"PK\x03\x04", "a ZIP archive or an Office file", ""), (b"\xd0\xcf\x11\xe0", "an old Office file", ""),
    (b"\x1f\x8b", "a gzip archive", ""), (b"\x7fELF", "a program", ""),
)


def _not_text(raw: bytes) -> Binary | None:
    """``Binary`` naming what ``raw``'s first bytes say it is, and its extension, when they name a
    format that is not text; else None."""
    for magic, kind, suffix in _MAGIC:
        if raw.startswith(magic):
            rename = f"; rename it to .{suffix} to index it as one" if suffix else ""
            return Binary(f"its content is {kind} (its first bytes say so), not text; skipped{rename}")
    return None


def by_mark(raw: bytes) -> str | None:
    """The text, when a byte-order mark (UTF-8, UTF-16, UTF-32) says its encoding; else None."""
    marked = _by_mark(raw)
    return None if marked is None else marked[0]


def _by_mark(raw: bytes) -> tuple[str, list[str]] | None:
    """(the text, what was done to read it), when a byte-order mark says the encoding; else None."""
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            if bom in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
                return _wide(raw[len(bom):], "utf-16-le" if bom == codecs.BOM_UTF16_LE else "utf-16-be")
            return raw.decode(encoding, errors="replace"), []
    return None


def _wide(units: bytes, encoding: str, errors: str = "replace") -> tuple[str, list[str]]:
    """UTF-16 text (no mark), and a tail appended to it in UTF-8 read as UTF-8 (said): a note
    PowerShell or Notepad saved as UTF-16 and a line then added with `echo … >> note.md`. Read
    whole as UTF-16, the added lines became CJK-looking characters no masking rule read, and a
    secret in them was indexed in a form that gives it back (an outside privacy tester's, stop 60).
    The tail: after the last code unit with a NUL byte (UTF-16's line ends and ASCII have one),
    with no NUL of its own, valid UTF-8 and ending a line as `echo` does."""
    whole = units[: len(units) // 2 * 2]
    low, high = (whole[0::2], whole[1::2]) if encoding == "utf-16-le" else (whole[1::2], whole[0::2])
    boundary = 2 * (max(low.rfind(b"\x00"), high.rfind(b"\x00")) + 1)
    tail = units[boundary:]
    if boundary and tail and 0 not in tail and tail.endswith(b"\n"):
        try:
            narrow = tail.decode("utf-8")
        except UnicodeDecodeError:
            narrow = None
        if narrow is not None:
            return units[:boundary].decode(encoding, errors=errors) + narrow, [
                f"{_wide_name(encoding)} with lines appended in UTF-8 from byte {boundary}: each part read as "
                "itself (a line added with `>>` to a file saved as Unicode?; saving it as UTF-8 makes sure)"]
    return units.decode(encoding, errors=errors), []


def settings_text(raw: bytes) -> str:
    """A settings file's text (``config.toml``, ``calibration.toml``): the encoding its byte-order
    mark says (PowerShell's, Notepad's), UTF-16 without one (its NUL bytes tell it, as ``decode``
    reads it: a config saved so was refused, an outside tester's AI07), else UTF-8; no legacy
    encoding guessed (``UnicodeDecodeError``)."""
    marked = by_mark(raw)
    if marked is not None:
        return marked
    wide = _utf16_without_mark(raw[:SAMPLE]) if 0 in raw[:SAMPLE] else None
    return _wide(raw, wide, "strict")[0] if wide is not None else raw.decode("utf-8")


def settings_encoding(raw: bytes) -> str | None:
    """How ``settings_text`` reads ``raw`` when not as UTF-8, in words ("read as UTF-16 LE, as its
    byte-order mark FF FE says"), for a line that says why the text is not what was meant; None
    for UTF-8."""
    for bom, _encoding in _BOMS:
        if raw.startswith(bom):
            name = _MARK_NAMES.get(bom)
            return f"read as {name}, as its byte-order mark {bom.hex(' ').upper()} says" if name else None
    wide = _utf16_without_mark(raw[:SAMPLE]) if 0 in raw[:SAMPLE] else None
    return f"read as {_wide_name(wide)}, as its NUL bytes say" if wide else None


def _wide_name(encoding: str) -> str:
    """"utf-16-le" in words: "UTF-16 LE"."""
    return encoding.upper().replace("-LE", " LE").replace("-BE", " BE")


def decode(raw: bytes, legacy: bool = True, strict: bool = False) -> tuple[str, list[str]]:
    """(the text, what was done to read it: a line each, empty for plain UTF-8). Raises
    ``Binary`` for data that is not text (a tenth of its first bytes control characters).
    ``legacy=False``: text not UTF-8 is read as UTF-8 with its bad bytes replaced (a
    machine-written file such as a JSONL, where a guess would hide a damaged byte).
    ``strict`` (a document, which may be anything): a NUL byte, or text in no encoding
    tried, is ``Binary`` too, with the command that repairs it."""
    marked = _by_mark(raw)
    if marked is not None:
        return marked
    if (other := _not_text(raw)) is not None:
        raise other
    head = raw[:SAMPLE]
    said: list[str] = []
    if 0 in head:
        wide = _utf16_without_mark(head)
        if wide is not None:
            text, appended = _wide(raw, wide)
            return text, [f"UTF-16 without a byte-order mark: read as {_wide_name(wide)} (saving it as UTF-8 makes "
                          "sure)", *appended]
        if sum(b < 32 and b not in _TEXT_CONTROLS for b in head) > len(head) // 10:
            raise Binary(f"binary file (NUL and control bytes in {share_of_controls(head)} of its first bytes, "
                         "as in an image or a program; no text encoding recall reads); skipped; if it is text in "
                         "another encoding, `iconv -f ENCODING -t UTF-8 FILE > FILE.new` converts it")
        if strict:
            raise Binary("binary file (NUL bytes); skipped; if it is text a tool damaged, "
                         "`tr -d '\\000' < FILE > FILE.txt` keeps the rest")
        said.append(f"{raw.count(0)} NUL byte(s) dropped (a tool's damage; `tr -d '\\000' < FILE > FILE.new` "
                    "removes them for good)")
        raw = raw.replace(b"\x00", b"")
    try:
        return raw.decode("utf-8"), said
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    text = raw.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    damaged_utf8 = sum(c > "\x7f" for c in text) - bad >= 2 * bad  # mostly UTF-8: a bad byte, not Latin-1
    readings = _readings(raw) if legacy and not damaged_utf8 else {}
    if readings:
        encoding = _likeliest(raw, readings)
        return readings[encoding], [*said, f"not UTF-8: read as {encoding}{_LEGACY_NAMES.get(encoding, '')} (saving "
                                           "it as UTF-8 makes sure)"]
    if strict or text[:SAMPLE].count("\ufffd") > len(text[:SAMPLE]) // 10:
        raise Binary("not UTF-8 text, nor Shift_JIS, EUC, GB18030, Big5 or Windows-1252; skipped; "
                     "`iconv -f ENCODING -t UTF-8 FILE > FILE.txt` converts it" if legacy else "binary file; skipped")
    return text, [*said, f"invalid UTF-8 at byte {first_bad}; bad bytes replaced"]


def _readings(raw: bytes) -> dict[str, str]:
    """Each reading of ``raw`` in ``LEGACY`` that holds: strict, no private-use characters (cp932 reads
    stray bytes as them: stop 57), no Latin-1 read as CJK (``_latin_misread``); Windows-1252 only
    where no CJK reading holds."""
    found: dict[str, str] = {}
    for encoding in LEGACY:
        if encoding == "cp1252" and found:
            break
        try:
            guess = raw.decode(encoding)
        except UnicodeDecodeError:
            continue
        if _PRIVATE_USE.search(guess) or (encoding != "cp1252" and _latin_misread(guess, encoding)):
            continue
        found[encoding] = guess
    return found


def _likeliest(raw: bytes, readings: dict[str, str]) -> str:
    """The reading a character-set detector (charset-normalizer: the languages' letter frequencies and
    coherence) finds likeliest among several that hold, else the first in ``LEGACY``'s order. Chinese
    in GB2312 and Korean in EUC-KR decode as EUC-JP too, tried before them, and were indexed as wrong
    kanji (中文笔记 as 嶄猟永芝: the encodings' tester, stop 58)."""
    first = next(iter(readings))
    if len(set(readings.values())) == 1:
        return first
    try:
        from charset_normalizer import from_bytes

        best = from_bytes(raw[:SAMPLE * 4], cp_isolation=list(readings)).best()
    except Exception:  # noqa: BLE001 - a detector that fails leaves the order's guess
        return first
    if best is None:
        return first
    import codecs

    chosen = codecs.lookup(best.encoding).name
    picked = next((e for e in readings if codecs.lookup(e).name == chosen), first)
    return next(e for e in readings if readings[e] == readings[picked])  # the same text: the order's name


def share_of_controls(head: bytes) -> str:
    """The share of ``head`` that is NUL or other control bytes, in words ("23 %")."""
    return f"{round(100 * sum(b < 32 and b not in _TEXT_CONTROLS for b in head) / max(len(head), 1))} %"


def _latin_misread(text: str, encoding: str) -> bool:
    """Whether ``text``, a CJK reading of a file, is Latin-1 text read wrong: "Zürich" in GB18030
    is "Z黵ich", "Très" in Shift_JIS "Tr鑚" (an outside tester's: the garbled headline was
    indexed). Such a reading glues a character or two to Latin letters, each of which is, byte
    for byte, Latin-1 letters ("黵" is "ür"); Japanese, Chinese and Korean text has runs of its
    own script ("APIキーを更新", "Gitリポジトリ"). More glued characters than runs: a wrong guess."""
    glued = runs = 0
    for m in _NON_ASCII_RUN.finditer(text):
        start, end = m.span()
        beside = text[start - 1 : start] + text[end : end + 1]
        if end - start <= 3 and any("a" <= c.lower() <= "z" for c in beside) and _as_latin_letters(m.group(), encoding):
            glued += 1
        else:
            runs += 1
    return glued > runs


def _as_latin_letters(run: str, encoding: str) -> bool:
    """Whether the bytes of ``run`` (no kana, no CJK punctuation) are Windows-1252 letters."""
    if _GLUED.fullmatch(run) is None:
        return False
    try:
        latin = run.encode(encoding).decode("cp1252")
    except UnicodeError:
        return False
    return all(c.isalpha() or c == "\u2019" for c in latin)


def _utf16_without_mark(head: bytes) -> str | None:
    """"utf-16-le" or "utf-16-be" when most odd (or even) bytes are NUL and the others are not
    (text mostly in ASCII), or when the bytes read strictly as UTF-16 of one endianness as text in
    one or two scripts (``_wide_in_other_scripts``: Japanese or Russian, whose code units hold
    a NUL only for ASCII characters)."""
    pairs = len(head) // 2
    if pairs < 4:
        return None
    for encoding, offset in (("utf-16-le", 1), ("utf-16-be", 0)):
        if head[offset::2].count(0) >= 0.6 * pairs and head[1 - offset::2].count(0) <= 0.1 * pairs:
            try:
                head[: pairs * 2].decode(encoding)
            except UnicodeDecodeError:
                continue
            return encoding
    return _wide_in_other_scripts(head)


def _wide_in_other_scripts(head: bytes) -> str | None:
    """UTF-16 without a mark in a script other than Latin: "binary file; skipped" before (an
    outside tester's Japanese note, a Russian .txt). Its NULs are the high bytes of its ASCII
    characters (line ends, spaces, the header's keys): at one parity; it reads strictly as
    UTF-16 of that endianness, with almost no control, unassigned or private-use characters,
    nearly all in two or three script blocks (random bytes spread over all of them). UTF-8 with
    stray NULs (and no other control bytes, as Cyrillic's high bytes are) is not it."""
    narrow = head.replace(b"\x00", b"")
    if sum(b < 32 and b not in _TEXT_CONTROLS for b in narrow) <= len(narrow) // 100:
        try:
            narrow.decode("utf-8")
            return None
        except UnicodeDecodeError:
            pass
    odd, even = head[1::2].count(0), head[0::2].count(0)
    for encoding, high, low in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
        if high < 2 or low >= high:
            continue
        units = head[: len(head) // 2 * 2]
        if len(units) >= 2 and 0xD8 <= units[-1 if encoding == "utf-16-le" else -2] <= 0xDB:
            units = units[:-2]  # a surrogate pair cut by the sample's end
        try:
            text = units.decode(encoding)
        except UnicodeDecodeError:
            continue
        if _reads_as_text(text):
            return encoding
    return None


def _reads_as_text(text: str) -> bool:
    """Whether ``text`` has at most 1 % control, format, unassigned or private-use characters, and
    90 % of it in its three commonest script blocks (ASCII, CJK and Hangul each counted as one)."""
    bad = sum(unicodedata.category(c) in ("Cc", "Cf", "Cn", "Co", "Cs") and c not in "\t\n\r\x0c\ufeff\u200b"
              for c in text)
    blocks = Counter(_script_block(ord(c)) for c in text)
    return bad <= len(text) // 100 and sum(n for _, n in blocks.most_common(3)) >= 0.9 * len(text)


def _script_block(code: int) -> int:
    """A coarse script block of a code point: ASCII, CJK (kana, ideographs, full-width forms),
    Hangul, else its 128-point block (Cyrillic, Greek, Arabic...)."""
    if code < 0x80:
        return -1
    if 0x2E80 <= code < 0xA000 or 0xF900 <= code < 0xFB00 or 0xFF00 <= code < 0xFFF0:
        return -2
    if 0xAC00 <= code < 0xD7B0:
        return -3
    return code >> 7
