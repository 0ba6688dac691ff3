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

# The core's BM25 alphabet (recall.store.bm25): its kanji/kana runs, its Latin words, its
# bigrams and its stopwords (scikit-learn's English list, 318 words).
from recall.store.bm25 import CJK_RUN, STOPWORDS, WORD, bigrams

_HIRAGANA_ONLY = re.compile(r"^[\u3040-\u309f]+$")
_LATIN_LETTER = re.compile(r"[A-Za-z\u00c0-\u024f]")

# Below 3 letters an English "word" is nearly always a function word or an abbreviation
# too short to say anything (the brief's definition of a content word).
MIN_WORD_CHARS = 3
# A note is Japanese when at least this share of its letters are kanji/kana. Japanese
# notes here are full of code identifiers (`alembic revision -m ...`), so the share of a
# Japanese note sits around 0.4-0.8 and that of an English one at 0; 0.2 separates them
# with room on both sides.
JA_SHARE = 0.2


def _split(text: str) -> tuple[list[str], list[str]]:
    """(Latin words, CJK runs) of ``text``, lowercased."""
    lowered = text.lower()
    runs = CJK_RUN.findall(lowered)
    latin = CJK_RUN.sub(" ", lowered)
    return WORD.findall(latin), runs


def content_words(text: str) -> set[str]:
    words, runs = _split(text)
    out = {w for w in words if len(w) >= MIN_WORD_CHARS and w not in STOPWORDS}
    for run in runs:
        # Hiragana-only bigrams are particles and verb endings (して, ます, という):
        # the Japanese stopwords.
        out.update(b for b in bigrams(run) if not _HIRAGANA_ONLY.match(b))
    return out


def cjk_share(text: str) -> float:
    """Kanji/kana characters over all letters (Latin + CJK); 0 for a text without letters."""
    cjk = sum(len(r) for r in CJK_RUN.findall(text))
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
