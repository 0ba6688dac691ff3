"""Typed settings: one frozen dataclass per section of ``recall/config/default_config.toml``,
parsed once (``recall.config.load.load_config`` reads the layered files).

Long because: one frozen dataclass per TOML section, and the one parser that checks them.

The packaged TOML is the only source of defaults: no field below has a default value
for a TOML key, and ``tests/core/config/test_config.py`` checks that every key of the packaged file
maps to a field and every field to a key. Fields that are not TOML keys (where a value
came from) say so with ``metadata={"toml": False}``.

A setting is followed in two hops: its key in the TOML (``[search] lexical_weight``) and
its one field (``Settings.search.lexical_weight``), read by its consumer.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from recall.errors import RecallError

PACKAGED = "packaged"
NOT_TOML = {"toml": False}  # field metadata: not a key of the TOML (where a value came from)


class ConfigError(RecallError, ValueError):
    pass


def ranged(low: float, high: float) -> dict[str, tuple[float, float]]:
    """A number field's range, both ends included, as its metadata (``field(metadata=ranged(1,
    10))``; ``check_numbers`` checks it, ``recall config --defaults`` prints it beside the key).
    Every number of every section has one: an outside tester's ``convert_timeout_s = nan`` was
    a traceback in ``recall index``, and ``max_file_mb = nan`` took the size cap away (AI04)."""
    return {"range": (low, high)}


def span(low: float, high: float) -> str:
    """A range as ``recall config --defaults`` and the errors say it: "from 1 to 60,000"."""
    def number(x: float) -> str:
        return f"{int(x):,}" if math.isfinite(x) and x == int(x) else f"{x:g}"

    return f"from {number(low)} to {number(high)}" if math.isfinite(high) else f"from {number(low)} up"


def section_class(name: str) -> type | None:
    """The dataclass of the TOML section ``[name]`` (None: not a section of fields)."""
    kind = _hints(Settings).get(name)
    return kind if dataclasses.is_dataclass(kind) and kind is not Thresholds else None  # type: ignore[return-value]


def range_of(cls: type, name: str) -> tuple[float, float] | None:
    for f in dataclasses.fields(cls):
        if f.name == name:
            return f.metadata.get("range")
    return None


def check_numbers(section: object) -> None:
    """Each number field of ``section`` within its ``ranged`` range."""
    check_ranges(section, {f.name: f.metadata["range"] for f in dataclasses.fields(section)  # type: ignore[arg-type]
                           if "range" in f.metadata})


def check_ranges(section: object, ranges: Mapping[str, tuple[float, float]]) -> None:
    """Each named number of ``section`` within its (low, high), both included: one line naming
    the key and the range otherwise (NaN is in no range). A budget of -5 ms or nan would leave
    the hook never answering; 10^8 ms, waiting for a day."""
    for key, (low, high) in ranges.items():
        value = getattr(section, key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
            raise ValueError(f"{key} must be a number {span(low, high)}, not {value!r}")


@dataclass(frozen=True)
class ChunkConfig:
    """``[chunking]``: how a note is cut into embedded pieces (``recall.notes.chunking``)."""

    chars: int = field(metadata=ranged(1, 1_000_000))
    overlap: int = field(metadata=ranged(0, 1_000_000))
    max_chunks: int = field(metadata=ranged(1, 100_000))

    def __post_init__(self) -> None:
        check_numbers(self)
        if not 0 <= self.overlap < self.chars:
            raise ValueError("chunk overlap must be >= 0 and smaller than the chunk size")


@dataclass(frozen=True)
class SourcesSettings:
    rules: tuple[str, ...]
    conversations: bool
    keep_gone_titles: bool
    prompt_titles: bool
    libraries: tuple[str, ...]


@dataclass(frozen=True)
class DocumentsSettings:
    """``[documents]``: what recall.notes.documents reads besides notes, and how."""

    enabled: bool
    max_chunks: int = field(metadata=ranged(1, 1_000_000))
    max_file_mb: float = field(metadata=ranged(0, 1_000_000))
    images: bool
    recordings: bool
    frame_every_s: float = field(metadata=ranged(0.1, 86_400))
    library_per_message: bool
    convert_max_mb: float = field(metadata=ranged(64, 1_000_000))
    convert_timeout_s: float = field(metadata=ranged(0.001, 86_400))

    def __post_init__(self) -> None:
        check_numbers(self)


@dataclass(frozen=True)
class GeminiSettings:
    """``[gemini]``: the optional cloud embedder (``recall.embedding.gemini``), used only when
    ``model = "gemini"``."""

    endpoint: str
    api_key_env: str
    dimensions: int = field(metadata=ranged(128, 3072))  # the API's output_dimensionality
    media: bool
    send_messages: bool
    timeout_s: float = field(metadata=ranged(1, 3600))

    def __post_init__(self) -> None:
        check_numbers(self)


@dataclass(frozen=True)
class SearchSettings:
    # BM25's share of the fused order for a note without questions (recall.ranking.fusion)
    lexical_weight: float = field(metadata=ranged(0, 1))
    lexical_weight_with_questions: float = field(metadata=ranged(0, 1))  # the same for a note with questions of its own
    fusion_depth: int = field(metadata=ranged(1, 10_000))
    # the header vector's share of a note's dense score in the order (recall.ranking.search)
    header_weight: float = field(metadata=ranged(0, 1))
    # a note with questions is ordered by the mean of its this many best rows (recall.ranking.seconds)
    best_rows: int = field(metadata=ranged(1, 1000))
    # the share of a note's questions' mean (its prototype) in its order (recall.ranking.seconds)
    prototype_weight: float = field(metadata=ranged(0, 1))
    # the per-sentence list's weight in the rank fusion of the order (recall.ranking.sentences)
    sentence_weight: float = field(metadata=ranged(0, 100))
    sentence_rank_k: int = field(metadata=ranged(1, 10_000))  # fusion's k: a note at rank r scores weight / (k + r)
    sentence_min_chars: int = field(metadata=ranged(1, 100_000))  # shorter pieces of a message are not searched alone
    sentences_max: int = field(metadata=ranged(0, 1000))  # at most this many pieces of one message are searched alone

    def __post_init__(self) -> None:
        check_numbers(self)

    def with_lexical_weight(self, weight: float) -> SearchSettings:
        """Both of BM25's shares set to ``weight`` (0: dense only), for a run that compares weights."""
        return dataclasses.replace(self, lexical_weight=weight, lexical_weight_with_questions=weight)


