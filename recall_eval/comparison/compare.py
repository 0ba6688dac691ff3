"""``recall-eval compare``: the core's configurations, lexical baselines and rerankers on the same questions.

Protocol
  * Every pipeline is a retriever (``recall_eval.scoring.retrievers``): the core through
    ``recall.api`` only (``recall_eval.comparison.components.CoreIndex``: one index per model,
    the notes' questions on or off, BM25's weight in its fusion a setting), the bm25s and grep
    baselines, and rerankers of the core's dense list (``recall_eval.comparison.rerank``).
    Each component answers every question once (``recall_eval.comparison.pipelines``); a
    pipeline turns its answers into a ranking (which notes, in what order) and a *gate*: the
    scores the gap rule sees, always on a model's cosine scale so that thresholds keep their
    meaning. The core's gate is its own (its fused list keeps the dense list's score shape);
    max-sim rankings are their own gate; a cross-encoder only reorders the dense list, so it
    keeps that list's score shape (``hits_of``): whether to speak is the dense model's call,
    which notes to inject is the new order's. Lexical pipelines use the baselines' rule (top 3
    when anything matched).
  * Whatever is tuned (BM25's weight in the core's fusion on a 0.1 grid, the max-sim alpha,
    the gap rule's four thresholds with ``recall_eval.tuning.tune``'s grid and objective, by
    default the most injected hits with silence >= 0.85) is tuned on a fold's training
    questions and applied to its held-out set: the core's ranked lists are computed once per
    configuration and ``recall.ranking.selector.decide`` applied with the rules tried. Folds:
    leave one question set out (each set is reported once, by parameters that never saw it)
    or ``--train/--test``; CLINC150: val + oos_val, then test + oos_test.
  * Held-out results of all folds are pooled; metrics and 95% bootstrap intervals come from
    ``recall_eval.scoring.metrics``. Every pipeline is compared with the default (the configured model,
    no BM25) on the same questions: ranking metrics with ``ranx.compare`` (Fisher's
    randomization test), operating-point rates with the same paired randomization test in
    numpy; Holm-corrected over the pipelines; † = p < 0.05 after correction.
  * Costs in the same run: latency per question = every step of the pipeline (the core's:
    one ``Recall.rank``, the query embedded live), one question at a time, each timed on the
    same LATENCY_QUESTIONS questions; memory = RSS growth when the pipeline's models load, in
    a fresh process; index build = ``Recall.index`` as timed, + the texts a reranker embeds x
    seconds per text measured when they were embedded, + BM25's build.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from recall.config.load import load_config
from recall.config.settings import ChunkConfig, Rule
from recall.embedding.models import model_id_of
from recall.ranking.selector import Hit, decide
from recall_eval.comparison.components import K_NOTES, Bench, Corpus, EmbeddingCache, load_note_questions, top_depth
from recall_eval.comparison.pipelines import Parts, Spec, make_specs
from recall_eval.comparison.rerank import CrossReranker
from recall_eval.comparison.significance import SIGNIFICANCE, significance
from recall_eval.datasets.collections import DatasetError, Question, note_text
from recall_eval.results import to_json
from recall_eval.scoring import metrics as M
from recall_eval.scoring import stats
from recall_eval.scoring.baselines import GrepBaseline, lexical_decision, note_dict
from recall_eval.scoring.stats import PERMUTATIONS
from recall_eval.text import detect_lang
from recall_eval.tuning.tune import Objective, Outcomes, Ranked, gap_settings, margin_grid, search, to_config

LATENCY_QUESTIONS = 40
REPEATS = 3  # each timed step runs this many times; the fastest counts


def make_folds(questions: Sequence[Question], train: Sequence[str] = (), test: Sequence[str] = ()):
    sets = list(dict.fromkeys(q.set_id for q in questions))

    def rows(names) -> np.ndarray:
        return np.array([i for i, q in enumerate(questions) if q.set_id in names], dtype=np.int64)

    if train or test:
        test = list(test) or [s for s in sets if s not in train]
        train = list(train) or [s for s in sets if s not in test]
        unknown = sorted((set(train) | set(test)) - set(sets))
        if unknown or set(train) & set(test) or not train or not test:
            raise DatasetError(f"bad split: train {train}, test {test} (sets: {', '.join(sets)})")
        return [("+".join(test), rows(train), rows(test))], f"train {'+'.join(train)} / test {'+'.join(test)}"
    if len(sets) < 2:
        raise DatasetError("leave-one-set-out needs two or more question sets (or give --train/--test)")
    return [(s, rows([x for x in sets if x != s]), rows([s])) for s in sets], "leave one set out"

def load_bench(name: str, notes_dir: Path, files: Sequence[Path], *, chunking: ChunkConfig | None = None,
               note_questions: Path | None = None, train: Sequence[str] = (), test: Sequence[str] = ()) -> Bench:
    from recall_eval.datasets.collections import check_expected, load_sets, read_notes

    notes = read_notes(notes_dir)
    questions = load_sets(files)
    check_expected(questions, [n.id for n in notes], str(notes_dir))
    exp = load_note_questions(note_questions, [n.id for n in notes]) if note_questions else None
    folds, split = make_folds(questions, train, test)
    return Bench(name, Corpus.build(notes, chunking, exp), questions, folds, split, notes_dir, note_questions)


def clinc_bench(path: Path, where: Path, *, limit: int | None, per_intent: int | None, seed: int,
                chunking: ChunkConfig | None = None) -> Bench:
    """CLINC150 as a collection: one note per intent (``recall_eval.datasets.clinc150.write_notes``);
    val + oos_val train the fold, test + oos_test are reported (seeded ``limit`` per split)."""
    import shutil

    from recall_eval.datasets import clinc150
    from recall_eval.datasets.collections import read_notes

    data = clinc150.subsample(clinc150.load(path), limit, seed)
    notes_dir = where / f"clinc150-notes-{per_intent or 'all'}"
    shutil.rmtree(notes_dir, ignore_errors=True)
    clinc150.write_notes(data["train"], notes_dir, per_intent)
    questions = [Question(f"{split}-{i}", "unrelated" if split.startswith("oos") else "paraphrase", text,
                          [] if split.startswith("oos") else [intent], "en", split)
                 for split in clinc150.QUERY_SPLITS for i, (text, intent) in enumerate(data[split])]
    folds, split = make_folds(questions, ["val", "oos_val"], ["test", "oos_test"])
    return Bench("clinc150", Corpus.build(read_notes(notes_dir), chunking), questions, folds, split, notes_dir)


# --- operating point ---------------------------------------------------------------------


def hits_of(bench: Bench, rank: np.ndarray, gate: np.ndarray | None, i: int) -> list[Hit]:
    """The ranking as the selector sees it. A pipeline that only reorders another's notes
    (fusion, cross-encoder) keeps that one's score *shape*: its k-th note carries the
    gate's k-th best score, so top and gap (whether to speak) are the gate's own, while
    which notes get injected follows the new order."""
    notes, order = bench.corpus.notes, top_depth(rank[i], K_NOTES)
    if gate is None or gate is rank:
        return [Hit(note_dict(notes[j]), float(rank[i, j])) for j in order]
    shape = np.sort(gate[i][np.isfinite(gate[i])])[::-1]
    return [Hit(note_dict(notes[j]), float(shape[min(k, shape.size - 1)])) for k, j in enumerate(order)]


def tune_gate(bench: Bench, rank: np.ndarray, gate: np.ndarray, rows: np.ndarray, base: Rule,
              objective: Objective) -> Rule:
    """The gap rule's four thresholds tuned on ``rows`` by ``recall_eval.tuning.tune`` (the search
    ``recall-eval tune`` runs), on this pipeline's gate scores."""
    ranked = [Ranked(bench.questions[i], hits_of(bench, rank, gate, i)) for i in rows]
    chosen, _train = search(Outcomes(ranked, base, margin_grid(ranked, base)), objective)
    return base.replace(**to_config(chosen), source="tuned on train")


