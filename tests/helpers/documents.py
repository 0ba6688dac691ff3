"""Small documents made by the libraries that write each format (python-docx,
python-pptx, openpyxl), by hand where a format is a few lines (PDF, EPUB, HTML), and
screenshots rendered with Pillow: the tests' and benchmarks' fixtures, made fresh."""

from __future__ import annotations

import zipfile
from pathlib import Path


def make_pdf(path: Path, pages: list[str], title: str = "") -> Path:
    """A PDF with one line of Helvetica text per page line (ASCII), written by hand: no
    PDF writer library is needed, and pypdf reads it back as any PDF."""
    objs: list[bytes] = []
    kids = []
    font_obj = 3
    for i, text in enumerate(pages):
        lines = text.splitlines() or [""]
        ops = ["BT", "/F1 11 Tf", "14 TL", "50 780 Td"]
        for line in lines:
            esc = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({esc}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        page_no = 4 + 2 * i
        kids.append(page_no)
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> "
                    + f"/Contents {page_no + 1} 0 R >>".encode())
        objs.append(f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream")
    info = f"<< /Title ({title}) >>".encode() if title else b"<< >>"
    head = [b"<< /Type /Catalog /Pages 2 0 R >>",
            f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>".encode(),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    assert font_obj == len(head)
    every = [*head, *objs, info]
    return _write_pdf(path, every, f" /Info {len(every)} 0 R")


def make_pdf_drawn(path: Path, texts: list[tuple[float, float, str]], crop: str = "") -> Path:
    """A one-page PDF (595 x 842) drawing each (x, y, ASCII text), with a ``/CropBox`` when given."""
    ops = []
    for x, y, text in texts:
        esc = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        ops.append(f"BT /F1 11 Tf {x:g} {y:g} Td ({esc}) Tj ET")
    stream = "\n".join(ops).encode("latin-1")
    box = f" /CropBox [{crop}]" if crop else ""
    return _write_pdf(path, [
        b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842]{box} /Resources << /Font << /F1 3 0 R >> >> "
        "/Contents 5 0 R >>".encode(),
        f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream"])


def make_pdf_ops(path: Path, ops: list[str]) -> Path:
    """A one-page PDF (595 x 842) whose content stream is ``ops`` as written, with a font ``/F1``
    and a one-pixel grey image ``/Im1`` (``q W 0 0 H X Y cm /Im1 Do Q`` draws it over a box)."""
    stream = "\n".join(ops).encode("latin-1")
    return _write_pdf(path, [
        b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> "
        b"/XObject << /Im1 6 0 R >> >> /Contents 5 0 R >>",
        f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream",
        b"<< /Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 8 "
        b"/Length 1 >>\nstream\n\x80\nendstream"])


def _write_pdf(path: Path, objects: list[bytes], trailer: str = "") -> Path:
    """``objects`` (1 is the catalog) as a PDF file with its cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{trailer} >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode()
    path.write_bytes(bytes(out))
    return path


def make_docx(path: Path, title: str, sections: list[tuple[str, str]]) -> Path:
    import docx

    doc = docx.Document()
    doc.core_properties.title = title
    doc.add_heading(title, level=1)
    for heading, text in sections:
        doc.add_heading(heading, level=2)
        doc.add_paragraph(text)
    doc.save(str(path))
    return path


def make_pptx(path: Path, slides: list[tuple[str, str]]) -> Path:
    from pptx import Presentation

    prs = Presentation()
    for title, body in slides:
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    prs.save(str(path))
    return path


def make_xlsx(path: Path, sheets: dict[str, list[list[object]]]) -> Path:
    from openpyxl import Workbook

    wb = Workbook()
    wb.remove(wb.active)
    for name, rows in sheets.items():
        ws = wb.create_sheet(name)
        for row in rows:
            ws.append(row)
    wb.save(str(path))
    return path


def make_html(path: Path, title: str, sections: list[tuple[str, str]]) -> Path:
    body = "".join(f"<h2>{h}</h2><p>{t}</p>" for h, t in sections)
    path.write_text(f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>",
                    encoding="utf-8")
    return path


def make_epub(path: Path, title: str, chapters: list[tuple[str, str]]) -> Path:
    """A minimal EPUB 3: mimetype, container, package document, one XHTML file per chapter."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        z.writestr("META-INF/container.xml",
                   '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:'
                   'container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/'
                   'oebps-package+xml"/></rootfiles></container>')
        items = "".join(f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
                        for i in range(len(chapters)))
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
        z.writestr("OEBPS/content.opf",
                   '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
                   'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
                   f'<dc:title>{title}</dc:title><dc:identifier id="id">x</dc:identifier><dc:language>en'
                   f'</dc:language></metadata><manifest>{items}</manifest><spine>{spine}</spine></package>')
        for i, (heading, text) in enumerate(chapters):
            z.writestr(f"OEBPS/c{i}.xhtml",
                       '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>'
                       f'{heading}</title></head><body><h2>{heading}</h2><p>{text}</p></body></html>')
    return path


def cjk_font() -> str | None:
    """A font file with Japanese glyphs, if the machine has one (fonts-noto-cjk, fonts-ipafont...)."""
    import glob

    for pattern in ("/usr/share/fonts/**/NotoSansCJK*.tt*", "/usr/share/fonts/**/*ipag*.tt*",
                    "/usr/share/fonts/**/*IPA*.tt*", "/usr/share/fonts/**/*DroidSansFallback*.tt*",
                    "/usr/share/fonts/**/*wqy*.tt*", "/usr/share/fonts/**/*VL-Gothic*.tt*"):
        found = sorted(glob.glob(pattern, recursive=True))
        if found:
            return found[0]
    return None


def latin_font() -> str | None:
    import glob

    for pattern in ("/usr/share/fonts/**/DejaVuSans.ttf", "/usr/share/fonts/**/LiberationSans-Regular.ttf"):
        found = sorted(glob.glob(pattern, recursive=True))
        if found:
            return found[0]
    return None


def make_screenshot(path: Path, lines: list[str], font: str | None = None, size: tuple[int, int] = (1280, 800),
                    font_px: int = 22) -> Path:
    """A screenshot-like image: dark text lines on a light window with a title bar."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", size, (250, 250, 250))
    draw = ImageDraw.Draw(img)
    draw.rectangle([0, 0, size[0], 36], fill=(60, 63, 65))
    face = ImageFont.truetype(font, font_px) if font else ImageFont.load_default(font_px)
    y = 60
    for line in lines:
        draw.text((40, y), line, fill=(20, 20, 20), font=face)
        y += int(font_px * 1.8)
    img.save(path)
    return path


# --- files made to take a converter down (tests/core/notes/test_hostile_documents.py) ---------


def make_flate_bomb_pdf(path: Path, mb: int = 80) -> Path:
    """A one-page PDF whose compressed page stream inflates to ``mb`` MB of spaces (~80 KB on disk)."""
    import zlib

    squeeze = zlib.compressobj(9)
    data = b"".join(squeeze.compress(b" " * (1 << 20)) for _ in range(mb)) + squeeze.flush()
    every = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
             b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
             f"<< /Length {len(data)} /Filter /FlateDecode >>\nstream\n".encode() + data + b"\nendstream"]
    return _write_pdf(path, every)


def make_zip_bomb_docx(path: Path, mb: int = 120) -> Path:
    """A real DOCX whose document.xml carries ``mb`` MB of spaces (~120 KB on disk)."""
    source = make_docx(path.with_suffix(".src.docx"), "Memo", [("Body", "hello")])
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename != "word/document.xml":
                zout.writestr(item.filename, data)
                continue
            with zout.open(item.filename, "w", force_zip64=True) as fh:
                cut = data.rindex(b"</w:body>")
                fh.write(data[:cut])
                for _ in range(mb):
                    fh.write(b" " * (1 << 20))
                fh.write(data[cut:])
    source.unlink()
    return path


def watched_folder(folder: Path, home: Path):
    """A hash-model ``Recall`` over ``folder`` (one seed file, indexed), for watcher tests;
    the caller closes ``app.store``."""
    from recall.api import Recall
    from recall.config.load import load_config
    from recall.embedding.models import get_embedder
    from recall.indexing.indexer import SourceSpec

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "seed.txt").write_text("seed text file\n")
    app = Recall(home=home, config=load_config(), embedder=get_embedder("hash"))
    app.index([SourceSpec("dir", folder)])
    return app


def first_hit(app, text: str, note_id: str, within_s: float = 10.0):
    """The first hit for ``text`` once it is ``note_id`` (polled), or the last one seen."""
    import time

    from recall.ranking.scope import Scope

    deadline = time.monotonic() + within_s
    while True:
        hits = app.query(text, Scope(everything=True)).hits
        if (hits and hits[0].note["id"] == note_id) or time.monotonic() > deadline:
            return hits[0] if hits else None
        time.sleep(0.05)