@dataclass(frozen=True)
class IndexSettings:
    approximate_from_chunks: int = field(metadata=ranged(1, 1e12))
    publish_every_s: float = field(metadata=ranged(0, 86_400))
    debug_delay_ms: float = field(metadata=ranged(0, 600_000))

    def __post_init__(self) -> None:
        check_numbers(self)


# A silence target under one half would have recall speak on most messages no note answers:
# one range for the config file and `recall calibrate --target-silence` (they disagreed; stop 48).
TARGET_SILENCE_RANGE = (0.5, 1.0)


@dataclass(frozen=True)
class SelectorSettings:
    kind: str
    min_prompt_chars: int = field(metadata=ranged(0, 100_000))
    max_notes: int = field(metadata=ranged(1, 50))
    short_max_bytes: int = field(metadata=ranged(64, 1_000_000))
    full_max_bytes: int = field(metadata=ranged(64, 1_000_000))
    project_first_margin: float = field(metadata=ranged(-1, 1))
    headline_margin: float = field(metadata=ranged(0, math.inf))  # inf: every headline a near tie (the original rule)
    calibrate: bool
    target_silence: float = field(metadata=ranged(*TARGET_SILENCE_RANGE))
    near_miss_margin: float = field(metadata=ranged(0, 0.5))
    set_aside_questions: bool
    fit_on_hidden_notes: bool

    def __post_init__(self) -> None:
        if self.kind not in ("gap", "learned"):
            raise ValueError(f"kind must be \"gap\" or \"learned\", not {self.kind!r}")
        check_numbers(self)


