"""A document's text, cut into located segments: a PDF's pages, a deck's slides, a
spreadsheet's sheets, a DOCX/HTML/EPUB/text file's sections.

Libraries (the ``docs`` extra; imported only when a file of their format is read):

* PDF: ``pypdf`` (pure Python, no dependencies). markitdown's PDF path turns prose into
  fake pipe tables and docling needs hub weights for every PDF (../shared/STACK.md).
* DOCX, PPTX, HTML, EPUB: ``markitdown``'s converters, called directly with the
  format named by the file's extension (no ``MarkItDown()``: it loads magika's model to
  guess a file's type, which the extension already tells).
* XLSX: ``openpyxl`` read-only, the cells that hold a value (``sheets``; markitdown's went
  through pandas, which fills in a sheet's whole used range).
* text and markdown: read as UTF-8 (bad bytes replaced).

Every reader returns an ``Extracted``; a file it cannot read raises ``Unreadable`` with
one line saying why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from recall.errors import RecallError
from recall.notes.documents import shown
from recall.notes.documents.sheets import sheet_tables
from recall.privacy.decoding import Binary, decode

# extension -> format name (what ``Extracted.format`` and the page say)
TEXT_FORMATS = {".txt": "text", ".text": "text", ".rst": "text", ".md": "markdown", ".markdown": "markdown"}
OFFICE_FORMATS = {".docx": "docx", ".pptx": "pptx", ".xlsx": "xlsx", ".html": "html", ".htm": "html",
                  ".epub": "epub"}
PDF_FORMATS = {".pdf": "pdf"}
# format -> what its reader sees of a file (``recall.notes.documents.shown``)
SHOWN = {"html": shown.shown_html, "docx": shown.shown_docx, "xlsx": shown.shown_xlsx, "pptx": shown.shown_pptx}
DOCUMENT_FORMATS = {**TEXT_FORMATS, **OFFICE_FORMATS, **PDF_FORMATS}


class Unreadable(Exception):
    """A file that cannot be converted: its message is the one line the user sees. Its bytes are
    the reason: it is not converted again until they change (``recall.notes.documents.failed``)."""


class TooSlow(Unreadable, RecallError):
    """A conversion past its time limit (``convert_timeout_s``): the file, or a machine under load,
    may be why. Tried again at the next index, remembered once it times out twice in a row
    (``recall.notes.documents.failed.timed_out``)."""


class Unavailable(Unreadable):
    """A file that cannot be converted here for a reason outside it (ffmpeg missing, a converter
    that fails to load): tried again at the next index."""


@dataclass
class Extracted:
    format: str
    title: str  # from the file's metadata or its first heading; "" when it has none
    segments: list[tuple[str, str]] = field(default_factory=list)  # (location, text), in order
    notes: list[str] = field(default_factory=list)  # what the user should know (pages without text)

    @property
    def text(self) -> str:
        return "\n\n".join(t for _, t in self.segments)


def extract(path: Path, fmt: str) -> Extracted:
    """The located text of ``path`` read as ``fmt`` (a value of ``DOCUMENT_FORMATS``), or as what
    its first bytes say it is when its extension lies (a DOCX saved as ``.pdf``), said."""
    real = _real_format(path, fmt)
    if real != fmt:
        got = extract(path, real)
        got.notes.append(f"its content is {_a(real.upper())} file, not {_a(fmt.upper())}: read as one "
                         f"(renaming it to .{real} makes it plain)")
        return got
    if fmt == "pdf":
        return _pdf(path)
    if fmt in ("text", "markdown"):
        text, said = _text(path)
        return Extracted(fmt, first_heading(text) if fmt == "markdown" else "", sections(text), said)
    if fmt == "html":
        _text(path)  # a file named .html that holds an image or an archive: one line, no garbage indexed
    return _office(path, fmt)


_ZIPPED = ("docx", "xlsx", "pptx", "epub")


def _real_format(path: Path, fmt: str) -> str:
    """``fmt``, or the format the file's first bytes name when they name another one recall reads
    (a PDF's ``%PDF-``; an Office zip by its parts), a text file's too (a PDF named .txt); an old
    or encrypted Office file is ``Unreadable``."""
    if fmt not in ("pdf", "text", "markdown", "html", *_ZIPPED):
        return fmt
    with path.open("rb") as fh:
        head = fh.read(8)
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"\xd0\xcf\x11\xe0"):  # an OLE compound file: a password-protected Office file, or .doc
        raise Unreadable("password-protected, or an old binary Office file (.doc/.xls/.ppt): save it unprotected "
                         f"as .{fmt if fmt != 'pdf' else 'docx'} to index it; skipped")
    if head.startswith(b"PK"):
        import zipfile

        try:
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
        except (zipfile.BadZipFile, OSError, ValueError):
            return fmt
        parts = {"word/": "docx", "xl/": "xlsx", "ppt/": "pptx", "META-INF/container.xml": "epub"}
        for prefix, zipped in parts.items():
            if any(n.startswith(prefix) for n in names):
                return zipped
    return fmt


def _text(path: Path) -> tuple[str, list[str]]:
    """The text of a file that should be text (``recall.privacy.decoding``: the one way recall
    reads bytes as text, a note's too) and what was done to read it; ``Unreadable`` when binary."""
    try:
        return decode(path.read_bytes(), strict=True)
    except Binary as exc:
        raise Unreadable(str(exc)) from None


def _pdf(path: Path) -> Extracted:
    import logging

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError, PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings on damaged files: our one line says it
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("encrypted PDF (needs a password); skipped")
        meta = reader.metadata
        title = str(meta.title).strip() if meta is not None and meta.title else ""
        segments, empty = [], []
        for n, page in enumerate(reader.pages, 1):
            shown.without_unseen_pdf_text(page)  # drawn as nothing, or too small to read
            text = _tidy(_on_page(page))
            if text:
                segments.append((f"p. {n}", text))
            else:
                empty.append(n)
    except Unreadable:
        raise
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
        raise Unreadable(f"not a PDF pypdf can read ({_first_line(exc)}); skipped") from exc
    notes = [f"{len(empty)} page(s) without a text layer (scanned?) not indexed: p. {_ranges(empty)}"] if empty else []
    # A title in the metadata over no text at all is text nobody sees on a page: not a headline.
    return Extracted("pdf", title if segments else "", segments, notes)


def _on_page(page) -> str:
    """A PDF page's text as a viewer shows it: what is drawn outside the page's visible box (its
    CropBox within its MediaBox, two points of slack) is left out; an outside tester's line drawn
    at x = -2000 was the document's headline (stop 49, AC06). A page with nothing outside reads
    as pypdf reads it."""
    try:
        crop, media = page.cropbox, page.mediabox
        box = (max(float(crop.left), float(media.left)) - 2, max(float(crop.bottom), float(media.bottom)) - 2,
               min(float(crop.right), float(media.right)) + 2, min(float(crop.top), float(media.top)) + 2)
    except (TypeError, ValueError, AttributeError, KeyError):
        return page.extract_text() or ""
    pieces: list[tuple[str, bool]] = []

    def visit(text: str, cm: list, tm: list, *_: object) -> None:
        try:
            x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
            y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        except (TypeError, IndexError):
            pieces.append((text, True))
            return
        pieces.append((text, not text.strip() or (box[0] <= x <= box[2] and box[1] <= y <= box[3])))

    text = page.extract_text(visitor_text=visit) or ""
    return text if all(shown for _, shown in pieces) else "".join(t for t, shown in pieces if shown)


def _office(path: Path, fmt: str) -> Extracted:
    """DOCX, PPTX, HTML and EPUB through markitdown's converter for the format; XLSX through
    ``recall.notes.documents.sheets`` (openpyxl, the cells that hold a value)."""
    if fmt == "xlsx":
        import openpyxl  # noqa: F401 - missing: the docs extra is (ImportError), not the file

        converter, library = None, "openpyxl"
    else:
        from markitdown import converters as c

        converter, library = {"docx": c.DocxConverter, "pptx": c.PptxConverter, "html": c.HtmlConverter,
                              "epub": c.EpubConverter}[fmt](), "markitdown"
    _check_unpacked(path, fmt)
    try:
        with path.open("rb") as fh:
            reader = SHOWN.get(fmt)
            stream = reader(fh.read()) if reader else fh
            if converter is None:  # sheets are located by their names: not the workbook's title
                return Extracted(fmt, "", [(f"sheet {name}", text) for name, table in sheet_tables(stream)
                                           if (text := _tidy(table))])
            result = converter.convert(stream, _stream_info(path))
    except shown.AllHidden as exc:
        raise Unreadable(f"{exc}; skipped") from exc
    except (MemoryError, RecursionError):
        raise  # what it is, said by the child (``isolated``): not a file the library cannot read
    except Exception as exc:  # noqa: BLE001 - each library raises its own (zipfile, lxml, KeyError...)
        if type(exc).__name__ == "MissingDependencyException":  # markitdown's: a library missing, not the file
            raise Unavailable(f"{fmt} needs {_first_line(exc)} (pip install 'recall-memory[docs]'); skipped") from exc
        raise Unreadable(f"not {_a(fmt.upper())} file {library} can read ({_first_line(exc)}); skipped") from exc
    text = result.markdown or ""
    if fmt == "pptx":
        segs = _split_on(text, re.compile(r"<!-- Slide number: (\d+) -->"), "slide {}")
    else:
        if fmt == "epub":  # markitdown puts the book's metadata first ("**Title:** ..."): not its text
            text = re.sub(r"\A(?:\*\*\w+:\*\* .*\n?)+", "", text)
        segs = sections(text)
    title = (result.title or "").strip() or first_heading(text)
    return Extracted(fmt, title, segs)


def _stream_info(path: Path):
    from markitdown import StreamInfo

    return StreamInfo(extension=path.suffix.lower(), filename=path.name, local_path=str(path))


# A DOCX, PPTX, XLSX or EPUB (a zip) that unpacks to more than this many times its size,
# and to over UNPACKED_MB, is a zip bomb, not a document: its XML compresses ~10x.
UNPACK_RATIO, UNPACKED_MB = 50, 100


def _check_unpacked(path: Path, fmt: str) -> None:
    """``Unreadable`` for a zip bomb, found from the zip's directory before anything unpacks."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            unpacked = sum(i.file_size for i in z.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return  # not a zip (HTML) or a damaged one: markitdown says what is wrong with it
    packed = max(1, path.stat().st_size)
    if unpacked > UNPACKED_MB * 1_000_000 and unpacked > UNPACK_RATIO * packed:
        raise Unreadable(f"unpacks to {unpacked / 1e6:,.0f} MB from {packed / 1e6:,.1f} MB (a zip bomb?); skipped")


def _a(word: str) -> str:
    """"a" or "an" before a format's name as it is read aloud ("an EPUB", "an XLSX", "a DOCX")."""
    return f"an {word}" if word[:1] in "AEFHILMNORSX" else f"a {word}"


def _split_on(text: str, marker: re.Pattern, label: str) -> list[tuple[str, str]]:
    """Segments that start at each ``marker`` match, located by ``label`` with its group."""
    out: list[tuple[str, str]] = []
    matches = list(marker.finditer(text))
    if matches and (head := _tidy(text[: matches[0].start()])):
        out.append(("", head))
    for m, nxt in zip(matches, [*matches[1:], None], strict=True):
        body = _tidy(text[m.end() : nxt.start() if nxt else len(text)])
        if body:
            out.append((label.format(m.group(1).strip()), body))
    return out or ([("", t)] if (t := _tidy(text)) else [])


HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)


def sections(text: str) -> list[tuple[str, str]]:
    """Markdown cut at its headings (levels 1-3); each section is located by its heading
    path ("Install > Linux"). Text before the first heading has no location."""
    out: list[tuple[str, str]] = []
    path: list[tuple[int, str]] = []  # the open headings: (level, title)
    last, loc = 0, ""
    for m in HEADING.finditer(text):
        level = len(m.group(1))
        if level > 3:
            continue
        body = _tidy(text[last : m.start()])
        if body:
            out.append((loc, body))
        path = [*(h for h in path if h[0] < level), (level, m.group(2).strip())]
        loc = " > ".join(title for _, title in path if title)
        last = m.start()  # the heading stays in its section's text
    body = _tidy(text[last:])
    if body:
        out.append((loc, body))
    return out


def first_heading(text: str) -> str:
    m = HEADING.search(text[:20_000])
    return m.group(2).strip() if m else ""


def _tidy(text: str) -> str:
    """Runs of blank lines and trailing spaces collapsed (converters leave many)."""
    text = re.sub(r"(?<![ \t])[ \t]+\n", "\n", text)  # from a run's start only: linear in a long run
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:120] or type(exc).__name__


def _ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 7] -> "1-3, 7"."""
    out, start = [], None
    for i, n in enumerate(numbers):
        if start is None:
            start = n
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            out.append(str(start) if start == n else f"{start}-{n}")
            start = None
    return ", ".join(out)
