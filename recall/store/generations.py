"""Which of a model's index generations to write, keep and date (``recall.store.vectors``).

* **Not written again when nothing changed** (``unchanged_generation``): every session start runs
  `recall index` (the plugin's), and each wrote a new generation of the same notes: the
  FAISS, BM25 and header files written and fsynced again, and every daemon loading them again
  before its next answer. A generation records what it was built from (``inputs_digest``: the
  notes as searched, every vector, the texts BM25 reads, the index's own settings); a build from
  the same inputs keeps the live one, when its files are still the bytes it wrote.
* **An older generation is kept** for a reader that read ``current`` before the switch, unless
  it holds a note the new one does not (``holds_more``).
* **The newest model's index is dated last** (``after_every_other``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from recall.privacy.paths import read_text
from recall.privacy.regular import open_regular

DIGESTED = ("index.faiss", "lexical.npz", "headers.npy", "prototypes.npy")  # the files meta.json holds the checksums of
# Bumped when a generation's files change for the same inputs (a new index type, a BM25 change):
# a build then writes a new one whatever it was built from.
BUILD_VERSION = 2  # 2: prototypes.npy


def file_digest(path: Path) -> str:
    """sha256 of a generation's file; ``NotAFile`` (an ``OSError``) for a pipe or a folder there,
    found without opening it blocked (a pipe held `recall index` for ever: stop 57)."""
    with os.fdopen(open_regular(path), "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def inputs_digest(model_id: str, approximate_from: int, notes: list, pks: list, blobs: list, header_pks: list,
                  header_blobs: list, asked: Any, texts: dict) -> str:
    """What a generation is built from, hashed (a 10,000-chunk index: ~20 MB of vectors, tens of ms)."""
    h = hashlib.sha256()
    fields = [BUILD_VERSION, model_id, approximate_from, sorted(asked),
              [[n.pk, n.kind, n.project, n.root, n.path, n.note_id, n.name, n.description, n.type, n.extra]
               for n in notes],
              pks, header_pks, sorted((pk, list(t)) for pk, t in texts.items())]
    h.update(json.dumps(fields, ensure_ascii=False, sort_keys=True, default=str).encode("utf-8", "surrogatepass"))
    for blob in (*blobs, b"\0headers\0", *header_blobs):
        h.update(blob)
    return h.hexdigest()


def unchanged_generation(root: Path, live: int | None, inputs: str) -> int | None:
    """``live``, the live generation under ``root``, when it was built from ``inputs`` and its
    files are the bytes it wrote (a damaged one is written again); else None."""
    if live is None:
        return None
    gen_dir = root / f"gen-{live:06d}"
    try:
        meta = json.loads(read_text(gen_dir / "meta.json"))
        digests = meta.get("digests") or {}
        if meta.get("inputs") != inputs or "index.faiss" not in digests:
            return None
        if any(file_digest(gen_dir / name) != digest for name, digest in digests.items() if name in DIGESTED):
            return None
        if any((gen_dir / name).exists() for name in DIGESTED if name not in digests):
            return None
    except (OSError, ValueError, TypeError, AttributeError, RecursionError):
        return None
    return live


def holds_more(old: Path, new: Path) -> bool:
    """Whether generation ``old`` holds a note (path, name, description, text) that ``new`` does not:
    kept for a reader that read ``current`` before the switch, it kept a deleted note's words until
    another index ran (stop 48, V04). A reader that finds it gone reads ``current`` again."""
    try:
        before, now = ({json.dumps([n.get(k) for k in ("path", "id", "name", "description", "digest", "extra")],
                                   sort_keys=True) for n in json.loads(read_text(g / "meta.json"))["notes"]}
                       for g in (old, new))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return True  # unreadable: not worth keeping
    return not before <= now


def after_every_other(root: Path) -> None:
    """This model's ``current`` dated after every other model's, whatever the clock says: which
    index is the newest is read from these dates (``recall.indexing.known.newer_elsewhere``),
    and a clock set back since another model's was written left this one "older" until the
    clock caught up, answering nothing meanwhile (stop 47, an outside tester's T02)."""
    try:
        mine = (root / "current").stat().st_mtime_ns
        latest = max((p.stat().st_mtime_ns for p in root.parent.glob("*/current") if p.parent != root), default=-1)
        if latest >= mine:
            os.utime(root / "current", ns=(latest + 1_000_000, latest + 1_000_000))
    except OSError:
        pass  # read as it is: at worst the daemon indexes once more


def note_rows(pos_of: dict, pks: list, blobs: list, n_notes: int, dim: int) -> Any:
    """A vector per note: the mean of its vectors among ``blobs`` (``pks``: their notes), unit
    length; zeros for a note with none. Its header (one vector), its prototype (its questions'
    and restatements' mean: what the note is asked, whatever the words; ``[search]
    prototype_weight``)."""
    import numpy as np

    out = np.zeros((n_notes, dim), dtype=np.float32)
    kept = [(pos_of[pk], blob) for pk, blob in zip(pks, blobs, strict=True) if len(blob) == dim * 4]
    if kept:
        vecs = np.frombuffer(b"".join(blob for _, blob in kept), dtype=np.float32).reshape(-1, dim)
        np.add.at(out, [pos for pos, _ in kept], vecs)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
    return out