@dataclass(frozen=True)
class Thresholds:
    """One ``[thresholds."<model id>"]`` table, completed from ``[thresholds.default]``."""

    gap_floor: float
    top_floor: float
    full_gap: float
    full_margin: float
    neg_weight: float
    provenance: Mapping[str, Any] | None  # how they were tuned; None where the table says nothing
    source: str = field(metadata=NOT_TOML)  # the table's name: a model id, or "default"
    origins: Mapping[str, str] = field(metadata=NOT_TOML)  # key -> file that set it

    @property
    def origin(self) -> str:
        """The file that set ``top_floor`` (packaged, calibration.toml, config.toml)."""
        return self.origins.get("top_floor", PACKAGED)

    def as_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in THRESHOLD_KEYS}


THRESHOLD_KEYS = ("gap_floor", "top_floor", "full_gap", "full_margin", "neg_weight")
# What a threshold may be, in config.toml and calibration.toml alike.
THRESHOLD_RANGES = {k: (0.0, 100.0) if k == "neg_weight" else (-100.0, 100.0) for k in THRESHOLD_KEYS}


@dataclass(frozen=True)
class QuestionsSettings:
    """``[questions]``: whether and how an agent CLI writes the notes' questions (recall.authoring.agentcli)."""

    generate: str
    model: str
    batch_notes: int = field(metadata=ranged(1, 1000))
    timeout_s: float = field(metadata=ranged(1, 86_400))

    def __post_init__(self) -> None:
        choices = ("ask", "off", "auto", "claude", "codex", "gemini")
        if self.generate not in choices:
            raise ValueError(f"generate must be one of {', '.join(choices)}, not {self.generate!r}")
        check_numbers(self)


IDLE_EXIT_HOURS_MIN = 1 / 3600  # a second


@dataclass(frozen=True)
class DaemonSettings:
    transport: str
    idle_exit_hours: float = field(metadata=ranged(0, 8760))
    hook_budget_ms: float = field(metadata=ranged(1, 60_000))
    request_timeout_ms: float = field(metadata=ranged(1, 600_000))
    max_connections: int = field(metadata=ranged(1, 100_000))
    max_queued: int = field(metadata=ranged(1, 100_000))
    batch_max: int = field(metadata=ranged(1, 4096))
    debug_delay_ms: float = field(metadata=ranged(0, 600_000))
    stuck_after_s: float = field(metadata=ranged(0, 86_400))

    def __post_init__(self) -> None:
        if self.transport not in ("unix", "tcp"):
            raise ValueError(f"transport must be \"unix\" or \"tcp\", not {self.transport!r}")
        check_numbers(self)
        if 0 < self.idle_exit_hours < IDLE_EXIT_HOURS_MIN:
            # a daemon that idles out before it is asked the message that started it answers nothing (AK01)
            raise ValueError(f"idle_exit_hours must be 0 (never) or at least 1/3600 (a second), "
                             f"not {self.idle_exit_hours!r}")


@dataclass(frozen=True)
class HookSettings:
    skip_entrypoints: tuple[str, ...]
    skip_prompt_tags: tuple[str, ...]
    repeat_after: int = field(metadata=ranged(0, 10_000))  # messages of a session a note handed over is held back

    def __post_init__(self) -> None:
        check_numbers(self)


@dataclass(frozen=True)
class WatchSettings:
    enabled: bool
    debounce_ms: float = field(metadata=ranged(0, 600_000))

    def __post_init__(self) -> None:
        check_numbers(self)


