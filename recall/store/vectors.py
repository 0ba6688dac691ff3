"""The FAISS index of one model, built from the store and swapped in atomically.

On disk, under ``$RECALL_HOME/index/<model slug>/``:

    gen-000007/index.faiss    inner product over unit vectors (= cosine)
    gen-000007/meta.json      the notes, and which note each vector belongs to
    gen-000007/lexical.npz    BM25 postings over each note's text (recall.store.bm25)
    current                   the name of the live generation, replaced by os.replace

A generation is written completely (and fsynced) before ``current`` points at it, so
a reader never sees a half-written index, and a crash mid-build leaves the previous
generation live. The daemon checks ``current`` on every question (one stat) and loads
a new generation when it changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall.errors import DiskFull, IndexDamaged, is_disk_full
from recall.privacy.paths import FILE_MODE, ensure_private_dir, private_open, read_text, recall_home
from recall.privacy.regular import NotAFile, not_a_file, read_regular
from recall.privacy.strays import move_aside, set_aside_folder
from recall.store import native
from recall.store.errors import short_of
from recall.store.generations import (
    DIGESTED,
    after_every_other,
    file_digest,
    holds_more,
    inputs_digest,
    note_rows,
    unchanged_generation,
)
from recall.store.lru import Lru
from recall.store.sqlite import Store

if TYPE_CHECKING:
    import numpy as np

    from recall.store.bm25 import Bm25

HNSW_M = 32
# The most a cosine moves in the exact index, whose vectors are half precision: each component
# is rounded to 11 bits and the vectors have unit length (a store contract's tolerance).
COSINE_ERROR_MAX = 2.0 ** -11
KEEP_GENERATIONS = 2
SCOPES_KEPT = 256  # cached entries per loaded index: about two per project asked from (a mask, a selector)
PER_NOTE = ("headers.npy", "prototypes.npy")  # a vector per note: its header; its questions' mean
GENERATION_FILES = ("index.faiss", "meta.json", "lexical.npz", *PER_NOTE)  # what a reader opens


def slug(model_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "--", model_id)


def index_dir(model_id: str, home: Path | None = None) -> Path:
    return (home or recall_home()) / "index" / slug(model_id)


def set_aside_non_folders(root: Path) -> None:
    """A file, pipe or link where the index folders go (``index/``, ``index/<model>/``) holds
    no index: moved aside to ``NAME.stray-TIME`` so that the build the user asked for can
    run (nothing is deleted)."""
    for p in (root.parent, root):
        try:
            folder = stat.S_ISDIR(os.stat(p).st_mode)  # a link to a folder is a folder
        except FileNotFoundError:
            folder = not os.path.islink(p)  # missing is fine; a dangling link is not
        except NotADirectoryError:
            return  # the parent was no folder and has just been moved aside
        if not folder:
            move_aside(p)


def _fsync_write(path: Path, data: bytes) -> None:
    with private_open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


class _BuildLock:
    """One build per model at a time (`recall index`, the watcher, the daemon): two
    builders would otherwise pick the same generation number."""

    def __init__(self, root: Path) -> None:
        self.path = root / "build.lock"

    def __enter__(self) -> _BuildLock:
        self.fh = private_open(self.path, "a")
        if os.name == "posix":
            import fcntl

            fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        self.fh.close()  # closing releases the lock


def build_index(store: Store, model_id: str, *, approximate_from: int, home: Path | None = None,
                keep_previous: bool = True) -> tuple[int, int]:
    """Write a new generation for ``model_id`` and make it current. Returns (generation, chunks).
    ``approximate_from``: ``[index] approximate_from_chunks`` (``Settings.index``).

    ``keep_previous=False`` removes every older generation (and anything else in the
    model's folder that is not the new one): after text was purged from the store (a past
    prompt, a secret masked by older rules), no earlier file may still hold it."""
    root = index_dir(model_id, home)
    set_aside_non_folders(root)
    root = ensure_private_dir(root)
    with _BuildLock(root):
        set_aside_folder(root / "current")  # a folder there: no generation could be made current (stop 57)
        try:
            return _build(store, model_id, root, approximate_from, KEEP_GENERATIONS if keep_previous else 1)
        except (OSError, RuntimeError) as exc:
            if is_disk_full(exc):
                raise DiskFull(root) from exc
            raise


def _build(store: Store, model_id: str, root: Path, approximate_from: int, keep: int) -> tuple[int, int]:
    import numpy as np

    # Notes and vectors read in one snapshot: a writer cannot slip in between.
    store.db.execute("BEGIN")
    try:
        notes = store.notes()
        pks, blobs = store.chunk_vectors(model_id)
        header_pks, header_blobs = store.chunk_vectors(model_id, headers=True)
        asked_pks, asked_blobs = store.chunk_vectors(model_id, asked=True)
        asked = store.notes_with_questions()
        texts = store.chunk_texts(role="text")  # BM25 reads the note, not its questions
    finally:
        store.db.execute("COMMIT")
    inputs = inputs_digest(model_id, approximate_from, notes, pks, blobs, header_pks, header_blobs, asked, texts)
    if keep > 1 and (live := unchanged_generation(root, read_current(root), inputs)) is not None:  # no churn
        after_every_other(root)
        store.record_index_run(model_id, live, len(blobs))  # it is as new as a run that wrote it
        return live, len(blobs)
    pos_of = {n.pk: i for i, n in enumerate(notes)}
    dim = len(blobs[0]) // 4 if blobs else 0
    matrix = (
        np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim)
        if blobs else np.zeros((0, 1), dtype=np.float32)
    )
    chunk_note = [pos_of[pk] for pk in pks]
    per_note = {"headers.npy": note_rows(pos_of, header_pks, header_blobs, len(notes), dim),
                "prototypes.npy": note_rows(pos_of, asked_pks, asked_blobs, len(notes), dim)}

    # Past every generation on disk, not just `current`: a damaged or missing marker must
    # not make the new generation older than the ones beside it (they would outlive it).
    numbers = [int(m.group(1)) for p in root.glob("gen-*") if (m := re.fullmatch(r"gen-(\d+)", p.name))]
    generation = max([read_current(root) or 0, *numbers]) + 1
    gen_dir = root / f"gen-{generation:06d}"
    if gen_dir.exists():
        shutil.rmtree(gen_dir)
    ensure_private_dir(gen_dir)
    try:
        _write_generation(gen_dir, model_id, generation, notes, matrix, blobs, chunk_note, texts, dim,
                          approximate_from, per_note, [i for i, n in enumerate(notes) if n.pk in asked], inputs)
    except BaseException:
        shutil.rmtree(gen_dir, ignore_errors=True)  # a generation half written (disk full, killed)
        raise
    # The switch: one atomic rename.
    _fsync_write(root / "current.tmp", f"gen-{generation:06d}".encode())
    os.replace(root / "current.tmp", root / "current")
    after_every_other(root)
    store.record_index_run(model_id, generation, len(blobs))
    store.settle()  # what the writes before this build deleted leaves the database file and its log
    for i, old in enumerate(reversed(sorted(root.glob("gen-*"))[:-1]), 2):  # newest first, after this one
        if i > keep or holds_more(old, gen_dir):
            shutil.rmtree(old, ignore_errors=True)
    return generation, len(blobs)


def _write_generation(gen_dir: Path, model_id: str, generation: int, notes: list, matrix: Any,
                      blobs: list, chunk_note: list, texts: dict, dim: int, approximate_from: int,
                      per_note: dict[str, Any] | None = None, asked: list[int] | None = None,
                      inputs: str = "") -> None:
    faiss = native.faiss()

    index: Any
    if len(blobs) >= approximate_from:
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 80
        index.hnsw.efSearch = 128
    else:
        # Exact search over half-precision copies: FAISS scans 16-bit floats with SIMD, so the
        # store's search costs 1.74 ms median instead of 2.71 with 32-bit vectors (`python -m
        # bench.bench_store --sizes 10000 --dim 512`, one core), with half the memory and file;
        # a cosine moves by at most COSINE_ERROR_MAX, and thresholds are fitted on these scores.
        index = faiss.IndexScalarQuantizer(max(dim, 1), faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    if len(blobs):
        index.add(matrix)
    tmp = gen_dir / "index.faiss.tmp"
    faiss.write_index(index, str(tmp))
    os.chmod(tmp, FILE_MODE)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, gen_dir / "index.faiss")
    from recall.store.bm25 import Bm25

    bm25 = Bm25.build(["\n".join(texts.get(n.pk, [])) for n in notes])
    with private_open(gen_dir / "lexical.npz", "wb") as fh:
        bm25.save_to(fh)
        fh.flush()
        os.fsync(fh.fileno())

    for name, rows in (per_note or {}).items():  # PER_NOTE's files
        if rows.any():  # none at all (an index of titles; notes without questions): no file
            _save_rows(gen_dir / name, rows)

    meta = {
        "model_id": model_id,
        "generation": generation,
        "built_at": time.time(),
        # the files' bytes as written: damage inside one (a flipped bit) is found at load, not
        # searched (an outside tester's index handed over the wrong note with confidence)
        "digests": {name: file_digest(gen_dir / name) for name in DIGESTED if (gen_dir / name).exists()},
        "dim": dim,
        "inputs": inputs,  # what it was built from (``generations.inputs_digest``): not written again
        "chunk_note": chunk_note,
        "asked": asked or [],  # positions of the notes with questions of their own
        "notes": [
            {
                "pk": n.pk, "kind": n.kind, "project": n.project, "root": n.root, "path": n.path,
                "id": n.note_id, "name": n.name, "description": n.description, "type": n.type,
                "extra": n.extra, "digest": _digest(texts.get(n.pk, [])),
            }
            for n in notes
        ],
    }
    _fsync_write(gen_dir / "meta.json", json.dumps(meta, ensure_ascii=False).encode("utf-8"))




def _save_rows(path: Path, rows: Any) -> None:
    import numpy as np

    with private_open(path, "wb") as fh:
        np.save(fh, rows, allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())


def _digest(texts: list[str]) -> str:
    """What a note says (its masked text chunks), hashed: two copies of one note share it."""
    return hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()[:16]


def read_current(root: Path, strict: bool = False) -> int | None:
    """The live generation's number; None when there is none yet. A ``current`` file that
    names no generation is None, or with ``strict`` raises ``IndexDamaged``."""
    try:
        raw = read_regular(root / "current", 64)[0]
    except FileNotFoundError:
        return None
    except OSError as exc:
        if strict:
            short_of(exc)
            detail = f"{exc}, not a file" if isinstance(exc, NotAFile) else exc.strerror or str(exc)
            raise IndexDamaged(root / "current", detail) from exc
        return None
    m = re.fullmatch(rb"gen-(\d+)", raw.strip())
    if m is None:
        if strict:
            raise IndexDamaged(root / "current", "does not name a generation")
        return None
    return int(m.group(1))


@dataclass
class LoadedIndex:
    model_id: str
    generation: int
    index: object
    notes: list[dict]
    chunk_note: np.ndarray
    path: Path
    asked: np.ndarray  # per note: has questions of its own (a generation from before: none)
    lexical: Bm25 | None = None  # None for a generation built before BM25 existed
    headers: np.ndarray | None = None  # (notes x dim) header vectors, zeros where none; None: no headers
    prototypes: np.ndarray | None = None  # (notes x dim) each note's questions' mean (``prototypes``); None: none
    built_at: float = 0.0  # when it was written (epoch seconds): a note file changed after it is behind it
    # per scope and per generation (recall.ranking.search), bounded: a daemon meets a project per folder
    _scope_cache: Lru = field(default_factory=lambda: Lru(SCOPES_KEPT))

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)  # type: ignore[attr-defined]


def load_index(model_id: str, home: Path | None = None) -> LoadedIndex | None:
    """The current generation, or None if none was built yet. Raises ``IndexDamaged``
    (one line naming the file and the repair) when a file of it cannot be read back."""
    root = index_dir(model_id, home)
    tries = 5
    while True:
        gen = read_current(root, strict=True)
        if gen is None:
            return None
        try:
            return load_generation(model_id, gen, root / f"gen-{gen:06d}")
        except IndexDamaged:
            # An index running beside this reader may have published newer generations and
            # pruned this one between reading `current` and opening it: read `current` again.
            # Damage that stays (the same generation, still missing or unreadable) is raised.
            tries -= 1
            if not tries or read_current(root, strict=True) == gen:
                raise


def _damaged(path: Path, exc: Exception) -> IndexDamaged:
    """What a reader's failure on ``path`` says of the index. What the machine ran short of is raised
    as itself: out of descriptors, a sound index was said damaged, to be rebuilt (stop 58)."""
    if isinstance(exc, OSError) and exc.strerror:
        short_of(exc)
        return IndexDamaged(path, exc.strerror)
    if path.name == "index.faiss" and not isinstance(exc, ValueError):
        return IndexDamaged(path, "not a FAISS index faiss can read")  # its own message is a C++ signature
    return IndexDamaged(path, (str(exc).splitlines() or [""])[0][:120] or type(exc).__name__)


def load_generation(model_id: str, gen: int, gen_dir: Path) -> LoadedIndex:
    faiss = native.faiss()
    import numpy as np

    if not gen_dir.is_dir():
        raise IndexDamaged(gen_dir.parent / "current", f"names {gen_dir.name}, which is missing")
    for path in (gen_dir / name for name in GENERATION_FILES):  # a pipe there would hang the reader
        if why := not_a_file(path):
            raise IndexDamaged(path, why)
    path = gen_dir / "index.faiss"
    try:
        index = faiss.read_index(str(path))
        path = gen_dir / "meta.json"
        meta = json.loads(read_text(path))
        notes, chunk_note = meta["notes"], np.asarray(meta["chunk_note"], dtype=np.int64)
        if not isinstance(notes, list) or chunk_note.ndim != 1 or len(chunk_note) != index.ntotal \
                or (len(chunk_note) and (chunk_note.min() < 0 or chunk_note.max() >= len(notes))):
            raise ValueError("its notes do not match the vectors")
        if not all(isinstance(n, dict) and isinstance(n.get("id"), str) and isinstance(n.get("path"), str)
                   for n in notes):
            raise ValueError("its notes are not notes")
        if index.ntotal and meta.get("dim", index.d) != index.d:  # (an empty index is built 1-wide)
            raise ValueError(f"its vectors have {index.d} dimensions, not the model's {meta['dim']}")
        digests = meta.get("digests") or {}  # none in a generation from before
        for name in DIGESTED:
            path = gen_dir / name
            if name in digests and path.exists() and file_digest(path) != digests[name]:
                raise ValueError("its bytes changed since it was written (meta.json's checksum)")
        path = gen_dir / "meta.json"
        asked = np.zeros(len(notes), dtype=bool)  # a generation from before: none known
        positions = meta.get("asked", [])
        if not isinstance(positions, list) or not all(isinstance(i, int) and 0 <= i < len(notes) for i in positions):
            raise ValueError("its notes with questions do not match the notes")
        asked[positions] = True
        lexical = None
        path = gen_dir / "lexical.npz"
        if path.exists():
            from recall.store.bm25 import Bm25

            lexical = Bm25.load(path)
            if lexical.n_docs != len(notes):
                raise ValueError("its notes do not match the index")
        per_note = {}
        for name in PER_NOTE:  # a vector per note, or no file (a generation from before)
            path = gen_dir / name
            if path.exists():
                per_note[name] = np.load(path, allow_pickle=False)
                if per_note[name].shape != (len(notes), index.d):
                    raise ValueError(f"its {name.removesuffix('.npy')} do not match the notes")
    except Exception as exc:  # noqa: BLE001 - whatever a damaged file makes a reader raise
        raise _damaged(path, exc) from exc
    return LoadedIndex(model_id=model_id, generation=gen, index=index, notes=notes, chunk_note=chunk_note,
                       path=gen_dir, asked=asked, lexical=lexical, headers=per_note.get("headers.npy"),
                       prototypes=per_note.get("prototypes.npy"), built_at=_built_at(meta))


def _built_at(meta: dict) -> float:
    when = meta.get("built_at")
    return float(when) if isinstance(when, int | float) and not isinstance(when, bool) else 0.0


def current_marker(model_id: str, home: Path | None = None) -> int | None:
    return read_current(index_dir(model_id, home))
