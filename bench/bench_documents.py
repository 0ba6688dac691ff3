"""Documents: pages per second and peak Python memory per format, recall's reader
(recall.documents.read_document: convert + locate + name) beside the raw converter in the
same run; images per second through OCR. Fixtures are made fresh (tests/helpers/documents.py).

    PYTHONPATH=.:tests python bench/bench_documents.py [--pages 40] [--images 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from pathlib import Path

from helpers.documents import latin_font, make_docx, make_pdf, make_pptx, make_screenshot

TEXT = "The router keeps its settings in flash; hold reset for thirty seconds to clear them. " * 8


def measure(fn) -> tuple[float, float]:
    tracemalloc.start()
    t0 = time.perf_counter()
    fn()
    took = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return took, peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=40)
    ap.add_argument("--images", type=int, default=3)
    a = ap.parse_args()
    from markitdown import StreamInfo
    from markitdown import converters as c
    from pypdf import PdfReader

    from recall.config import load_config
    from recall.documents import read_document

    opts = load_config().documents
    tmp = Path(tempfile.mkdtemp())
    n = a.pages
    files = {"pdf": make_pdf(tmp / "a.pdf", [f"page {i}\n{TEXT}" for i in range(n)]),
             "docx": make_docx(tmp / "a.docx", "Doc", [(f"Section {i}", TEXT) for i in range(n)]),
             "pptx": make_pptx(tmp / "a.pptx", [(f"Slide {i}", TEXT) for i in range(n)])}
    raw = {"pdf": lambda p: [pg.extract_text() for pg in PdfReader(str(p)).pages],
           "docx": lambda p: c.DocxConverter().convert(p.open("rb"), StreamInfo(extension=".docx")),
           "pptx": lambda p: c.PptxConverter().convert(p.open("rb"), StreamInfo(extension=".pptx"))}
    for fmt, path in files.items():
        raw[fmt](path)  # warm imports
        r_t, r_m = measure(lambda: raw[fmt](path))
        o_t, o_m = measure(lambda: read_document(path, tmp, opts))
        print(f"{fmt}: recall {n / o_t:7.1f} pages/s peak {o_m:6.1f} MB | raw converter {n / r_t:7.1f} pages/s "
              f"peak {r_m:6.1f} MB | ratio {r_t / o_t:.2f}")
    shots = [make_screenshot(tmp / f"s{i}.png", [TEXT[:60], TEXT[60:120]], latin_font()) for i in range(a.images)]
    read_document(shots[0], tmp, opts)  # loads the OCR models
    t, m = measure(lambda: [read_document(s, tmp, opts) for s in shots])
    print(f"images: {len(shots) / t:.2f} images/s (1280x800 screenshots), peak Python memory {m:.1f} MB")


if __name__ == "__main__":
    main()