@dataclass(frozen=True)
class TeamSettings:
    url: str
    schema: str
    owner: str
    wait_s: float = field(metadata=ranged(1, 86_400))

    def __post_init__(self) -> None:
        check_numbers(self)


@dataclass(frozen=True)
class LogSettings:
    max_bytes: int = field(metadata=ranged(100, 1e12))
    backups: int = field(metadata=ranged(0, 1000))

    def __post_init__(self) -> None:
        check_numbers(self)


@dataclass(frozen=True)
class Rule:
    """What ``recall.ranking.selector.decide`` applies for one model: its thresholds, the
    ``[selector]`` section, and the learned selector's table (``recall.ranking.learned``)
    when ``selector.kind = "learned"``.
    Built once per settings (``Settings.rule``), not per question."""

    thresholds: Thresholds
    selector: SelectorSettings
    learned: Mapping[str, Any] | None  # [learned."<model id>"]: recall.ranking.learned.LearnedSelector's numbers

    def replace(self, *, source: str | None = None, learned: Any = ..., **values: Any) -> Rule:
        """A copy with some threshold or ``[selector]`` values changed (eval's grids):
        ``rule.replace(gap_floor=0.1, learned=None, source="tuned")``."""
        t_keys: dict[str, Any] = {k: v for k, v in values.items() if k in THRESHOLD_KEYS}
        s_keys = {k: v for k, v in values.items() if k not in THRESHOLD_KEYS}
        if source:
            t_keys["source"] = source
        t = dataclasses.replace(self.thresholds, **t_keys)
        return Rule(t, dataclasses.replace(self.selector, **s_keys),
                    self.learned if learned is ... else learned)

    def as_dict(self) -> dict[str, Any]:
        """The flat view ``recall query --json`` and the daemon's explain reply show."""
        sel = self.selector
        return {**self.thresholds.as_dict(), "min_prompt_chars": sel.min_prompt_chars, "max_notes": sel.max_notes,
                "short_max_bytes": sel.short_max_bytes, "full_max_bytes": sel.full_max_bytes,
                "project_first_margin": sel.project_first_margin, "headline_margin": sel.headline_margin,
                "thresholds_source": self.thresholds.source,
                "thresholds_origin": self.thresholds.origin}


# The keys of a [learned."<model id>"] table: recall.ranking.learned.LearnedSelector.to_dict(), and
# its provenance. (Model tables are named by model id, so they are mappings, not fields.)
LEARNED_KEYS = frozenset({"features", "classes", "mean", "scale", "coef", "intercept", "threshold", "provenance"})


