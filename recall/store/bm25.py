"""Lexical search: BM25 postings over each note's text, kept beside the FAISS index.

Why (docs/decision.md, `recall-eval compare`): a multilingual encoder finds notes by
meaning but misses ones a message names by a rare literal word (a tool, an API, a file);
BM25 finds those. How the two lists are fused is ``recall.ranking.fusion``.

Plain Python + numpy, no new dependency. ``recall_eval`` tokenizes with ``tokens`` here.

    tokens(text)   Latin words minus English stopwords (scikit-learn's list), CJK bigrams
    Bm25           Okapi BM25, Lucene variant (k1 1.5, b 0.75), one document per note
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

K1, B = 1.5, 0.75  # bm25s / Lucene defaults

# scikit-learn's ENGLISH_STOP_WORDS (318 words), copied: the core does not depend on it.
STOPWORDS = frozenset("""
    a about above across after afterwards again against all almost alone along already also although
    always am among amongst amoungst amount an and another any anyhow anyone anything anyway anywhere
    are around as at back be became because become becomes becoming been before beforehand behind being
    below beside besides between beyond bill both bottom but by call can cannot cant co con could
    couldnt cry de describe detail do done down due during each eg eight either eleven else elsewhere
    empty enough etc even ever every everyone everything everywhere except few fifteen fifty fill find
    fire first five for former formerly forty found four from front full further get give go had has
    hasnt have he hence her here hereafter hereby herein hereupon hers herself him himself his how
    however hundred i ie if in inc indeed interest into is it its itself keep last latter latterly
    least less ltd made many may me meanwhile might mill mine more moreover most mostly move much must
    my myself name namely neither never nevertheless next nine no nobody none noone nor not nothing now
    nowhere of off often on once one only onto or other others otherwise our ours ourselves out over
    own part per perhaps please put rather re same see seem seemed seeming seems serious several she
    should show side since sincere six sixty so some somehow someone something sometime sometimes
    somewhere still such system take ten than that the their them themselves then thence there
    thereafter thereby therefore therein thereupon these they thick thin third this those though three
    through throughout thru thus to together too top toward towards twelve twenty two un under until up
    upon us very via was we well were what whatever when whence whenever where whereafter whereas
    whereby wherein whereupon wherever whether which while whither who whoever whole whom whose why
    will with within without would yet you your yours yourself yourselves
""".split())
# Kanji (CJK unified + extension A + the iteration mark 々), hiragana, katakana (with the
# long-vowel mark), half-width katakana; the harness's language check reads them too (recall_eval.text).
CJK = "\u3005\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f"
CJK_RUN = re.compile(f"[{CJK}]+")
# A Latin "word": letters/digits, allowed to hold inner _ ' - (due_date, don't, re-run).
WORD = re.compile(r"[^\W_]+(?:['_-][^\W_]+)*")


def bigrams(run: str) -> list[str]:
    """Character bigrams of one CJK run; a one-character run stays itself."""
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def tokens(text: str) -> list[str]:
    """Lowercased Latin words (inner _ ' - kept: due_date, don't) minus stopwords, and
    character bigrams of kanji/kana runs (Japanese has no spaces; bigrams find its words
    without a dictionary)."""
    lowered = text.lower()
    out = [w for w in WORD.findall(CJK_RUN.sub(" ", lowered)) if w not in STOPWORDS]
    for run in CJK_RUN.findall(lowered):
        out += bigrams(run)
    return out


@dataclass
class Bm25:
    """Per term, the notes that contain it and idf * tf-part already multiplied, so a
    question costs one gather-add per query token."""

    terms: dict[str, int]
    indptr: np.ndarray  # CSR over terms
    docs: np.ndarray  # note index
    weights: np.ndarray  # idf * tf / (tf + k1 * (1 - b + b * len / avglen))
    n_docs: int

    @classmethod
    def build(cls, docs: Sequence[str], k1: float = K1, b: float = B) -> Bm25:
        counts = [Counter(tokens(d)) for d in docs]
        lengths = np.array([sum(c.values()) for c in counts], dtype=np.float64)
        avg = float(lengths.mean()) if len(docs) and lengths.mean() > 0 else 1.0
        postings: dict[str, list[tuple[int, int]]] = {}
        for i, c in enumerate(counts):
            for term, tf in c.items():
                postings.setdefault(term, []).append((i, tf))
        terms: dict[str, int] = {}
        indptr: list[int] = [0]
        out_docs: list[np.ndarray] = []
        out_w: list[np.ndarray] = []
        n = len(docs)
        for term, plist in postings.items():
            idf = np.log(1 + (n - len(plist) + 0.5) / (len(plist) + 0.5))
            ids = np.array([p[0] for p in plist])
            tfs = np.array([p[1] for p in plist], dtype=np.float64)
            out_docs.append(ids)
            out_w.append(idf * tfs / (tfs + k1 * (1 - b + b * lengths[ids] / avg)))
            terms[term] = len(terms)
            indptr.append(indptr[-1] + len(plist))
        cat = (lambda xs, t: np.concatenate(xs).astype(t) if xs else np.zeros(0, t))  # noqa: E731
        return cls(terms, np.array(indptr, dtype=np.int64), cat(out_docs, np.int64), cat(out_w, np.float32), n)

    def scores(self, text: str) -> np.ndarray:
        """BM25 of every note for ``text`` (0 = no token matched). A repeated query word
        counts each time, as in bm25s."""
        out = np.zeros(self.n_docs, dtype=np.float64)
        for tok in tokens(text):
            t = self.terms.get(tok)
            if t is not None:
                lo, hi = self.indptr[t], self.indptr[t + 1]
                np.add.at(out, self.docs[lo:hi], self.weights[lo:hi])
        return out

    def save(self, path: Path) -> None:
        """One .npz, no pickle (nothing executable is read back)."""
        with open(path, "wb") as fh:
            self.save_to(fh)

    def save_to(self, fh: BinaryIO) -> None:
        vocab = np.array(sorted(self.terms, key=self.terms.__getitem__), dtype=str)
        np.savez(fh, vocab=vocab, indptr=self.indptr, docs=self.docs, weights=self.weights,
                 n_docs=np.array(self.n_docs))

    @classmethod
    def load(cls, path: Path) -> Bm25:
        with np.load(path, allow_pickle=False) as z:
            terms = {str(t): i for i, t in enumerate(z["vocab"])}
            return cls(terms, z["indptr"], z["docs"], z["weights"], int(z["n_docs"]))
