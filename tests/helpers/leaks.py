"""Find planted text (secrets, prompt canaries) in any byte under a folder.

Text reaches disk in more shapes than its UTF-8 bytes: SQLite stores UTF-8, numpy's string
arrays inside ``lexical.npz`` are UTF-32, and BM25 keeps lowercased words cut at
punctuation. So each needle is searched as itself, lowercased, and as each of its
lowercased word pieces of 8+ characters, in UTF-8, UTF-16 and UTF-32 (little-endian).
"""

from __future__ import annotations

import re
from pathlib import Path

_PIECE = re.compile(r"[^\W_]{8,}")
ENCODINGS = ("utf-8", "utf-16-le", "utf-32-le")


def forms(needle: str) -> set[str]:
    low = needle.lower()
    return {needle, low, *_PIECE.findall(low)}


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def find_leaks(root: Path, needles: list[str]) -> list[tuple[str, str]]:
    """(needle, file) for every needle whose bytes (in any form above) are in a file under ``root``."""
    patterns = {n: {f.encode(enc) for f in forms(n) for enc in ENCODINGS} for n in needles}
    found = []
    for path in files_under(root):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        low = data.lower()
        for needle, pats in patterns.items():
            if any(p in data or p.lower() in low for p in pats):
                found.append((needle, str(path.relative_to(root))))
    return found
