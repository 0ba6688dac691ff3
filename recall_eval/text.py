"""Tokenisation shared by the leakage check and the lexical baselines, and a note's language.

Japanese has no spaces, so "words" there are character bigrams of kanji/kana runs (the
usual CJK trick: most Japanese content words are two or more characters, and a bigram
index finds them without a dictionary). Latin text is split into words.

    content_words   words >= 3 letters minus English stopwords, plus CJK bigrams minus
                    hiragana-only ones: what a person would call the *content* of a text.

BM25 tokenizes with the core's ``recall.store.bm25.tokens`` (one tokenizer for core and eval).
"""

from __future__ import annotations

import re
from functools import lru_cache

# Kanji (CJK unified + extension A + the iteration mark 々), hiragana, katakana (with the
# long-vowel mark), half-width katakana.
_CJK = "\u3005\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_HIRAGANA_ONLY = re.compile(r"^[\u3040-\u309f]+$")
# A Latin "word": letters/digits, allowed to hold inner _ ' - (due_date, don't, re-run).
_WORD = re.compile(r"[^\W_]+(?:['_-][^\W_]+)*")
_LATIN_LETTER = re.compile(r"[A-Za-z\u00c0-\u024f]")

# Below 3 letters an English "word" is nearly always a function word or an abbreviation
# too short to say anything (the brief's definition of a content word).
MIN_WORD_CHARS = 3
# A note is Japanese when at least this share of its letters are kanji/kana. Japanese
# notes here are full of code identifiers (`alembic revision -m ...`), so the share of a
# Japanese note sits around 0.4-0.8 and that of an English one at 0; 0.2 separates them
# with room on both sides.
JA_SHARE = 0.2


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """scikit-learn's English stopword list (318 words): a standard list, not ours."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def _split(text: str) -> tuple[list[str], list[str]]:
    """(Latin words, CJK runs) of ``text``, lowercased."""
    lowered = text.lower()
    runs = _CJK_RUN.findall(lowered)
    latin = _CJK_RUN.sub(" ", lowered)
    return _WORD.findall(latin), runs


def bigrams(run: str) -> list[str]:
    """Character bigrams of one CJK run; a one-character run stays itself."""
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def content_words(text: str) -> set[str]:
    words, runs = _split(text)
    stop = stopwords()
    out = {w for w in words if len(w) >= MIN_WORD_CHARS and w not in stop}
    for run in runs:
        # Hiragana-only bigrams are particles and verb endings (して, ます, という):
        # the Japanese stopwords.
        out.update(b for b in bigrams(run) if not _HIRAGANA_ONLY.match(b))
    return out


def cjk_share(text: str) -> float:
    """Kanji/kana characters over all letters (Latin + CJK); 0 for a text without letters."""
    cjk = sum(len(r) for r in _CJK_RUN.findall(text))
    latin = len(_LATIN_LETTER.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.0


def detect_lang(text: str) -> str:
    """'ja' or 'en': the two languages the question sets use."""
    return "ja" if cjk_share(text) >= JA_SHARE else "en"


def overlap(question: str, note_text: str) -> tuple[float, list[str]]:
    """Share of the question's content words that also occur in the note, and which."""
    q = content_words(question)
    if not q:
        return 0.0, []
    shared = sorted(q & content_words(note_text))
    return len(shared) / len(q), shared