def records_for(bench: Bench, spec: Spec, base: Rule, note_langs: dict[str, str],
                objective: Objective) -> tuple[list, list]:
    from recall_eval.scoring.score import make_record

    out, params = [], []
    for fold, tr, te in bench.folds:
        rank, gate, p = spec.run(tr)
        settings = tune_gate(bench, rank, gate, tr, base, objective) if gate is not None else base
        if gate is not None:
            t = settings.thresholds
            p = {**p, **{k: getattr(t, k) for k in ("gap_floor", "top_floor", "full_gap", "full_margin")}}
        params.append({"held_out": fold, **p})
        for i in te:
            q, hits = bench.questions[i], hits_of(bench, rank, gate, i)
            dec = decide(q.text, hits, settings) if gate is not None else lexical_decision(q.text, hits, settings)
            out.append(make_record(q, hits, dec, note_langs))
    return out, params


# --- costs -------------------------------------------------------------------------------


def rss_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB from /proc/self/status (nan where absent)."""
    found = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = float(value.split()[0]) / 1024
    except OSError:
        pass
    return found.get("VmRSS", float("nan")), found.get("VmHWM", float("nan"))


def probe_memory(models: Sequence[str]) -> dict | None:
    """RSS growth when ``models`` load (and answer once), in a fresh interpreter."""
    if not models:
        return {"rss_mb": 0.0, "peak_mb": 0.0}
    proc = subprocess.run([sys.executable, "-m", "recall_eval.comparison.compare", "probe", *models],
                          capture_output=True, text=True, timeout=900, check=False)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def _probe(models: Sequence[str]) -> None:
    before, _ = rss_mb()
    for spec in models:
        if spec.startswith("cross:"):
            CrossReranker(spec[6:]).scores("warm up", ["a note"])
        else:
            from recall.embedding.models import get_embedder

            get_embedder(spec, gemini=load_config().gemini).embed_queries(["warm up"])
    after, peak = rss_mb()
    print(json.dumps({"rss_mb": round(after - before, 1), "peak_mb": round(peak - before, 1)}))


def time_ops(bench: Bench, P: Parts, specs: Sequence[Spec], rows: np.ndarray) -> dict[str, list[float]]:
    """Milliseconds of every step the pipelines use, per question, the way a hook runs
    them: one question at a time, each step the fastest of REPEATS runs. The core's steps
    (``rank:VARIANT:M``) are one ``Recall.rank``: the query embedded live, search, fusion
    at the configured BM25 weight; a reranker's query vector (``embed:M``) is embedded live too."""
    c, d, out = bench.corpus, P.models[0], {}
    needed = {o for s in specs for o in s.ops}

    def clock(key, fn, *args):
        # the fastest of REPEATS runs: the machine is shared, and a step that lost the CPU
        # to another process says nothing about the step
        best = np.inf
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            value = fn(*args)
            best = min(best, time.perf_counter() - t0)
        out.setdefault(key, []).append(best * 1000)
        return value

    cores = sorted({tuple(o.split(":")[1:]) for o in needed if o.startswith("rank:")})
    for variant, m in cores:
        P.core(m, variant).with_weight(None).rank_one("warm up")
    grep = GrepBaseline(c.notes)
    bm25 = P.lexical() if "bm25" in needed else None
    for i in rows:
        text = bench.questions[i].text
        for variant, m in cores:
            clock(f"rank:{variant}:{m}", P.core(m, variant).rank_one, text)
        for m in P.models:
            if f"embed:{m}" in needed:
                qv = clock(f"embed:{m}", P.embedder(m).embed_queries, [text])
            if f"maxsim:{m}" in needed:
                clock(f"maxsim:{m}", P.sentences(f"sentence:{m}").rerank_one, qv, P.ranked(m).gate[i], 0.5)
        if bm25 is not None:
            clock("bm25", bm25.rank, text)
        if "grep" in needed:
            clock("grep", grep.rank, text)
        for o in sorted(x for x in needed if x.startswith("cross:")):
            R = P.ranked(d)
            clock(o, P.cross(o[6:]).rerank_one, text, R.order[i], R.chunk[i], c)
    return out


