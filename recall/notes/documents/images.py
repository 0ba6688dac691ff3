"""Text in screenshots and photos, read offline in English and Japanese.

``rapidocr`` 3 with ``onnxruntime`` (the ``ocr`` extra): its wheel carries the PP-OCRv6
detection and recognition models, whose recogniser reads Latin, kana and kanji, so
nothing is downloaded at run time (../shared/STACK.md: 27/27 English words, 93 % of
Japanese characters on screenshots; ``bench/bench_documents.py`` measures it again on
screenshots it renders). ``rapidocr-onnxruntime`` 1.4 has no kana and tesseract read
41-85 % of Japanese characters, so neither was taken.

One engine per process (loading it takes seconds and ~400 MB), shared by every image
and every frame of a recording.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from recall.notes.documents.convert import Extracted, Unreadable

# Longest side over shortest beyond which an image is not OCR'd (see extract_image).
MAX_ASPECT = 25
_lock = threading.RLock()
_engine: Any = None
# onnxruntime queued a telemetry event (device id, interpreter, OS, CPU) in
# ~/.cache/Microsoft/DeveloperTools at its first session (an outside tester's, stop 56): nothing
# about the user leaves the machine, nor waits to. Read when onnxruntime starts: set before.
NO_TELEMETRY = {"ORT_DISABLE_TELEMETRY": "1"}


def engine() -> Any:
    """The process's OCR engine, built on first use."""
    global _engine
    with _lock:
        if _engine is None:
            for name, value in NO_TELEMETRY.items():
                os.environ.setdefault(name, value)
            from rapidocr import RapidOCR

            _engine = RapidOCR(params={"Global.log_level": "error"})
        return _engine


# A TIFF's pages read at most (a scanned contract's second page was lost without a word, stop 45).
MAX_PAGES = 50


def load_rgb(path: Path):
    """The image as an RGB array (the first frame of a GIF); ``Unreadable`` when Pillow
    cannot decode it or it has more pixels than Pillow's decompression-bomb warning limit
    (~89 Mpx; its error limit, twice that, would decode a 169 KB file into 1.6 GB)."""
    return load_pages(path, 1)[0][0]


def load_pages(path: Path, most: int = MAX_PAGES):
    """([RGB array per page], pages in all): a TIFF's pages, at most ``most``; one frame of any
    other image (an animated GIF's first); ``load_rgb``'s ``Unreadable``."""
    import warnings

    import numpy as np
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as img:
                total = getattr(img, "n_frames", 1) if img.format == "TIFF" else 1
                pages = []
                for i in range(min(total, most)):
                    img.seek(i)
                    pages.append(np.asarray(img.convert("RGB")))
                return pages, total
    except Image.UnidentifiedImageError as exc:
        raise Unreadable("not an image Pillow can decode; skipped") from exc
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise Unreadable("too many pixels to decode safely (Pillow's decompression-bomb limit); skipped") from exc
    except (OSError, ValueError, SyntaxError) as exc:
        raise Unreadable(f"a damaged image ({str(exc)[:100] or type(exc).__name__}); skipped") from exc


def read_text(rgb) -> list[str]:
    """The lines of text OCR finds in an RGB array, in reading order."""
    with _lock:  # one inference at a time: onnxruntime already uses every core
        result = engine()(rgb[:, :, ::-1])  # rapidocr takes OpenCV's BGR order
    return [t.strip() for t in (result.txts or ()) if t and t.strip()]


def extract_image(path: Path, fmt: str) -> Extracted:
    """A screenshot's text as one segment (an image has no pages); "" when it has none:
    the image is still found by its file name. An image far longer than wide (a divider,
    a toolbar strip) is not read: OCR scales its short side up to 736 px, which made a
    3 x 2,000 px image need 24 GB."""
    pages, total = load_pages(path)
    segments, notes = [], []
    for i, rgb in enumerate(pages, 1):
        height, width = rgb.shape[:2]
        if max(height, width) > MAX_ASPECT * max(1, min(height, width)):
            notes.append(f"{width} x {height} px, too narrow to read text from; found by its name only")
            continue
        lines = read_text(rgb)
        if lines:
            segments.append((f"p. {i}" if total > 1 else "", "\n".join(lines)))
    if total > len(pages):
        notes.append(f"{total} pages: the first {len(pages)} read")
    return Extracted(fmt, "", segments, notes)
