"""Search: embed the question, scan the index, score each note by its best chunk, then
fuse that ranking with BM25 over each note's text (``recall.store.bm25``) and, for a message
of several sentences, with each sentence's own ranking (``recall.ranking.sentences``).
Which notes a question may see is its ``Scope`` (``recall.ranking.scope``).
"""

from __future__ import annotations

import stat
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from recall.embedding.models import Embedder, fit_query
from recall.errors import IndexDamaged
from recall.ranking.scope import Scope
from recall.ranking.seconds import blended, with_best_rows
from recall.ranking.selector import Hit, Ranking
from recall.store import native
from recall.store.vectors import LoadedIndex, current_marker, load_index

if TYPE_CHECKING:
    from recall.config.settings import SearchSettings

# Chunks fetched per question before grouping by note. A note has at most 6 chunks, so
# 200 chunks always hold the 11 distinct notes the gap needs, with room to spare.
CHUNKS_PER_QUERY = 200
# With fusion, the dense list must hold ``fusion_depth`` notes: a note has at most 6 text
# chunks and 8 questions, so depth x 14 chunks always do.
CHUNKS_PER_NOTE_MAX = 14

class Searcher:
    """Holds one model and its index; reloads the index when a new generation is live.
    ``settings``: the ``[search]`` section (``Settings.search``)."""

    def __init__(self, embedder: Embedder, settings: SearchSettings, home: Path | None = None) -> None:
        self.embedder = embedder
        self.home = home
        self.settings = settings
        self.index: LoadedIndex | None = load_index(embedder.model_id, home)
        self._unloadable: int | None = None  # a generation that failed to load: not retried
        self._refreshing = threading.Lock()  # one load at a time: the daemon's reloader and a question
        self.negatives = None  # (n x dim) query-side vectors of known unrelated messages
        self._negatives_stamp: tuple | None = None
        self._load_negatives()
        faiss = native.faiss()

        # One question at a time: OpenMP threads cost more to wake than the scan itself
        # (10-36 ms with 2 threads vs 0.6 ms with 1 over 10k chunks, bench_store). Per thread:
        # set again before every search (_scan), for the threads that ask.
        faiss.omp_set_num_threads(1)

    @property
    def lexical_weight(self) -> float:
        """BM25's share of the order for a note without questions (read-only: a different
        weight is a different ``SearchSettings``, e.g. ``Recall.replace_settings``)."""
        return self.settings.lexical_weight

    def _lexical_weights(self, idx: LoadedIndex):
        """BM25's share per note: ``lexical_weight_with_questions`` for a note with questions
        of its own, ``lexical_weight`` for the others (cached per generation and weights)."""
        import numpy as np

        s = self.settings
        key = ("lexical", s.lexical_weight, s.lexical_weight_with_questions)
        weights = idx._scope_cache.get(key)
        if weights is None:
            weights = idx._scope_cache.put(key, np.where(idx.asked, s.lexical_weight_with_questions,
                                                         s.lexical_weight))
        return weights

    def _negatives_file(self) -> Path:
        from recall.ranking.negatives import FILE
        from recall.store.vectors import index_dir

        return index_dir(self.embedder.model_id, self.home) / FILE

    def _load_negatives(self) -> bool:
        """(Re)load ``negatives.npz`` when it changed. One stat per call."""
        path = self._negatives_file()
        try:
            st = path.stat()
            stamp: tuple | None = (st.st_mtime_ns, st.st_size, st.st_ino) if stat.S_ISREG(st.st_mode) else None
        except OSError:
            stamp = None  # absent, or not a file (a pipe would hold numpy's read): no negatives
        if stamp == self._negatives_stamp:
            return False
        self._negatives_stamp = stamp
        from recall.ranking.negatives import load

        loaded = load(path) if stamp is not None else None
        self.negatives = loaded[2] if loaded is not None and len(loaded[2]) else None
        return True

    def negative_score(self, qv) -> float | None:
        """The best cosine between the question and a known unrelated message."""
        neg = self.negatives
        if neg is None or neg.shape[1] != qv.shape[1]:
            return None
        return float((neg @ qv[0]).max())

    def refresh(self) -> bool:
        """Load a newer generation if ``recall index`` built one, and newer negatives.
        Two stats per call. One load at a time: a question that comes while the daemon's reloader
        loads a generation waits for it, and loads nothing again."""
        with self._refreshing:
            return self._refresh()

    def _refresh(self) -> bool:
        self._load_negatives()
        marker = current_marker(self.embedder.model_id, self.home)
        stale = self.index is None or marker != self.index.generation
        if marker is not None and marker != self._unloadable and stale:
            try:
                self.index = load_index(self.embedder.model_id, self.home)
            except IndexDamaged:
                if self.index is None:
                    raise
                self._unloadable = marker  # keep answering from the generation already loaded
                return False
            return True
        return False

    def search(self, text: str, scope: Scope | None = None, k_notes: int = 20) -> tuple[Ranking, dict]:
        """Ranked notes and timings in ms. With ``lexical_weight`` > 0 (and a generation that
        has BM25), the order is the fusion of dense and BM25; each hit's score is then the
        dense list's score at that rank, so the gap rule decides exactly as dense would. A
        message of several sentences also has each searched on its own, for the fused order
        only (``_with_sentences``); dense alone orders by the whole message."""
        t0 = time.perf_counter()
        # Whoever asks (hook, daemon, MCP server, CLI), a question costs the model one window.
        text = fit_query(self.embedder, text)
        idx = self.index
        fusing = (self.settings.lexical_weight > 0 or self.settings.lexical_weight_with_questions > 0) \
            and idx is not None and idx.lexical is not None
        pieces = self._sentences(text) if fusing else []
        vectors = self.embedder.embed_queries([text, *pieces])  # one model call for all of them
        qv = vectors[:1]
        t1 = time.perf_counter()
        negative = self.negative_score(qv)
        if not fusing:
            hits, scanned = self._dense(qv, scope, k_notes)
            if idx is not None:
                hits = self._reorder(idx, qv, hits, scanned)
            return Ranking(hits, negative), {"embed_ms": (t1 - t0) * 1000,
                                             "search_ms": (time.perf_counter() - t1) * 1000}
        assert idx is not None and idx.lexical is not None
        import numpy as np

        from recall.ranking.fusion import fuse, mostly_cjk

        scope = scope or Scope(everything=True)
        depth = self.settings.fusion_depth
        where: dict[int, int] = {}
        # one scan for the message and its sentences (FAISS answers each row on its own)
        scanned = self._scan(idx, vectors, scope, depth * CHUNKS_PER_NOTE_MAX)
        best = self._best_per_note(idx, qv, scope, depth * CHUNKS_PER_NOTE_MAX, depth, where, scanned)
        t2 = time.perf_counter()
        dense = np.full(len(idx.notes), -np.inf)
        if best:
            dense[list(best)] = list(best.values())
        lex = idx.lexical.scores(text)
        if not scope.everything:
            lex[~self._admitted(idx, scope)] = 0.0
        other = self._cjk_notes(idx) != mostly_cjk(text)
        ordering = self._ordering(idx, qv, dense, scanned)
        order, gate = fuse(ordering, lex, lexical_weight=self._lexical_weights(idx), depth=depth, k=k_notes,
                           other_script=other, gate_scores=dense)
        t3 = time.perf_counter()
        timings = {"embed_ms": (t1 - t0) * 1000, "search_ms": (t2 - t1) * 1000, "lexical_ms": (t3 - t2) * 1000}
        notes = self._with_sentences(idx, scanned, [int(n) for n in order], where, timings)
        hits = Ranking([Hit(idx.notes[n], float(g), self._chunk_of(idx, n, where))
                        for n, g in zip(notes, gate, strict=True)], negative)
        return hits, timings

    def _sentences(self, text: str) -> list[str]:
        """The pieces of a message searched on their own (``[search] sentence_*``); [] for a
        message of one sentence, or with ``sentence_weight`` 0."""
        from recall.ranking import sentences

        s = self.settings
        return sentences.split(text, s.sentence_min_chars, s.sentences_max) if s.sentence_weight > 0 else []

    def _with_sentences(self, idx: LoadedIndex, scanned, order: list[int], where: dict[int, int],
                        timings: dict) -> list[int]:
        """``order`` below its first note fused by rank with the notes' best scores over the
        message's sentences (``scanned``'s rows after the first, the whole message's: each
        sentence searched on its own, ``recall.ranking.sentences``); as long as ``order``, whose
        i-th gate score the i-th note keeps. ``order`` itself without sentences. A note found
        only by a sentence gets that chunk in ``where``; ``timings["sentences_ms"]``: their
        fusion (their embedding is in ``embed_ms``, their scan in ``search_ms``: one model call
        and one scan with the whole message)."""
        from recall.ranking import sentences

        if scanned is None or len(scanned[0]) < 2 or not order:
            return order
        t0 = time.perf_counter()
        s = self.settings
        found: dict[int, int] = {}
        ranked = sentences.ranked_over_rows(idx.chunk_note, scanned[0][1:], scanned[1][1:], found)
        fused = sentences.below_top(order, ranked, k=s.sentence_rank_k, weight=s.sentence_weight)
        for note in fused:
            if note not in where and note in found:
                where[note] = found[note]
        timings["sentences_ms"] = (time.perf_counter() - t0) * 1000
        return fused

    def _headers_on(self, idx: LoadedIndex | None) -> bool:
        return self.settings.header_weight > 0 and idx is not None and idx.headers is not None

    def _with_headers(self, idx: LoadedIndex, qv, dense):
        """The dense scores that order the notes: ``(1 - w) * best chunk + w * header`` for each
        retrieved note with a header and no questions of its own (``[search] header_weight`` = w),
        its best chunk alone otherwise: the header stands in for questions where a note has none;
        beside them it cost hit@1 on every dev collection but the sample (docs/decision.md, issue
        #23). Only the order: whether to speak stays the best chunks' call."""
        return blended(dense, idx.headers, qv, self.settings.header_weight, ~idx.asked)

    def _ordering(self, idx: LoadedIndex, qv, dense, scanned):
        """The dense side of the order: a note with questions by its best rows together
        (``with_best_rows``) and its prototype, one without by its best row and its header
        (``_with_headers``)."""
        rows = idx._scope_cache.get("rows")  # rows per note: once per generation, off the message's path
        if rows is None:
            import numpy as np

            rows = idx._scope_cache.put("rows", np.bincount(idx.chunk_note, minlength=len(idx.notes)))
        ordering = with_best_rows(dense, idx.chunk_note, rows, scanned, self.settings.best_rows, idx.asked)
        ordering = blended(ordering, idx.prototypes, qv, self.settings.prototype_weight)  # its questions' mean
        return self._with_headers(idx, qv, ordering) if self._headers_on(idx) else ordering

    def _reorder(self, idx: LoadedIndex, qv, hits: list[Hit], scanned) -> list[Hit]:
        """Dense-only hits in the order the fused path's dense side gives (``with_best_rows``,
        then ``_with_headers``); the i-th keeps the i-th best chunk score, so the gap rule sees
        exactly what it would without them."""
        import numpy as np

        if len(hits) < 2:
            return hits
        pos = {id(n): i for i, n in enumerate(idx.notes)}
        dense = np.full(len(idx.notes), -np.inf)
        where = [pos[id(h.note)] for h in hits]
        dense[where] = [h.score for h in hits]
        ordering = self._ordering(idx, qv, dense, scanned)[where]
        order = np.argsort(-ordering, kind="stable")
        return [Hit(hits[i].note, hits[r].score, hits[i].chunk) for r, i in enumerate(order)]

    def search_vector(self, qv, scope: Scope | None, k_notes: int = 20) -> list[Hit]:
        """Dense only: notes by their best chunk's cosine (what a store's contract search
        returns: headers play no part)."""
        return self._dense(qv, scope, k_notes)[0]

    def _dense(self, qv, scope: Scope | None, k_notes: int):
        """``search_vector``'s hits, and the scan they came from (None where there was none)."""
        idx = self.index
        if idx is None or idx.ntotal == 0:
            return [], None
        where: dict[int, int] = {}
        scope = scope or Scope(everything=True)
        scanned = self._scan(idx, qv, scope, CHUNKS_PER_QUERY)
        best = self._best_per_note(idx, qv, scope, CHUNKS_PER_QUERY, k_notes, where, scanned)
        ranked = sorted(best.items(), key=lambda kv: -kv[1])[:k_notes]
        return [Hit(idx.notes[n], s, self._chunk_of(idx, n, where)) for n, s in ranked], scanned

    @staticmethod
    def _chunk_of(idx: LoadedIndex, note: int, where: dict[int, int]) -> int | None:
        """The place of a note's best chunk among its chunks (a document's page: Hit.location)."""
        import numpy as np

        cid = where.get(note)
        return None if cid is None else cid - int(np.searchsorted(idx.chunk_note, note, side="left"))

    def _best_per_note(self, idx: LoadedIndex, qv, scope: Scope, chunks: int, notes_wanted: int = 0,
                       where: dict[int, int] | None = None, scanned=None) -> dict[int, float]:
        """note position -> its best chunk's score, over the ``chunks`` best chunks in scope;
        fetched again with four times as many while they hold fewer than ``notes_wanted`` notes
        (a long document's chunks can fill the first fetch). ``where``: note -> best chunk id.
        ``scanned``: the first fetch, already made (``_scan`` with ``qv`` as its first row)."""
        found = scanned if scanned is not None else self._scan(idx, qv, scope, chunks)
        best, complete = _best_of_scan(idx, found, where)
        while len(best) < notes_wanted and not complete:
            chunks *= 4
            best, complete = _best_of_scan(idx, self._scan(idx, qv, scope, chunks), where)
        return best

    def _scan(self, idx: LoadedIndex, vectors, scope: Scope, chunks: int):
        """FAISS's ``chunks`` best chunks in scope for each row of ``vectors``: (scores, ids,
        whether that held every chunk in scope); None when the scope admits no chunk."""
        faiss = native.faiss()

        if idx.ntotal == 0:
            return None
        params, in_scope = None, idx.ntotal
        if not scope.everything:
            id_filter = self._id_filter(idx, scope)
            if id_filter is None:
                return None
            params, in_scope = id_filter[:2]  # id_filter, held to the end, keeps its selector alive
        k = min(chunks, in_scope)
        # OpenMP's thread count is per thread: the daemon's workers (and the MCP server's) would
        # each wake a team of threads for one question (p95 10 ms instead of 0.7 over 10,000
        # chunks, bench_mcp); setting it costs nothing.
        faiss.omp_set_num_threads(1)
        if params is None:
            scores, ids = idx.index.search(vectors, k)  # type: ignore[attr-defined]
        else:
            scores, ids = idx.index.search(vectors, k, params=params)  # type: ignore[attr-defined]
        return scores, ids, k >= in_scope

    def _cjk_notes(self, idx: LoadedIndex):
        """Boolean mask over ``idx.notes``: which are written mainly in CJK script (cached)."""
        import numpy as np

        from recall.ranking.fusion import mostly_cjk

        mask = idx._scope_cache.get("cjk")
        if mask is None:
            mask = np.array([mostly_cjk(f"{n.get('name', '')} {n.get('description', '')}") for n in idx.notes],
                            dtype=bool)
            idx._scope_cache.put("cjk", mask)
        return mask

    def _admitted(self, idx: LoadedIndex, scope: Scope):
        """Boolean mask over ``idx.notes``: which notes the scope may see (cached)."""
        import numpy as np

        key = (scope.key, "notes")
        mask = idx._scope_cache.get(key)
        if mask is None:
            mask = np.array([scope.admits(n) for n in idx.notes], dtype=bool)
            idx._scope_cache.put(key, mask)
        return mask

    def _id_filter(self, idx: LoadedIndex, scope: Scope):
        """FAISS search parameters that admit only the scope's chunks, how many there are, and
        the selector and array the parameters point into (the caller holds the tuple through its
        search: the cache may drop it meanwhile); cached per scope; None when the scope admits none."""
        faiss = native.faiss()
        import numpy as np

        cached = idx._scope_cache.get(scope.key)
        if cached is not None:
            return cached if cached != "empty" else None
        allowed = self._admitted(idx, scope)[idx.chunk_note]
        count = int(allowed.sum())
        if count == 0:
            idx._scope_cache.put(scope.key, "empty")
            return None
        hnsw = isinstance(idx.index, faiss.IndexHNSWFlat)
        # A selector even when the scope admits every chunk (measured faster in the daemon's workers
        # before their OpenMP thread count was set per search; kept: the same results). A bitmap:
        # the same chunks as a set of ids, cheaper to test per vector (0.29 ms for half of 10,000
        # chunks against 0.53 with IDSelectorBatch's hash set; the same results).
        bits = np.packbits(allowed, bitorder="little")
        sel = faiss.IDSelectorBitmap(bits)  # type: ignore[call-arg,arg-type]  # the SWIG wrapper takes the array
        if hnsw:
            params = faiss.SearchParametersHNSW(sel=sel, efSearch=128)  # type: ignore[attr-defined]
        else:
            params = faiss.SearchParameters(sel=sel)  # type: ignore[call-arg]
        return idx._scope_cache.put(scope.key, (params, count, sel, bits))


def _best_of_scan(idx: LoadedIndex, found, where: dict[int, int] | None) -> tuple[dict[int, float], bool]:
    """``_first_per_note`` over a scan's first row, and whether the scan held every chunk in
    scope (an empty scope holds none: nothing more to fetch)."""
    if found is None:
        return {}, True
    scores, ids, complete = found
    return _first_per_note(idx.chunk_note, scores[0], ids[0], where), complete


def _first_per_note(chunk_note, scores, ids, where: dict[int, int] | None) -> dict[int, float]:
    """note -> the score of its first chunk in ``ids`` (FAISS's results, best first, -1 for
    none), in that order; ``where``: note -> that chunk. numpy's ``unique`` finds each note's
    first place, so the dict is the one a loop over the results would build."""
    import numpy as np

    keep = ids >= 0
    ids, scores = ids[keep], scores[keep]
    notes = chunk_note[ids]
    _, first = np.unique(notes, return_index=True)
    first.sort()  # rank order: the dict keeps the order the loop gave
    order = notes[first].tolist()
    if where is not None:
        where.update(zip(order, ids[first].tolist(), strict=True))
    return dict(zip(order, scores[first].tolist(), strict=True))
