"""What a reader of a document sees, before a converter reads it: the parts its application hides
are taken out, as a stream the converter reads instead of the file.

A hidden part is where a hostile file puts text nobody reviewing it sees and an agent would read
as the note (an outside tester's orders in each became the headline handed over; stops 44, 45):

* HTML: elements no browser draws (``<noscript>``, ``<template>``, ``<datalist>``...), elements
  with ``hidden``, ``aria-hidden="true"``, a style that hides them
  (``recall.notes.rendered.hiding_style``: not drawn, drawn as nothing, off the page, collapsed
  with its overflow hidden) given inline or by a
  ``<style>`` rule whose selector the page's elements match, templates, comments (``shown_html``,
  with BeautifulSoup and its CSS selectors);
* DOCX: runs marked ``<w:vanish/>``, in white, or in type of 1 pt or less, and paragraphs and
  runs of a style that hides them (``shown_docx``);
* XLSX: hidden and very hidden sheets, hidden or zero-height rows, hidden or zero-width columns,
  cells of the ``;;;`` number format (``shown_xlsx``), and the rows past ``MAX_ROWS`` of a sheet
  (no reader's: what ``max_chunks`` would never keep);
* PPTX: hidden slides and shapes hidden in the Selection Pane (``shown_pptx``); speaker notes
  stay: PowerPoint shows them under the slide.

The Office formats are zips of XML: each is rewritten in memory, XML text edited with patterns
(the parts are machine-written, one element per tag; a full parse of each sheet would cost as
much as the conversion itself). A file with nothing hidden is handed over as it came.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable
from typing import Any

from recall.errors import RecallError
from recall.notes.rendered import UNDRAWN_ELEMENTS, hiding_style

# Elements a browser never draws in a page's body (its head and title are the page's name).
_UNDRAWN = frozenset(UNDRAWN_ELEMENTS) - {"head", "title", "style"}

_CSS_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_TRUE = r"(?:1|true|on)"
# A run of a DOCX (``<w:r>``, none nested) and what in its properties hides it from a reader:
# ``<w:vanish/>`` (Word does not show it; mammoth reads it), white or next to it, at most 2 pt (4 half-points).
_RUN = re.compile(r"<w:r(?=[\s>])(?:(?!</w:r>).)*?</w:r>", re.S)
_HIDDEN_RUN_PROPERTY = re.compile(rf"<w:vanish(?:\s+w:val=\"{_TRUE}\")?\s*/>"
                                  r"|<w:color\s+w:val=\"(?:(?:F[0-9A-F]){3}|white)\"|<w:sz\s+w:val=\"[0-4]\"", re.I)
# ... or in black on a black highlight (an outside tester's, stop 55, with near-white and 1.5-pt type)
_BLACK_HIGHLIGHT = re.compile(r"<w:highlight\s+w:val=\"black\"", re.I)
_BLACK = re.compile(r"<w:color\s+w:val=\"000000\"", re.I)


def _hidden_run(properties: str) -> bool:
    return bool(_HIDDEN_RUN_PROPERTY.search(properties)
                or _BLACK_HIGHLIGHT.search(properties) and _BLACK.search(properties))


_P = r"(?:\w+:)?"  # a namespace prefix some writers put on every element (``<x:row>``)
_HIDDEN_SHEET = re.compile(rf"<{_P}sheet\b[^>]*\bstate=\"(?:hidden|veryHidden)\"[^>]*/>")
_DEFINED_NAMES = re.compile(rf"<({_P})definedNames\b.*?</\1definedNames>|<{_P}definedNames\s*/>", re.S)
_ZERO = r"0(?:\.0*)?"
# A row Excel does not show: hidden, or of height 0; a column likewise (``_shown_cells``).
_HIDDEN_ROW = re.compile(rf"<({_P})row\b[^>]*\b(?:hidden=\"{_TRUE}\"|ht=\"{_ZERO}\")[^>]*?(?:/>|>.*?</\1row>)", re.S)
_HIDES_IN_SHEET = re.compile(rf"hidden=\"{_TRUE}\"|\b(?:ht|width)=\"{_ZERO}\"")
# A PPTX shape hidden in the Selection Pane (``<p:cNvPr hidden="1">``): shown neither in editing
# nor in the slide show (an outside tester's AC04).
_SHAPE = re.compile(r"<p:(sp|pic|graphicFrame|cxnSp)\b(?:(?!</p:\1>).)*?</p:\1>", re.S)
_HIDDEN_SHAPE = re.compile(rf"<p:cNvPr\b[^>]*\bhidden=\"{_TRUE}\"")
_DOCX_STYLE = re.compile(r"<w:style\b[^>]*\bw:styleId=\"([^\"]+)\"[^>]*>(.*?)</w:style>", re.S)
_PARAGRAPH = re.compile(r"<w:p(?=[\s>])(?:(?!</w:p>).)*?</w:p>", re.S)
_COL = re.compile(rf"<{_P}col\b[^>]*>")
_CELL = re.compile(rf"<({_P})c\b[^>]*?\br=\"([A-Z]+)\d+\"[^>]*?(?:/>|>.*?</\1c>)", re.S)
_HIDDEN_SLIDE = re.compile(r"<p:sld\b[^>]*\bshow=\"(?:0|false)\"")
_RELATION = re.compile(r"<Relationship\b[^>]*>")


class AllHidden(RecallError):
    """A workbook whose every sheet is hidden: nothing a reader sees."""


def shown_html(raw: bytes) -> io.BytesIO:
    """``raw`` HTML without what a browser hides, and without comments."""
    from bs4 import BeautifulSoup, Comment

    soup = BeautifulSoup(raw, "html.parser")
    for comment in soup.find_all(string=lambda t: isinstance(t, Comment)):
        comment.extract()
    hidden = [tag for tag in soup.find_all(True)
              if tag.name in _UNDRAWN or tag.has_attr("hidden") or str(tag.get("aria-hidden", "")).lower() == "true"
              or hiding_style(str(tag.get("style", "")))]
    for style in soup.find_all("style"):
        for selectors, declarations in _CSS_RULE.findall(style.get_text()):
            if hiding_style(declarations):
                for selector in selectors.split(","):
                    try:
                        hidden += soup.select(selector.strip())
                    except Exception:  # noqa: BLE001 - a selector soupsieve cannot read (@media...): not applied
                        continue
    for tag in hidden:
        if tag.parent is not None:  # not inside one already taken out
            tag.decompose()
    return io.BytesIO(str(soup).encode("utf-8"))


def shown_docx(raw: bytes) -> io.BytesIO:
    """``raw`` DOCX without the runs Word hides, and the paragraphs and runs of a style that hides
    its text (a paragraph style with Font > Hidden; an outside tester's AC04)."""
    styles = _text(zipfile.ZipFile(io.BytesIO(raw)), "word/styles.xml")
    hiding = {m.group(1) for m in _DOCX_STYLE.finditer(styles) if _hidden_run(m.group(2))}

    def styled(xml: str, kind: str) -> bool:
        found = re.search(rf"<w:{kind}\s+w:val=\"([^\"]+)\"", xml)
        return bool(found and found.group(1) in hiding)

    def edit(name: str, xml: str) -> str:
        if hiding:
            xml = _PARAGRAPH.sub(lambda m: "" if styled(_paragraph_properties(m.group(0)), "pStyle") else m.group(0),
                                 xml)
        if not (_HIDDEN_RUN_PROPERTY.search(xml) or _BLACK_HIGHLIGHT.search(xml) or hiding):
            return xml
        return _RUN.sub(lambda m: "" if _hidden_run(_properties(m.group(0)))
                        or styled(_properties(m.group(0)), "rStyle") else m.group(0), xml)

    return _rewritten(raw, edit, lambda name: name == "word/document.xml")


def _paragraph_properties(paragraph: str) -> str:
    m = re.search(r"<w:pPr\b.*?</w:pPr>", paragraph, re.S)
    return m.group(0) if m else ""


def _properties(run: str) -> str:
    """A run's ``<w:rPr>``, "" if it has none (its text may hold anything)."""
    m = re.search(r"<w:rPr\b.*?</w:rPr>", run, re.S)
    return m.group(0) if m else ""


def shown_xlsx(raw: bytes) -> io.BytesIO:
    """``raw`` XLSX without its hidden sheets, rows and columns; ``AllHidden`` when no sheet is left."""
    def edit(name: str, xml: str) -> str:
        if name == "xl/workbook.xml":
            if not _HIDDEN_SHEET.search(xml):
                return xml
            xml = _HIDDEN_SHEET.sub("", xml)
            if not re.search(rf"<{_P}sheet\b", xml):
                raise AllHidden("every sheet of it is hidden; nothing to index")
            # a name scoped to a sheet counts sheets by position: the positions moved
            return _DEFINED_NAMES.sub("", xml)
        xml = _first_rows(xml)
        return _shown_cells(_HIDDEN_ROW.sub("", xml), blank) if _HIDES_IN_SHEET.search(xml) or blank else xml

    blank = _blank_styles(_text(zipfile.ZipFile(io.BytesIO(raw)), "xl/styles.xml"))

    return _rewritten(raw, edit, lambda name: name == "xl/workbook.xml"
                      or name.startswith("xl/worksheets/") and name.endswith(".xml"))


# A sheet's rows read at most: far more than ``[documents] max_chunks`` chunks hold. An outside
# tester's 300,000-row export took the converter past its memory and time and was skipped whole,
# its first sheet too (stop 45); the index says where a document was cut.
MAX_ROWS = 20_000
_ROW_END = re.compile(rf"</{_P}row>")
_SHEET_DATA_END = re.compile(rf"</{_P}sheetData>")


def _first_rows(sheet: str) -> str:
    """A sheet's XML with its first ``MAX_ROWS`` rows only."""
    if len(sheet) < MAX_ROWS * 20:  # too small to hold that many rows
        return sheet
    for n, m in enumerate(_ROW_END.finditer(sheet), 1):
        if n == MAX_ROWS:
            end = _SHEET_DATA_END.search(sheet, m.end())
            return sheet[:m.end()] + sheet[end.start():] if end else sheet
    return sheet


def _shown_cells(sheet: str, blank: set[str]) -> str:
    """A sheet's XML without the cells of its hidden or zero-width columns (``<col min max
    hidden>``), nor those whose style shows nothing (``blank``: the ``;;;`` number format)."""
    hidden: set[int] = set()
    for col in _COL.findall(sheet):
        if re.search(rf"\b(?:hidden=\"{_TRUE}\"|width=\"{_ZERO}\")", col):
            lo, hi = (re.search(rf"\b{k}=\"(\d+)\"", col) for k in ("min", "max"))
            if lo and hi:
                hidden.update(range(int(lo.group(1)), min(int(hi.group(1)), 16384) + 1))
    if not hidden and not blank:
        return sheet

    def shown(m: re.Match) -> str:
        style = re.search(r"\bs=\"(\d+)\"", m.group(0)[:m.group(0).find(">") + 1])
        return "" if _column(m.group(2)) in hidden or (style and style.group(1) in blank) else m.group(0)

    return _CELL.sub(shown, sheet)


def _blank_styles(styles: str) -> set[str]:
    """The cell styles (their index in ``cellXfs``) whose number format shows nothing (``;;;``:
    Excel draws the cell empty; an outside tester's AC04)."""
    formats = {m.group(1) for tag in re.findall(rf"<{_P}numFmt\b[^>]*>", styles)
               if re.search(r"\bformatCode=\"(?:;;;|;;;@)\"", tag) and (m := re.search(r"\bnumFmtId=\"(\d+)\"", tag))}
    if not formats:
        return set()
    xfs = re.search(rf"<({_P})cellXfs\b.*?</\1cellXfs>", styles, re.S)
    tags = re.findall(rf"<{_P}xf\b[^>]*>", xfs.group(0)) if xfs else []
    return {str(i) for i, tag in enumerate(tags)
            if (fmt := re.search(r"\bnumFmtId=\"(\d+)\"", tag)) and fmt.group(1) in formats}


def _column(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n


def shown_pptx(raw: bytes) -> io.BytesIO:
    """``raw`` PPTX without its hidden slides (taken out of the deck's list of slides) and hidden
    shapes."""
    src = zipfile.ZipFile(io.BytesIO(raw))
    hidden = {name for name in src.namelist()
              if re.fullmatch(r"ppt/slides/slide\d+\.xml", name) and _HIDDEN_SLIDE.search(_head(src, name))}
    raw = _rewritten(raw, lambda name, xml: _SHAPE.sub(
        lambda m: "" if _HIDDEN_SHAPE.search(m.group(0)) else m.group(0), xml) if _HIDDEN_SHAPE.search(xml) else xml,
        lambda name: re.fullmatch(r"ppt/slides/slide\d+\.xml", name) is not None).getvalue()
    if not hidden:
        return io.BytesIO(raw)
    ids = set()
    for rel in _RELATION.findall(_text(src, "ppt/_rels/presentation.xml.rels")):
        target, rid = re.search(r"\bTarget=\"([^\"]*)\"", rel), re.search(r"\bId=\"([^\"]*)\"", rel)
        if target and rid and "ppt/" + target.group(1).lstrip("/").removeprefix("ppt/") in hidden:
            ids.add(rid.group(1))

    def edit(name: str, xml: str) -> str:
        return re.sub(r"<p:sldId\b[^>]*\br:id=\"([^\"]*)\"[^>]*/>",
                      lambda m: "" if m.group(1) in ids else m.group(0), xml)

    return _rewritten(raw, edit, lambda name: name == "ppt/presentation.xml")


def _head(src: zipfile.ZipFile, name: str) -> str:
    with src.open(name) as fh:
        return fh.read(4096).decode("utf-8", errors="replace")


def _text(src: zipfile.ZipFile, name: str) -> str:
    try:
        return src.read(name).decode("utf-8", errors="replace")
    except KeyError:
        return ""


def _rewritten(raw: bytes, edit: Callable[[str, str], str], parts: Callable[[str], bool]) -> io.BytesIO:
    """The zip ``raw`` with each XML part ``parts`` names passed through ``edit`` (name, text) ->
    text; ``raw`` itself, nothing written again, where no part changed (most files)."""
    src = zipfile.ZipFile(io.BytesIO(raw))
    edited: dict[str, bytes] = {}
    for name in src.namelist():
        if parts(name):
            text = src.read(name).decode("utf-8", errors="replace")
            new = edit(name, text)
            if new != text:
                edited[name] = new.encode("utf-8")
    if not edited:
        return io.BytesIO(raw)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item, edited.get(item.filename) or src.read(item))
    out.seek(0)
    return out


# PDF: text drawn as nothing (render mode 3, 7: clip only) and type under MIN_PDF_TEXT_PT, taken out of
# a page's content before its text is read (an outside tester's, stop 55). Invisible text inside an
# image's box stays: it is a scan's OCR layer (ocrmypdf's), what a reader sees in the image.
MIN_PDF_TEXT_PT = 1.0
_SHOWS = (b"Tj", b"TJ", b"'", b'"')
# What may draw text unseen: render mode 3 or 7, a size under one, a text or space matrix that shrinks.
_MAYBE_UNSEEN = re.compile(rb"(?<![\w.])[37]\s+Tr\b|(?<![\w.])-?(?:\d*\.\d+|0)\s+Tf\b"
                           rb"|(?<![\w.])(?:-?[\d.]+\s+){3}-?(?:0?\.\d+|0)\s+-?[\d.]+\s+-?[\d.]+\s+(?:Tm|cm)\b")


def without_unseen_pdf_text(page: Any) -> None:
    """``page`` (a pypdf page) with the text no viewer shows emptied in its content stream."""
    from pypdf.generic import ArrayObject, ContentStream, NameObject, TextStringObject

    contents = page.get_contents()
    if contents is None:
        return
    if not _MAYBE_UNSEEN.search(contents.get_data()):  # most pages: their content is parsed once, by the reader
        return
    stream = ContentStream(contents, page.pdf)
    changed = False
    for i, (operands, operator), unseen in _text_shown(page, stream.operations):
        if unseen:
            empty = ArrayObject() if operator == b"TJ" else TextStringObject("")
            stream.operations[i] = ([*operands[:-1], empty], operator)
            changed = True
    if changed:  # the reader's page, in memory only (``replace_contents`` is a writer's)
        page[NameObject("/Contents")] = stream


def _mul(a: list[float], b: list[float]) -> list[float]:
    """The matrix ``a`` then ``b`` (PDF's [a b c d e f] row-vector convention)."""
    return [a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
            a[2] * b[1] + a[3] * b[3], a[4] * b[0] + a[5] * b[2] + b[4], a[4] * b[1] + a[5] * b[3] + b[5]]


def _xobjects(page: Any) -> Any:
    try:
        return page["/Resources"].get_object().get("/XObject", {}).get_object()
    except (KeyError, AttributeError, TypeError):
        return {}


def _text_shown(page: Any, operations: list) -> list[tuple[int, tuple, bool]]:
    """(index, operation, unseen) for each operation that shows text, in one pass over the page's
    graphics state; whether it is unseen is decided once every image's box (x0, y0, x1, y1, in
    the page's space) is known."""
    xobjects, boxes, shows = _xobjects(page), [], []
    ctm, tm, line, size, mode, saved = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0], None, None, 0.0, 0, []
    for i, (operands, operator) in enumerate(operations):
        try:
            if operator == b"q":
                saved.append((ctm, size, mode))
            elif operator == b"Q" and saved:
                ctm, size, mode = saved.pop()
            elif operator == b"cm" and len(operands) == 6:
                ctm = _mul([float(v) for v in operands], ctm)
            elif operator == b"Do" and operands:
                target = xobjects.get(operands[0])
                if target is not None and target.get_object().get("/Subtype") == "/Image":
                    xs = [ctm[4], ctm[0] + ctm[4], ctm[2] + ctm[4], ctm[0] + ctm[2] + ctm[4]]
                    ys = [ctm[5], ctm[1] + ctm[5], ctm[3] + ctm[5], ctm[1] + ctm[3] + ctm[5]]
                    boxes.append((min(xs), min(ys), max(xs), max(ys)))
            elif operator == b"BI":
                boxes.append((float("-inf"), float("-inf"), float("inf"), float("inf")))  # an inline image: anywhere
            elif operator == b"BT":
                tm = line = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
            elif operator == b"Tm" and len(operands) == 6:
                tm = line = [float(v) for v in operands]
            elif operator in (b"Td", b"TD") and len(operands) == 2 and line is not None:
                tm = line = _mul([1.0, 0.0, 0.0, 1.0, float(operands[0]), float(operands[1])], line)
            elif operator == b"Tf" and len(operands) == 2:
                size = float(operands[1])
            elif operator == b"Tr" and operands:
                mode = int(operands[0])
            elif operator in _SHOWS and tm is not None:
                shows.append((i, (operands, operator), _mul(tm, ctm), size, mode))
        except (TypeError, ValueError, AttributeError, KeyError):
            continue  # an operation it cannot read changes nothing it knows of
    return [(i, op, _unseen(matrix, sz, md, boxes)) for i, op, matrix, sz, md in shows]


def _unseen(matrix: list[float], size: float, mode: int, boxes: list) -> bool:
    scale = abs(size) * (matrix[2] ** 2 + matrix[3] ** 2) ** 0.5  # the height of its type on the page
    if 0 < scale < MIN_PDF_TEXT_PT or size and not scale:
        return True
    if mode not in (3, 7):
        return False
    x, y = matrix[4], matrix[5]
    return not any(x0 - 2 <= x <= x1 + 2 and y0 - 2 <= y <= y1 + 2 for x0, y0, x1, y1 in boxes)
