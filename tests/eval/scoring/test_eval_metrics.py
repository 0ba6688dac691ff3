"""Metrics on hand-computed arrays, against ranx as an oracle, and the bootstrap's seed."""

from __future__ import annotations

import random

import numpy as np
import pytest

from recall_eval.results import Metric
from recall_eval.scoring import metrics as M
from recall_eval.scoring.metrics import Record
from recall_eval.scoring.stats import bootstrap_ci


def rec(qid, kind="paraphrase", ranked=(), expected=("a",), decision="nothing", injected=(), lang="en",
        note_lang="en", nbytes=0):
    return Record(id=qid, set_id="s", kind=kind, lang=lang, text=qid,
                  expected=list(expected) if kind == "paraphrase" else [],
                  note_lang=note_lang if kind == "paraphrase" else None, ranked=list(ranked),
                  scores=[1.0 - i / 100 for i in range(len(ranked))], decision=decision,
                  injected=list(injected), bytes=nbytes)


def test_per_question_values_by_hand():
    assert M.hit_at(["b", "a", "c"], ["a"], 1) == 0.0
    assert M.hit_at(["b", "a", "c"], ["a"], 3) == 1.0
    assert M.hit_at([], ["a"], 3) == 0.0
    assert M.reciprocal_rank(["b", "c", "a"], ["a"]) == pytest.approx(1 / 3)
    assert M.reciprocal_rank(["b", "c"], ["a"]) == 0.0
    assert M.reciprocal_rank(["b", "a", "c"], ["c", "a"]) == 0.5  # first relevant counts
    assert M.injected_hit(["a", "b"], ["b"]) == 1.0
    assert M.injected_hit([], ["b"]) == 0.0


def test_summary_by_hand():
    records = [
        rec("p1", ranked=["a", "b"], decision="short", injected=["a"], nbytes=500),  # rank 1, injected
        rec("p2", ranked=["b", "a"], decision="full", injected=["b"], nbytes=900),  # rank 2, missed
        rec("p3", ranked=["b", "c", "d", "a"]),  # rank 4, silent
        rec("p4", ranked=[]),  # not found
        rec("u1", kind="unrelated", ranked=["a"]),
        rec("u2", kind="unrelated", ranked=["a"], decision="short", injected=["a"], nbytes=700),
    ]
    m = M.summarize(records)
    assert m["hit_rate@1"].value == pytest.approx(1 / 4)
    assert m["hit_rate@3"].value == pytest.approx(2 / 4)
    assert m["mrr"].value == pytest.approx((1 + 0.5 + 0.25 + 0) / 4)
    assert m["injected_hit_rate"].value == pytest.approx(1 / 4)
    assert m["silence_rate"].value == pytest.approx(1 / 2)
    assert m["balanced_accuracy"].value == pytest.approx((0.25 + 0.5) / 2)
    assert m["short_rate"].value == pytest.approx(2 / 6)
    assert m["full_rate"].value == pytest.approx(1 / 6)
    assert m["bytes_p95"].value == pytest.approx(np.percentile([500, 900, 700], 95))
    assert m["hit_rate@1"].n == 4 and m["silence_rate"].n == 2 and m["bytes_p95"].n == 3
    for v in m.values():
        lo, hi = v.ci95
        assert lo <= v.value + 1e-9 and v.value <= hi + 1e-9


def test_headline_precision_and_headlines_per_message_by_hand():
    records = [
        rec("p1", ranked=["a", "b", "c"], decision="short", injected=["a", "b", "c"]),  # 1 of 3 right
        rec("p2", ranked=["a", "b"], decision="short", injected=["a"]),  # 1 of 1 right
        rec("p3", ranked=["b", "a"], decision="short", injected=["b", "c"]),  # 0 of 2 right
        rec("p4", ranked=["a"]),  # silent: not counted in precision
        rec("u1", kind="unrelated", ranked=["a"], decision="short", injected=["a", "b"]),
        rec("u2", kind="unrelated", ranked=["a"]),
    ]
    m = M.summarize(records)
    # pooled over every headline handed over, an unrelated message's two wrong: (1 + 1 + 0 + 0) / (3 + 1 + 2 + 2)
    # (related messages' only, 2 / 6, hid the worst errors: an outside tester's AH03)
    assert m["headline_precision"].value == pytest.approx(2 / 8)
    assert m["headline_precision"].n == 4
    lo, hi = m["headline_precision"].ci95
    assert 0.0 <= lo <= 2 / 8 <= hi <= 1.0 and lo < hi
    # every message counts, a silent one as 0 headlines: (3 + 1 + 2 + 0 + 2 + 0) / 6
    assert m["headlines_per_message"].value == pytest.approx(8 / 6)
    assert m["headlines_per_message"].n == 6
    assert M.right_headlines(["a", "b", "a"], ["a"]) == 2


def test_empty_populations_give_none():
    m = M.summarize([rec("u1", kind="unrelated")])
    assert m["hit_rate@1"] == Metric(None, None, 0)
    assert m["bytes_p95"].value is None
    assert m["balanced_accuracy"].value is None
    assert "hit_rate@1" not in M.flat(m)


def random_records(n: int, seed: int) -> list[Record]:
    rng = random.Random(seed)
    notes = [f"n{i}" for i in range(12)]
    out = []
    for i in range(n):
        ranked = rng.sample(notes, rng.randint(0, 12))
        out.append(rec(f"q{i}", ranked=ranked, expected=rng.sample(notes, rng.choice((1, 1, 2)))))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ranking_metrics_match_ranx(seed):
    records = random_records(60, seed)
    ours = M.summarize(records)
    oracle = M.ranx_metrics(records)
    for name in ("hit_rate@1", "hit_rate@3", "mrr"):
        assert ours[name].value == pytest.approx(oracle[name], abs=1e-9), name


