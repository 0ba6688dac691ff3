"""The baselines: grep-like counting, BM25 with CJK bigrams, the original rule."""

from __future__ import annotations

from helpers.paths import EVAL_NOTES
from recall.config.load import packaged_settings
from recall.ranking.selector import Hit
from recall.store.bm25 import tokens as bm25_tokens
from recall_eval.datasets.collections import read_notes
from recall_eval.scoring.baselines import (
    ORIGINAL_THRESHOLDS,
    BM25Baseline,
    GrepBaseline,
    lexical_decision,
    original_settings,
)

NOTES = read_notes(EVAL_NOTES)


def ids(hits: list[Hit]) -> list[str]:
    return [h.note["id"] for h in hits]


def test_grep_counts_content_words_case_insensitively():
    hits = GrepBaseline(NOTES).rank("HELM ROLLBACK in PROD please")
    assert ids(hits)[0] == "rollback-runbook"
    assert hits[0].score == 3.0  # helm, rollback, prod ("in" and "please" are stopwords or short)
    assert GrepBaseline(NOTES).rank("banana bread walnuts") == []


def test_bm25_tokenises_japanese_into_bigrams():
    assert bm25_tokens("税額は丸める") == ["税額", "額は", "は丸", "丸め", "める"]
    assert bm25_tokens("The Helm rollback") == ["helm", "rollback"]
    hits = BM25Baseline(NOTES).rank("税額の丸め方")
    assert ids(hits)[0] == "tax-line-rounding"
    assert BM25Baseline(NOTES).rank("zzzz qqqq") == []


def test_lexical_selection_rule():
    s = packaged_settings().rule("default")  # the [thresholds.default] table
    hits = GrepBaseline(NOTES).rank("celery retry decimal rollback migration helm")
    d = lexical_decision("celery retry decimal rollback migration helm", hits, s)
    assert d.kind == "short" and len(d.chosen) == 3 and ids(d.chosen) == ids(hits)[:3]
    assert 0 < d.line_bytes <= s.selector.short_max_bytes
    assert lexical_decision("banana bread", [], s).kind == "nothing"
    assert lexical_decision("ok", hits, s).kind == "nothing"  # under min_prompt_chars, like the hook


def test_original_rule_keeps_the_printed_thresholds():
    tuned = packaged_settings().rule("default").replace(gap_floor=0.04, top_floor=0.8, full_gap=0.2, full_margin=0.01,
                                                         max_notes=2)
    o = original_settings(tuned)
    assert {k: getattr(o.thresholds, k) for k in ORIGINAL_THRESHOLDS} == ORIGINAL_THRESHOLDS
    assert o.selector.max_notes == 2 and o.thresholds.source == "original"
    assert ORIGINAL_THRESHOLDS == {"gap_floor": 0.025, "top_floor": 0.5, "full_gap": 0.11,
                                   "full_margin": 0.05}
