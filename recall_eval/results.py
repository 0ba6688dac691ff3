"""Results as typed objects, and the one place they become JSON and back.

    Metric          one figure: value, 95% interval, questions it is over
    PipelineResult  one pipeline on one collection: headline metrics, the breakdowns by
                    language / style, and its per-question records
    ScoreReport     ``score_collection``'s result: the default pipeline's figures at the top
                    (as results.json has them), every pipeline under ``pipelines``
    Baseline        ``reports/baseline/<collection>.json``: what ``recall-eval regress`` gates on

``to_json(obj)`` gives the JSON-ready dict, ``from_json(cls, data)`` the object back; both
through pydantic's ``TypeAdapter`` (which reads standard dataclasses), so the JSON on disk
keeps the shape it had when these were plain dicts: ``{"value", "ci95": [lo, hi], "n"}``
per metric, keys in field order. Unknown keys in a file are ignored, so an older or newer
results file still loads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

from pydantic import TypeAdapter

T = TypeVar("T")


@dataclass(frozen=True)
class Metric:
    value: float | None
    ci95: tuple[float, float] | None
    n: int

    @classmethod
    def empty(cls, n: int = 0) -> Metric:
        return cls(None, None, n)


Metrics = dict[str, Metric]


@dataclass
class Breakdowns:
    by_lang: dict[str, Metrics] = field(default_factory=dict)  # question language -> metrics
    cross_lang: dict[str, Metrics] = field(default_factory=dict)  # "same" / "cross" -> ranking metrics
    by_style: dict[str, Metrics] = field(default_factory=dict)  # message style -> metrics


@dataclass
class PipelineResult:
    label: str
    metrics: Metrics
    by_lang: dict[str, Metrics]
    cross_lang: dict[str, Metrics]
    by_style: dict[str, Metrics]
    records: list[dict[str, Any]] = field(default_factory=list)  # metrics.Record.as_dict() per question


@dataclass
class ScoreReport:
    primary_metric: str
    greater_is_better: bool
    model: dict[str, Any]  # spec, model_id
    thresholds: dict[str, Any]  # the four thresholds and neg_weight
    thresholds_source: str
    thresholds_origin: str | None
    calibration: dict[str, Any] | None  # what the self-calibration saw and chose
    notes_dir: str
    pipeline: dict[str, Any]  # note questions, questions file, BM25 weight
    n_notes: int
    n_questions: int
    n_paraphrase: int
    n_unrelated: int
    bootstrap: dict[str, Any]  # resamples, seed, level, method
    metrics: Metrics  # the default pipeline's, as in pipelines["default"]
    by_lang: dict[str, Metrics]
    cross_lang: dict[str, Metrics]
    by_style: dict[str, Metrics]
    pipelines: dict[str, PipelineResult]
    curve: dict[str, Any]  # silence vs hit as top_floor moves
    timings: dict[str, Any]
    lexical_rule: str | None
    lexical_floors: dict[str, Any]
    collection_hash: str | None = None  # the notes' files (``prompting.collection_hash``): which notes were searched


@dataclass
class Baseline:
    collection: str
    collection_hash: str
    sets: list[str]
    created: str
    model: dict[str, Any]
    thresholds: dict[str, float]
    thresholds_source: str
    pipeline: dict[str, Any] | None  # note questions, questions file, BM25 weight
    metrics: Metrics
    tolerance_rule: str
    per_question: dict[str, dict[str, float]]  # metric -> question id -> value
    # sha256 of the sets' bytes (``recall_eval.reports.regress.questions_hash``): the same ids over
    # rewritten questions are other questions (stop 44). None in a baseline from before.
    questions_hash: str | None = None


@cache
def _adapter(cls: type) -> TypeAdapter:
    return TypeAdapter(cls)


def to_json(obj: Any) -> Any:
    """A result object (or a dict/list of them) as JSON-ready dicts, lists and numbers."""
    return _adapter(type(obj)).dump_python(obj, mode="json") if hasattr(obj, "__dataclass_fields__") \
        else TypeAdapter(Any).dump_python(obj, mode="json")


def from_json(cls: type[T], data: Any) -> T:
    """``cls`` from what ``to_json`` wrote (or json.load read)."""
    return _adapter(cls).validate_python(data)
