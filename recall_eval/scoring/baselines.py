"""Baselines that every report shows beside the default pipeline.

    grep           what a user does today: rank notes by how many of the message's
                   content words (recall_eval.text.content_words) occur in them, matched
                   case-insensitively as substrings, the way ``grep -i`` matches.
                   Ties keep file-name order.
    bm25           Okapi BM25 (bm25s, Lucene variant) over the core's tokenizer (recall.store.bm25.tokens): word
                   tokens for Latin text, character bigrams for Japanese.
    original-rule  the original design's gap rule with its printed thresholds, applied to
                   the default model's scores (same ranking as the default pipeline; only
                   the decision can differ, once tuned thresholds exist for the model).

Selection rule of the lexical baselines (they have no calibrated score to threshold):
inject the top ``max_notes`` (3) notes whenever the top score is above 0, i.e. whenever
at least one content word matched, as a short list within ``short_max_bytes``; silence
only when nothing matched. Their silence rate is reported as it comes out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from recall.config.settings import Rule
from recall.notes.files import Note
from recall.ranking.selector import Decision, Hit, decide, line_bytes, render
from recall.store.bm25 import tokens as bm25_tokens
from recall_eval.datasets.collections import note_text
from recall_eval.text import content_words

# The original design's numbers, as printed in [thresholds.default] of
# recall/config/default_config.toml when this harness was written (measured for BAAI/bge-m3).
# Kept here as constants so the baseline stays the *original* rule even after the
# packaged defaults are retuned.
ORIGINAL_THRESHOLDS = {"gap_floor": 0.025, "top_floor": 0.5, "full_gap": 0.11, "full_margin": 0.05}


def note_dict(note: Note) -> dict:
    """The fields the selector renders, shaped like an index entry."""
    return {"id": note.id, "name": note.name, "description": note.description, "path": note.path,
            "kind": "dir", "project": None}


def original_settings(settings: Rule) -> Rule:
    """``settings`` (byte caps, max notes) with the original thresholds, and no test per
    headline (the original rule handed over its list whole)."""
    t = ORIGINAL_THRESHOLDS
    return settings.replace(gap_floor=t["gap_floor"], top_floor=t["top_floor"], full_gap=t["full_gap"],
                            full_margin=t["full_margin"], headline_margin=math.inf, source="original")


def original_rule(text: str, hits: list[Hit], settings: Rule) -> Decision:
    return decide(text, hits, original_settings(settings))


def lexical_decision(text: str, hits: list[Hit], settings: Rule, floor: float = 0.0) -> Decision:
    """Top ``max_notes`` when the best score is above ``floor`` (0: anything matched)."""
    if len(text.strip()) < settings.selector.min_prompt_chars:
        return Decision("nothing", "message too short")
    matched = [h for h in hits if h.score > 0]
    if not matched:
        return Decision("nothing", "no word matched", 0.0, None)
    if matched[0].score <= floor:
        return Decision("nothing", f"top {matched[0].score:.3f} <= floor {floor:.3f}", matched[0].score, None)
    chosen_text, chosen = render(matched[: settings.selector.max_notes], settings.selector.short_max_bytes)
    if not chosen:
        return Decision("nothing", "nothing fits", matched[0].score, None)
    return Decision("short", "top matches", matched[0].score, None, chosen, chosen_text,
                    line_bytes(chosen_text))


class GrepBaseline:
    name = "grep"

    def __init__(self, notes: Sequence[Note]) -> None:
        self.notes = list(notes)
        self._texts = [note_text(n).lower() for n in self.notes]
        self._dicts = [note_dict(n) for n in self.notes]

    def rank(self, text: str, k: int = 20) -> list[Hit]:
        words = content_words(text)
        counts = [sum(1 for w in words if w in t) for t in self._texts]
        order = sorted(range(len(self.notes)), key=lambda i: -counts[i])  # stable: file order on ties
        return [Hit(self._dicts[i], float(counts[i])) for i in order[:k] if counts[i] > 0]


class BM25Baseline:
    name = "bm25"

    def __init__(self, notes: Sequence[Note]) -> None:
        import bm25s

        self.notes = list(notes)
        self._dicts = [note_dict(n) for n in self.notes]
        self._bm25 = bm25s.BM25()
        self._bm25.index([bm25_tokens(note_text(n)) for n in self.notes], show_progress=False)
        self._vocab = set(self._bm25.vocab_dict)

    def rank(self, text: str, k: int = 20) -> list[Hit]:
        tokens = [t for t in bm25_tokens(text) if t in self._vocab]
        if not tokens:
            return []
        scores = self._bm25.get_scores(tokens)
        order = sorted(range(len(self.notes)), key=lambda i: -float(scores[i]))
        return [Hit(self._dicts[i], float(scores[i])) for i in order[:k] if scores[i] > 0]


def lexical_baselines(notes: Sequence[Note]) -> list[GrepBaseline | BM25Baseline]:
    return [GrepBaseline(notes), BM25Baseline(notes)]