def latency(spec: Spec, ops: dict[str, list[float]]) -> dict:
    # a 3-model fusion costs about what a 2-model one does: fusion time is a fraction of a ms
    per_q = np.sum([ops[o] for o in spec.ops], axis=0)
    return {"p50_ms": round(float(np.percentile(per_q, 50)), 2), "p95_ms": round(float(np.percentile(per_q, 95)), 2),
            "n": int(per_q.size), "steps_p50_ms": {o: round(float(np.median(ops[o])), 3) for o in spec.ops}}


def build_seconds(spec: Spec, P: Parts, cache: EmbeddingCache) -> float | None:
    """Index build: ``Recall.index`` as timed (chunks, questions, calibration), + the texts a
    reranker embeds x seconds per text when they were embedded, + BM25's build."""
    total = 0.0
    for part in spec.build:
        if part == "bm25":
            total += P.bm25_build_s
            continue
        if part.startswith("core:"):
            _, variant, model = part.split(":", 2)
            total += P.core(model, variant).build_s
            continue
        kind, model = part.split(":", 1)
        rate = cache.seconds_per_text(model_id_of(model, load_config().gemini.dimensions), kind)
        if rate is None:
            return None
        total += rate * P.sizes[part]
    return round(total, 2)


def chosen(every: list, patterns: Sequence[str], default: str, strict: bool) -> list:
    """The pipelines of ``every`` that ``patterns`` match, the default one always; with ``strict``, a
    pattern matching none is one line listing them (it ran the default alone, exit 0: a tester's)."""
    import fnmatch

    for pattern in patterns if strict else ():
        if not any(fnmatch.fnmatch(s.name, pattern) for s in every):
            from recall_eval.files import InputError

            raise InputError(f"--pipelines {pattern!r} matches no pipeline; the pipelines here: "
                             f"{', '.join(s.name for s in every)} (give --pipelines a glob matching some)")
    return [s for s in every if not patterns or s.name == default or any(fnmatch.fnmatch(s.name, p) for p in patterns)]


