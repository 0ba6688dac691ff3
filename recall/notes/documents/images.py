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

import threading
from pathlib import Path
from typing import Any

from recall.notes.documents.convert import Extracted, Unreadable

_lock = threading.RLock()
_engine: Any = None


def engine() -> Any:
    """The process's OCR engine, built on first use."""
    global _engine
    with _lock:
        if _engine is None:
            from rapidocr import RapidOCR

            _engine = RapidOCR(params={"Global.log_level": "error"})
        return _engine


def load_rgb(path: Path):
    """The image as an RGB array (the first frame of a GIF); ``Unreadable`` when Pillow
    cannot decode it or it is larger than Pillow's decompression-bomb limit."""
    import numpy as np
    from PIL import Image

    try:
        with Image.open(path) as img:
            return np.asarray(img.convert("RGB"))
    except Image.UnidentifiedImageError as exc:
        raise Unreadable("not an image Pillow can decode; skipped") from exc
    except Image.DecompressionBombError as exc:
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
    the image is still found by its file name."""
    lines = read_text(load_rgb(path))
    return Extracted(fmt, "", [("", "\n".join(lines))] if lines else [])