def test_bootstrap_is_reproducible_with_its_seed():
    values = np.random.default_rng(0).integers(0, 2, size=80).astype(float)
    a = bootstrap_ci(values, seed=7)
    assert a == bootstrap_ci(values, seed=7)
    assert a != bootstrap_ci(values, seed=8)
    lo, hi = a
    assert lo < values.mean() < hi
    # 1,000 percentile resamples of a 0/1 mean: the interval is about +-2 standard errors.
    se = values.std() / np.sqrt(values.size)
    assert hi - lo == pytest.approx(4 * se, rel=0.25)
    # every question a hit: resamples cannot vary, so Wilson's interval says what 3 or 40 can tell
    # (an outside tester read "1.000 [1.000, 1.000]" on 40 questions, "[0, 0]" on one)
    lo3, hi3 = bootstrap_ci([1.0, 1.0, 1.0])
    assert hi3 == pytest.approx(1.0) and 0.4 < lo3 < 0.5
    assert bootstrap_ci([1.0] * 40)[0] == pytest.approx(0.912, abs=0.001)
    assert bootstrap_ci([0.0])[1] == pytest.approx(0.793, abs=0.001)
    assert bootstrap_ci([]) is None
    assert bootstrap_ci([0.7]) == (0.7, 0.7)  # one value: every resample is that value
    assert M.summarize(random_records(30, 5), seed=3) == M.summarize(random_records(30, 5), seed=3)


def test_headline_precision_of_all_right_headlines_has_a_real_interval():
    """Every headline right on 5 messages read "1.000 [1.000, 1.000]" (an outside tester, stop 44):
    Wilson's interval over the headlines, as for the other rates."""
    from recall_eval.scoring.stats import ratio_ci

    lo, hi = ratio_ci([1, 1, 2, 1, 1], [1, 1, 2, 1, 1])
    assert hi == pytest.approx(1.0) and 0.5 < lo < 0.7
    assert ratio_ci([0, 0], [1, 2])[0] == 0.0 and 0.5 < ratio_ci([0, 0], [1, 2])[1] < 0.8
    lo, hi = ratio_ci([1, 0, 2, 1], [1, 1, 3, 2])
    assert lo < 4 / 7 < hi


def test_a_set_names_a_note_whose_stem_reads_as_a_secret_as_written():
    from recall.privacy.masking import mask_secrets
    from recall_eval.datasets.collections import parse_question

    stem = "deploy-" + "ghp_" + "QnAb12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr"
    q = parse_question({"id": "a", "kind": "paraphrase", "text": "where is it?", "expected": [stem], "lang": "en"},
                       "set.jsonl:1")
    assert q.expected == [mask_secrets(stem)] and stem not in q.expected


def test_language_breakdowns():
    records = [
        rec("e1", ranked=["a"], lang="en", note_lang="en"),
        rec("e2", ranked=["b"], lang="en", note_lang="ja"),
        rec("j1", ranked=["a"], lang="ja", note_lang="ja"),
        rec("u1", kind="unrelated", lang="ja"),
    ]
    b = M.breakdowns(records)
    assert set(b.by_lang) == {"en", "ja"}
    assert b.by_lang["en"]["hit_rate@1"].value == 0.5
    assert b.by_lang["ja"]["silence_rate"].value == 1.0
    assert b.cross_lang["same"]["hit_rate@1"].value == 1.0
    assert b.cross_lang["cross"]["hit_rate@1"] == Metric(0.0, (0.0, pytest.approx(0.793, abs=0.001)), 1)


def test_a_stored_figure_its_own_rows_contradict_is_refused():
    """A results.json edited to read hit@1 0.99 where its rows give 0.75, or silence 1.7, was
    printed by `report` and `versus` as it stood (an outside tester's AH15)."""
    from dataclasses import asdict

    from recall_eval.datasets.collections import DatasetError

    records = [rec("p1", ranked=["a"], decision="short", injected=["a"]), rec("p2", ranked=["b", "a"]),
               rec("u1", kind="unrelated", ranked=["a"])]
    figures = {m: {"value": v.value} for m, v in M.summarize(records).items()}
    results = {"pipelines": {"default": {"records": [asdict(r) for r in records], "metrics": figures}}}
    M.check_figures(results, "run")  # as written: accepted
    for metric, forged in (("hit_rate@1", 0.99), ("silence_rate", 1.7)):
        results["pipelines"]["default"]["metrics"] = {**figures, metric: {"value": forged}}
        with pytest.raises(DatasetError, match=f"main default {metric} reads {forged} where the run's own rows"):
            M.check_figures(results, "run")


def test_the_gates_difference_of_nothing_is_nothing():
    """Right after `regress --update`, every per-question difference 0: the interval read
    [+0.000, +0.060] (0 of 60's Wilson bound), "no loss possible", for MRR too (AH07)."""
    from recall_eval.reports.regress import paired_diff_ci

    same = {f"q{i}": float(i % 2) for i in range(60)}
    assert paired_diff_ci(same, same) == [0.0, 0.0]
    lo, hi = paired_diff_ci({**same, "q0": 1.0}, same)
    assert lo <= 0.0 < hi