@dataclass(frozen=True)
class Settings:
    model: str
    chunking: ChunkConfig
    sources: SourcesSettings
    documents: DocumentsSettings
    gemini: GeminiSettings
    search: SearchSettings
    index: IndexSettings
    selector: SelectorSettings
    thresholds: Mapping[str, Thresholds]  # by model id; "default" for any model without its own
    learned: Mapping[str, Mapping[str, Any]]  # by model id: a LearnedSelector's plain numbers
    questions: QuestionsSettings
    daemon: DaemonSettings
    hook: HookSettings
    watch: WatchSettings
    team: TeamSettings
    log: LogSettings
    origins: Mapping[tuple[str, ...], str] = field(metadata=NOT_TOML)  # key path -> file (or env) it came from

    # --- reading ------------------------------------------------------------
    def thresholds_for(self, model_id: str) -> Thresholds:
        return self.thresholds.get(model_id) or self.thresholds["default"]

    def rule(self, model_id: str, kind: str | None = None) -> Rule:
        """The selector's input for ``model_id``; ``kind`` overrides ``selector.kind``
        (``"gap"``: the gap rule even where the learned selector is configured)."""
        kind = kind or self.selector.kind
        learned = None
        if kind == "learned":
            table = self.learned.get(model_id)
            if table is None:
                raise ConfigError(f"selector.kind = 'learned' but no [learned.\"{model_id}\"] table; "
                                  "run recall-eval tune --learned")
            learned = dict(table)
        return Rule(self.thresholds_for(model_id), dataclasses.replace(self.selector, kind=kind), learned)

    def value(self, path: tuple[str, ...]) -> Any:
        """The effective value at a key path, e.g. ("selector", "max_notes")."""
        node: Any = self
        for part in path:
            node = node[part] if isinstance(node, Mapping) else getattr(node, part)
        return node

    def entries(self) -> list[tuple[str, Any, str]]:
        """(dotted key, value, origin) for every key set by a file or the environment."""
        return sorted((".".join(p), self.value(p), o) for p, o in self.origins.items())

    def unused_model_tables(self, model_id: str) -> list[str]:
        """One line per ``[thresholds."<id>"]`` or ``[learned."<id>"]`` table a user's file set for a
        model that is not ``model_id`` (the one in use): kept for a switch back, or a misspelled id
        that nothing will ever read; said either way, with the likeliest id meant."""
        import difflib

        out = []
        for section in ("thresholds", "learned"):
            for name in sorted({p[1] for p, o in self.origins.items() if p[0] == section and len(p) > 1
                                and o != PACKAGED and not o.endswith("calibration.toml")} - {model_id, "default"}):
                near = difflib.get_close_matches(name, [model_id], n=1, cutoff=0.85)
                out.append(f"note: [{section}.\"{name}\"] is not used: the model in use is {model_id}"
                           + (f" (did you mean [{section}.\"{model_id}\"]?)" if near else
                              "; a model's table applies when that model is `model`"))
        return out

    # --- changed copies -----------------------------------------------------
    def with_model(self, model: str, origin: str) -> Settings:
        return dataclasses.replace(self, model=model, origins={**self.origins, ("model",): origin})

    def with_calibration(self, model_id: str, values: Mapping[str, Any], origin: str) -> Settings:
        """Freshly calibrated thresholds, taken as a unit, unless the user's own file sets any
        threshold of this model (then theirs stand, and none of these: a floor tuned for one
        rule means nothing under another)."""
        mine = (PACKAGED, origin)
        if any(o not in mine and not o.endswith("calibration.toml")
               for p, o in self.origins.items() if p[:2] == ("thresholds", model_id)):
            return self
        base = self.thresholds_for(model_id)
        origins = {p: o for p, o in self.origins.items()
                   if not (p[:2] == ("thresholds", model_id) and p[2:3] and p[2] in values)}
        for key, value in values.items():
            record_origin(value, ("thresholds", model_id, key), origin, origins)
        table = dataclasses.replace(
            base, **{k: float(v) for k, v in values.items() if k in THRESHOLD_KEYS},
            provenance=values.get("provenance", base.provenance if base.source == model_id else None),
            source=model_id, origins={**base.origins, **{k: origin for k in values if k in THRESHOLD_KEYS}})
        return dataclasses.replace(self, thresholds={**self.thresholds, model_id: table}, origins=origins)


def record_origin(value: Any, path: tuple[str, ...], origin: str, origins: dict[tuple[str, ...], str]) -> None:
    """Note ``origin`` for every leaf under ``path``, an empty table being one (a user's ``[a.b]``
    alone was said to be in the packaged file: an outside tester's, stop 55)."""
    if isinstance(value, dict) and value:
        for k, v in value.items():
            record_origin(v, (*path, k), origin, origins)
    else:
        origins[path] = origin


# --- parsing ------------------------------------------------------------------

