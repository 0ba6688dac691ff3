"""Documents: pages per second and peak memory per format, recall's reader
(``recall.notes.documents.read_document``: convert + locate + name) beside the raw converter in the
same run; images per second through OCR the same way. Fixtures are made fresh
(tests/helpers/documents.py): PDF, DOCX, PPTX, XLSX, HTML, EPUB, plain text, markdown
without a header, 1280x800 screenshots.

Each (format, reader) runs in a child process of its own, so its peak memory is its own:
the child imports the format's library, notes its resident memory and resets its peak
(Linux's VmHWM), reads the file once cold, then ``--repeat`` more times; it reports the
median time of the repeats and the peak resident memory of the reads, whole and over
what the process held before them (the imports; for images, the OCR models too). A
"page" is the format's unit: a PDF page, a slide, a sheet, a section (DOCX, HTML, text,
markdown), a chapter (EPUB), an image.

    PYTHONPATH=.:tests python bench/bench_documents.py [--pages 40] [--images 3] [--repeat 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEXT = "The router keeps its settings in flash; hold reset for thirty seconds to clear them. " * 8
UNITS = {"pdf": "pages", "docx": "sections", "pptx": "slides", "xlsx": "sheets", "html": "sections",
         "epub": "chapters", "text": "sections", "markdown": "sections", "png": "images"}
RAW = {"pdf": "pypdf", "docx": "markitdown DocxConverter", "pptx": "markitdown PptxConverter",
       "xlsx": "markitdown XlsxConverter", "html": "markitdown HtmlConverter", "epub": "markitdown EpubConverter",
       "text": "read + decode", "markdown": "read + decode", "png": "rapidocr on the decoded image"}


def make_fixtures(tmp: Path, n: int, images: int) -> dict[str, list[Path]]:
    from helpers.documents import (
        latin_font,
        make_docx,
        make_epub,
        make_html,
        make_pdf,
        make_pptx,
        make_screenshot,
        make_xlsx,
    )

    sections = [(f"Section {i}", TEXT) for i in range(n)]
    (tmp / "a.txt").write_text("".join(f"Section {i}\n{'=' * 10}\n{TEXT}\n\n" for i in range(n)), encoding="utf-8")
    (tmp / "a.md").write_text("".join(f"## Section {i}\n\n{TEXT}\n\n" for i in range(n)), encoding="utf-8")
    return {"pdf": [make_pdf(tmp / "a.pdf", [f"page {i}\n{TEXT}" for i in range(n)])],
            "docx": [make_docx(tmp / "a.docx", "Doc", sections)],
            "pptx": [make_pptx(tmp / "a.pptx", sections)],
            "xlsx": [make_xlsx(tmp / "a.xlsx", {f"Sheet{i}": [["key", "value"], ["reset", TEXT[:200]]]
                                                for i in range(n)})],
            "html": [make_html(tmp / "a.html", "Doc", sections)],
            "epub": [make_epub(tmp / "a.epub", "Book", sections)],
            "text": [tmp / "a.txt"], "markdown": [tmp / "a.md"],
            "png": [make_screenshot(tmp / f"s{i}.png", [TEXT[:60], TEXT[60:120]], latin_font())
                    for i in range(images)]}


# --- the child: one reader on one format --------------------------------------------------


def _import_library(fmt: str) -> None:
    if fmt == "pdf":
        import pypdf  # noqa: F401
    elif fmt == "png":
        from recall.notes.documents.images import engine

        engine()  # the OCR models load here, before the baseline: both readers share them
    elif fmt not in ("text", "markdown"):
        from markitdown import converters  # noqa: F401


def _raw_reader(fmt: str):
    if fmt == "pdf":
        from pypdf import PdfReader

        return lambda p: [page.extract_text() for page in PdfReader(str(p)).pages]
    if fmt in ("text", "markdown"):
        return lambda p: p.read_bytes().decode("utf-8", errors="replace")
    if fmt == "png":
        from recall.notes.documents.images import engine, load_rgb

        return lambda p: engine()(load_rgb(p)[:, :, ::-1])
    from markitdown import StreamInfo
    from markitdown import converters as c

    cls = {"docx": c.DocxConverter, "pptx": c.PptxConverter, "xlsx": c.XlsxConverter, "html": c.HtmlConverter,
           "epub": c.EpubConverter}[fmt]

    def read(p: Path):
        with p.open("rb") as fh:
            return cls().convert(fh, StreamInfo(extension=p.suffix, filename=p.name, local_path=str(p)))

    return read


def _recall_reader(fmt: str):
    from recall.config.load import packaged_settings
    from recall.notes.documents import read_document

    opts = packaged_settings().documents

    kind = "library" if fmt == "markdown" else "dir"  # elsewhere markdown is a note (recall.notes.files)

    def read(p: Path):
        note, problems = read_document(p, p.parent, opts, kind)
        assert note is not None, problems
        return note

    return read


def _status_mb(field: str) -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _reset_peak() -> float:
    """Resident MB now, after resetting the peak (Linux: "5" > clear_refs resets VmHWM), so
    the peak read later is the reads' own and not the imports'. Elsewhere: ru_maxrss so far."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _status_mb("VmRSS") or 0.0
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _peak() -> float:
    return _status_mb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(fmt: str, reader: str, paths: list[Path], repeat: int) -> dict:
    _import_library(fmt)
    read = _recall_reader(fmt) if reader == "recall" else _raw_reader(fmt)
    base = _reset_peak()  # MB resident now: imports (and OCR models) only; the peak starts again here
    for p in paths:  # cold: lazy imports inside the reader, first allocations
        read(p)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for p in paths:
            read(p)
        times.append(time.perf_counter() - t0)
    peak = _peak()
    return {"seconds": statistics.median(times), "peak_rss_mb": round(peak, 1),
            "over_imports_mb": round(peak - base, 1)}