def compare(bench: Bench, models: Sequence[str], cache: EmbeddingCache, *, crosses: Sequence[str] = (),
            patterns: Sequence[str] = (), memory: bool = True, latency_questions: int = LATENCY_QUESTIONS,
            seed: int = M.SEED, objective: Objective | None = None,
            log: Callable[[str], None] = lambda _m: None, strict: bool = False) -> dict:
    """Measure every pipeline on ``bench``; JSON-ready results. ``strict``: a pattern matching no
    pipeline is an ``InputError`` (the command line's --pipelines; a notebook's list may name
    pipelines this machine lacks)."""

    P = Parts(bench, models, cache, log)
    specs = chosen(make_specs(bench, P, models, crosses), patterns, models[0], strict)
    base = gap_settings(P.config(models[0]), P.embedder(models[0]).model_id)
    objective = objective or Objective()
    note_langs = {n.id: detect_lang(note_text(n)) for n in bench.corpus.notes}
    records, params = {}, {}
    for spec in specs:
        log(f"{bench.name}: {spec.name}")
        records[spec.name], params[spec.name] = records_for(bench, spec, base, note_langs, objective)
    sig = significance(records, models[0])
    held_out = np.concatenate([te for _, _, te in bench.folds])
    rows = np.random.default_rng(seed).permutation(held_out)[:latency_questions]
    log(f"{bench.name}: timing {len(rows)} questions one at a time")
    load_before = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    ops = time_ops(bench, P, specs, rows)
    probes: dict[tuple, dict | None] = {}
    pipelines = {}
    for spec in specs:
        if memory and spec.models not in probes:
            log(f"memory: {' + '.join(spec.models) or 'no model'}")
            probes[spec.models] = probe_memory(spec.models)
        recs = records[spec.name]
        pipelines[spec.name] = {
            "label": spec.label, "models": list(spec.models), "params": params[spec.name],
            "metrics": to_json(M.summarize(recs, seed)), **to_json(M.breakdowns(recs, seed)),
            "p_holm": sig.get(spec.name), "latency": latency(spec, ops), "memory": probes.get(spec.models),
            "build_s": build_seconds(spec, P, cache), "records": [r.as_dict() for r in recs]}
    for core in P.cores.values():
        core.close()
    return {"collection": bench.name, "split": bench.split, "default": models[0], "models": list(models),
            "model_ids": {m: model_id_of(m, load_config().gemini.dimensions) for m in models},
            "cross_encoders": list(crosses),
            "n_notes": len(bench.corpus.notes), "n_chunks": len(bench.corpus.chunks),
            "n_questions": int(held_out.size), "folds": [f for f, _, _ in bench.folds],
            "n_paraphrase": sum(bench.questions[i].kind == "paraphrase" for i in held_out),
            "note_questions": sum(len(v) for v in bench.corpus.note_questions.values()),
            "significance": {"test": "paired randomization (ranx.compare fisher for ranking metrics)",
                             "permutations": PERMUTATIONS, "correction": "holm", "alpha": SIGNIFICANCE},
            "bootstrap": {"resamples": stats.N_RESAMPLES, "seed": seed, "level": stats.LEVEL},
            "timing": {"questions": int(len(rows)), "repeats": REPEATS, "load_avg_1min": load_before,
                       "cpus": os.cpu_count()},
            "objective": objective.describe(),
            "pipelines": pipelines}


if __name__ == "__main__" and sys.argv[1:2] == ["probe"]:
    _probe(sys.argv[2:])