def parse(data: Mapping[str, Any], origins: Mapping[tuple[str, ...], str]) -> Settings:
    """The merged layers (``recall.config.load``) as typed settings. An unknown key, a missing
    one or a value of the wrong type is a ``ConfigError`` naming the key and its file."""
    sections = {f.name: f for f in dataclasses.fields(Settings) if f.metadata.get("toml", True)}
    _unknown(data, sections, (), origins)
    hints = _hints(Settings)
    values: dict[str, Any] = {}
    for name in sections:
        where = (name,)
        if name == "model":
            values[name] = _coerce(data.get(name), str, where, origins)
        elif name == "thresholds":
            values[name] = _thresholds(_table(data, name, origins), origins)
        elif name == "learned":
            values[name] = _learned(_table(data, name, origins), origins)
        else:
            values[name] = _section(hints[name], _table(data, name, origins), where, origins)
    values["sources"] = _folders(values["sources"], origins)
    return Settings(**values, origins=dict(origins))


def _folders(sources: SourcesSettings, origins: Mapping[tuple[str, ...], str]) -> SourcesSettings:
    """``[sources] rules`` and ``libraries`` as folders every command reads the same: a relative
    one is the folder beside the file that names it, and an empty one is refused. Each command
    took a relative path from where it ran (indexed from one project, dropped and embedded again
    from the next), and ``rules = [""]`` made that folder a shared rule folder, a private note
    in it handed over in every project (an outside tester's AI10)."""
    import os

    out: dict[str, Any] = {}
    for key in ("rules", "libraries"):
        folders, origin = [], origins.get(("sources", key), PACKAGED)
        for folder in getattr(sources, key):
            if not folder.strip():
                raise _fail(("sources", key), "an empty folder name (it would be whatever folder a command "
                            "runs in)", origins)
            relative = not os.path.isabs(folder) and not folder.startswith("~")
            beside = os.path.dirname(origin) if relative and os.path.isabs(origin) else None
            folders.append(os.path.join(beside, folder) if beside else folder)
        out[key] = tuple(folders)
    return dataclasses.replace(sources, **out)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _where(path: tuple[str, ...], origins: Mapping[tuple[str, ...], str]) -> str:
    """The file that set ``path`` (or a key under it), the user's before the packaged one; for a
    key no file set (one missing from a table), the file that set its table: a user's
    ``[learned.usem3]`` without ``features`` was said to be in the packaged file (AI06)."""
    for depth in range(len(path), 0, -1):
        found = {o for p, o in origins.items() if p[:depth] == path[:depth]} - {PACKAGED}
        if found:
            return min(found)
        if any(p[:depth] == path[:depth] for p in origins):  # the packaged file's own key
            break
    return "recall/config/default_config.toml"


def _fail(path: tuple[str, ...], what: str, origins: Mapping[tuple[str, ...], str]) -> ConfigError:
    return ConfigError(f"{'.'.join(path)} in {_where(path, origins)}: {what}; fix or remove it there "
                       "(`recall config --defaults` lists every key with its default and a comment)")


def _table(data: Mapping[str, Any], name: str, origins) -> Mapping[str, Any]:
    value = data.get(name)
    if not isinstance(value, Mapping):
        raise _fail((name,), "expected a table [" + name + "]", origins)
    return value


def _unknown(table: Mapping[str, Any], known, path: tuple[str, ...], origins) -> None:
    for key in table:
        if key not in known:
            raise _fail((*path, key), "unknown setting", origins)


def _section(cls: type, table: Mapping[str, Any], path: tuple[str, ...], origins) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    _unknown(table, fields, path, origins)
    hints = _hints(cls)
    values = {name: _coerce(table.get(name), hints[name], (*path, name), origins) for name in fields}
    try:
        return cls(**values)
    except ValueError as exc:  # a section's own check (ChunkConfig: overlap < chars)
        raise _fail(path, str(exc), origins) from None


def _coerce(value: Any, kind: Any, path: tuple[str, ...], origins) -> Any:
    """``value`` checked as ``kind`` (str, bool, int, float, tuple[str, ...]); an int is a
    float too (kept as written, so ``recall config`` shows it as written)."""
    if value is None:
        raise _fail(path, "missing (the packaged file must set every key)", origins)
    if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind in (str, bool) and isinstance(value, kind):
        return value
    if kind == tuple[str, ...] and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    name = {tuple[str, ...]: "a list of strings", float: "a number", int: "a whole number"}.get(
        kind, getattr(kind, "__name__", str(kind)))
    raise _fail(path, f"expected {name}, got {value!r}", origins)


