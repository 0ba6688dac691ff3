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


# --- a run's results.json as read back (``recall-eval report``, ``recall-eval versus``) ---------------
# What the readers take from the file, typed: one validation refuses any other shape in one line that
# names the field (``check_run``), where a value of another type was a traceback deep in a renderer
# or a comparison (a metric of -1, ``ranked: true``, a list among the injected ids, "NaN" as a value:
# an outside tester's). Keys not named here are ignored, as ``from_json`` ignores them.


@dataclass
class MetricRow:
    """A metric as read: ``Metric``, the interval and the count optional (an older file lacks them;
    ``[]`` is no interval)."""
    value: float | None
    ci95: tuple[float, float] | tuple[()] | None = None
    n: int = 0


@dataclass
class RecordRow:
    """One question's row (``scoring.metrics.Record.as_dict``)."""
    id: str
    set_id: str
    kind: str
    lang: str
    text: str
    expected: list[str]
    note_lang: str | None
    ranked: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    top: float | None = None
    gap: float | None = None
    decision: str = "nothing"
    injected: list[str] = field(default_factory=list)
    bytes: int = 0
    style: str = ""
    negative: float | None = None


@dataclass
class PipelineRows:
    metrics: dict[str, MetricRow | None]
    records: list[RecordRow] = field(default_factory=list)


@dataclass
class ModelRow:
    spec: str
    model_id: str


@dataclass
class CalibrationRow:
    target_silence: float
    silence: float
    injected: float | None = None


@dataclass
class PipelineSettings:
    note_questions: int
    questions_file: str | None
    lexical_weight: float


@dataclass
class SetRow:
    set_id: str
    provenance: dict[str, Any] | None = None


@dataclass
class BlockFile:
    """What a question set's block holds: the shipped sets' (the top level) and each held-out set's."""
    pipelines: dict[str, PipelineRows]
    n_paraphrase: int = 0
    n_unrelated: int = 0
    by_lang: dict[str, dict[str, MetricRow | None]] = field(default_factory=dict)
    cross_lang: dict[str, dict[str, MetricRow | None]] = field(default_factory=dict)
    by_style: dict[str, dict[str, MetricRow | None]] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=dict)
    calibration: CalibrationRow | None = None
    provenance: dict[str, Any] | None = None


@dataclass(kw_only=True)
class RunFile(BlockFile):
    model: ModelRow
    timings: dict[str, float | None] = field(default_factory=dict)
    pipeline: PipelineSettings | None = None
    sets: list[SetRow] = field(default_factory=list)
    heldout: dict[str, BlockFile] = field(default_factory=dict)
    latency: dict[str, Any] | None = None
    curve: dict[str, Any] = field(default_factory=dict)
    n_notes: int = 0
    n_questions: int = 0
    thresholds_source: str = ""
    collection: str = ""
    run_id: str = ""
    notes_dir: str | None = None
    collection_hash: str | None = None


def check_run(text: str) -> str | None:
    """What in a results.json's text is not of ``RunFile``'s shape, as ``field: what is wrong``
    (the first problem), or None. Strict: "NaN" is no number, ``true`` no list, -1 no metric."""
    import json

    from pydantic import ValidationError

    try:
        _adapter(RunFile).validate_json(text, strict=True)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        return f"{_field(json.loads(text), first['loc'])}: {first['msg'].lower()}"
    return None


def _field(data: Any, loc: tuple) -> str:
    """``records[3].injected[0]`` from pydantic's location, less the union members' tags it adds
    (``...spec.str``): only the steps the file's own data has, and a last one that it lacks."""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        elif i < len(loc) - 1 or not isinstance(data, dict):
            continue
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out.lstrip(".") or "the file"