# --- the parent ---------------------------------------------------------------------------


def run_child(fmt: str, reader: str, paths: list[Path], repeat: int) -> dict:
    cmd = [sys.executable, __file__, "--child", fmt, reader, "--repeat", str(repeat), *map(str, paths)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=40, help="pages (slides, sheets, sections) per document")
    ap.add_argument("--images", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--formats", default=",".join(UNITS), help="comma-separated subset of " + ",".join(UNITS))
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--child", nargs=2, metavar=("FORMAT", "READER"), help=argparse.SUPPRESS)
    ap.add_argument("paths", nargs="*", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], a.child[1], a.paths, a.repeat)))
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-documents-"))
    files = make_fixtures(tmp, a.pages, a.images)
    rows = []
    print(f"{a.pages} units per document, {a.images} images; median of {a.repeat} warm reads, each reader in "
          "its own process (peak RSS whole / over its imports)")
    for fmt in a.formats.split(","):
        units = a.images if fmt == "png" else a.pages
        got = {reader: run_child(fmt, reader, files[fmt], a.repeat) for reader in ("recall", "raw")}
        r, w = got["recall"], got["raw"]
        unit = UNITS[fmt]
        rows.append({"format": fmt, "unit": unit, "units": units, "recall": r, "raw": w, "raw_reader": RAW[fmt]})
        print(f"{fmt:9s} recall {units / r['seconds']:8.1f} {unit}/s  peak {r['peak_rss_mb']:6.1f} MB "
              f"(+{r['over_imports_mb']:5.1f}) | raw {units / w['seconds']:8.1f} {unit}/s  peak "
              f"{w['peak_rss_mb']:6.1f} MB (+{w['over_imports_mb']:5.1f}) | recall takes "
              f"{r['seconds'] / w['seconds']:.2f}x the raw time  [raw: {RAW[fmt]}]", flush=True)
    if a.json:
        a.json.write_text(json.dumps({"pages": a.pages, "images": a.images, "repeat": a.repeat, "rows": rows},
                                     indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