def _thresholds(tables: Mapping[str, Any], origins) -> dict[str, Thresholds]:
    """Every table, each key it does not set taken from ``[thresholds.default]``."""
    default = tables.get("default")
    if not isinstance(default, Mapping):
        raise _fail(("thresholds", "default"), "expected a table", origins)
    known = {*THRESHOLD_KEYS, "provenance"}
    out = {}
    for name, table in tables.items():
        path = ("thresholds", name)
        if not isinstance(table, Mapping):
            raise _fail(path, "expected a table of thresholds", origins)
        _unknown(table, known, path, origins)
        merged = {**default, **table}
        values = {k: _coerce(merged.get(k), float, (*path, k), origins) for k in THRESHOLD_KEYS}
        prov = table.get("provenance")
        if prov is not None and not isinstance(prov, Mapping):
            raise _fail((*path, "provenance"), "expected a table", origins)
        mine = {k: origins.get((*path, k), origins.get(("thresholds", "default", k), PACKAGED))
                for k in THRESHOLD_KEYS}
        out[name] = Thresholds(**values, provenance=prov, source=name, origins=mine)
        try:  # as a file sets them: nan or inf would switch a gate off (nothing is below nan)
            check_ranges(out[name], THRESHOLD_RANGES)
        except ValueError as exc:
            raise _fail(path, str(exc), origins) from None
    return out


def _learned(tables: Mapping[str, Any], origins) -> dict[str, Mapping[str, Any]]:
    for name, table in tables.items():
        if not isinstance(table, Mapping):
            raise _fail(("learned", name), "expected a table", origins)
        _unknown(table, LEARNED_KEYS, ("learned", name), origins)
        _learned_shape(table, ("learned", name), origins)
    return dict(tables)


def _learned_shape(table: Mapping[str, Any], at: tuple[str, ...], origins) -> None:
    """A learned selector's numbers as ``recall.ranking.learned.LearnedSelector`` uses them:
    one finite number per feature in ``mean`` and ``scale``, a row of them per class in
    ``coef``, one per class in ``intercept``, a finite ``threshold``. An outside tester's
    ``threshold = "x"`` made every message a traceback in the daemon, and ``nan`` made the
    gate inject on "ok go on"."""
    def numbers(key: str, n: int) -> None:
        value = table.get(key)
        if not (isinstance(value, list) and len(value) == n and all(_finite(v) for v in value)):
            raise _fail((*at, key), f"expected a list of {n} finite numbers", origins)

    features, classes = table.get("features"), table.get("classes", ["nothing", "short", "full"])
    if not (isinstance(features, list) and features and all(isinstance(f, str) for f in features)):
        raise _fail((*at, "features"), "expected the list of the features' names", origins)
    if not (isinstance(classes, list) and len(classes) == 3):
        raise _fail((*at, "classes"), "expected the three classes", origins)
    for key in ("mean", "scale"):
        numbers(key, len(features))
    numbers("intercept", len(classes))
    coef = table.get("coef")
    if not (isinstance(coef, list) and len(coef) == len(classes)):
        raise _fail((*at, "coef"), f"expected {len(classes)} rows of {len(features)} finite numbers", origins)
    for row in coef:
        if not (isinstance(row, list) and len(row) == len(features) and all(_finite(v) for v in row)):
            raise _fail((*at, "coef"), f"expected {len(classes)} rows of {len(features)} finite numbers", origins)
    if not _finite(table.get("threshold")):  # on P(inject): above 1 never speaks, below 0 always
        raise _fail((*at, "threshold"), "expected a finite number", origins)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
