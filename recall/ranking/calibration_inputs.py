"""What the calibration (``recall.ranking.calibration``) reads: the collection's chunks as one
matrix (``chunks_of``), messages embedded on the query side and kept between runs
(``embed_cached``, ``calibration-cache.npz``), and the messages known to be about no note
(``about_no_note``: the bank's, and the generic requests ``recall.ranking.muting`` holds the
questions and restatements to)."""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from recall.privacy.paths import private_open
from recall.privacy.strays import replace_aside
from recall.ranking import negatives as negs

if TYPE_CHECKING:
    import numpy as np

    from recall.embedding.models import Embedder
    from recall.store.sqlite import Store


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def embed_cached(embedder: Embedder, store: Store, texts: Sequence[str], cache: dict[str, np.ndarray]):
    """Query-side vectors for ``texts``, embedding only those not in ``cache`` (updated).
    A model that embeds queries as passages (``symmetric``: USE-m3, the hash embedder)
    reuses the store's vectors: a note's questions were embedded when it was indexed."""
    import numpy as np

    missing = list(dict.fromkeys(t for t in texts if text_key(t) not in cache))
    if missing and getattr(embedder, "symmetric", False):
        from recall.store.records import text_hash

        stored = store.vectors_of(embedder.model_id, [text_hash(t) for t in missing])
        for text in missing:
            if (vec := stored.get(text_hash(text))) is not None:
                cache[text_key(text)] = vec
        missing = [t for t in missing if text_key(t) not in cache]
    for i in range(0, len(missing), 32):
        batch = missing[i:i + 32]
        for text, vec in zip(batch, embedder.embed_queries(batch), strict=True):
            cache[text_key(text)] = np.asarray(vec, dtype=np.float32)
    dim = embedder.dim if hasattr(embedder, "dim") else None
    if not texts:
        return np.zeros((0, dim or 1), dtype=np.float32)
    return np.stack([cache[text_key(t)] for t in texts])


def load_cache(path: Path) -> dict:
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            return dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # damaged: as if absent
        return {}


def save_cache(path: Path, cache: dict, keep: set[str]) -> None:
    import numpy as np

    keys = [k for k in cache if k in keep]
    tmp = path.with_name(path.name + ".tmp")
    with private_open(tmp, "wb", encoding=None) as fh:
        vecs = np.stack([cache[k] for k in keys]) if keys else np.zeros((0, 1), np.float32)
        np.savez(fh, keys=np.array(keys, dtype="U24"), vectors=vecs)
    replace_aside(tmp, path)


@dataclass
class Chunks:
    """Every chunk with a vector, sorted by note: its vector, its note's position (``pks``), whether it
    is a question, its text hash, and a question's text (None for the rest)."""

    model_id: str
    matrix: np.ndarray
    note: np.ndarray
    question: np.ndarray
    hashes: list[str]
    texts: list[str | None]
    pks: list[int]
    claims: np.ndarray  # a question or a restatement: a text that speaks for its note (set aside if need be)


def chunks_of(store: Store, model_id: str) -> Chunks | None:
    """The chunks, copies of one note as one note: the same headline over the same text, which the
    search hands over once (``selector.distinct``). Held apart, each copy answered the other's
    questions: held out, a question still found its copy, and a hidden note was never hidden."""
    import numpy as np

    rows = store.db.execute(
        "SELECT c.note_id, c.role, v.vector, c.text_hash, CASE WHEN c.role = 'question' THEN c.text END,"
        " n.name, n.description FROM chunks c JOIN vectors v ON v.text_hash = c.text_hash AND v.model_id = ?"
        " JOIN notes n ON n.id = c.note_id JOIN sources s ON s.id = n.source_id"
        " WHERE s.kind != 'conversation' AND c.role != 'header' ORDER BY c.note_id, c.ord",
        (model_id,),
    ).fetchall()
    if not rows:
        return None
    said: dict[int, list] = {}
    for r in rows:
        said.setdefault(r[0], [r[5], r[6]]).extend([r[3]] if r[1] == "text" else [])
    first: dict[tuple, int] = {}  # the first copy of each note met, by what it says
    group = {pk: first.setdefault(tuple(v), pk) for pk, v in sorted(said.items())}
    pks = sorted(set(group.values()))
    pos = {pk: i for i, pk in enumerate(pks)}
    note = np.array([pos[group[r[0]]] for r in rows])
    order = np.argsort(note, kind="stable")  # each note's rows (its copies' too) together
    rows = [rows[i] for i in order]
    matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    return Chunks(model_id, matrix, note[order], np.array([r[1] == "question" for r in rows]),
                   [r[3] for r in rows], [r[4] for r in rows], pks,
                   np.array([r[1] in ("question", "restatement") for r in rows], dtype=bool))



def about_no_note(nv, found: Sequence[negs.Negative], gv):
    """(vectors, nearest) of the bank's messages (about no note of any collection) and of the
    generic requests (about no note a question may claim), query side, each with its nearest
    other known negative, as a message meets them at search time."""
    import numpy as np

    bank = [i for i, n in enumerate(found) if n.origin == "bank"]
    known = nv[bank] @ nv.T
    known[np.arange(len(bank)), bank] = -np.inf
    nearest = known.max(axis=1) if len(found) > 1 else np.full(len(bank), -1.0)
    return (nv[bank], nearest), (gv, (gv @ nv.T).max(axis=1) if len(nv) else np.full(len(gv), -1.0))
