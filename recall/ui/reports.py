"""The evaluation reports the Quality page shows (``recall-eval``'s ``reports/<collection>/latest``
-> ``<run>/results.json``, ``report.html``), and the words for the thresholds' provenance.

A results.json here is anybody's: the harness's, a cloned repository's, a teammate's. The page
reads it through ``page_view`` alone, which keeps only the fields the page shows, each of the
type it shows: a run whose file does not give them, whatever the field and whatever the error
(a notes folder "/x\\u0000y", metrics as text, a curve of another shape), is passed over, said
once in the log and on the page by its path, never a 500 for every run found (an outside
tester's, stop 57).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall import svg
from recall.api import Recall
from recall.privacy import paths
from recall.privacy.masking import mask_path

log = logging.getLogger(__name__)

SHOWN_METRICS = ("injected_hit_rate", "silence_rate", "hit_rate@1", "hit_rate@3", "mrr")
_SAID: set[tuple[str, str]] = set()  # runs passed over, logged once each per process


@dataclass
class Reports:
    """The run the page shows (None: none usable), and the runs passed over: (results.json, why)."""

    latest: dict[str, Any] | None = None
    unreadable: list[tuple[Path, str]] = field(default_factory=list)


def report_roots(app: Recall, extra: Path | None = None) -> list[Path]:
    """Where reports may be: --reports alone when given; else ./reports, the clone's
    reports/ and RECALL_HOME/reports."""
    here = Path(__file__).resolve().parents[2] / "reports"
    roots = [extra] if extra is not None else [Path.cwd() / "reports", here, app.home / "reports"]
    return list(dict.fromkeys(p.resolve() for p in roots if p.is_dir()))


def find_reports(app: Recall, extra: Path | None = None) -> Reports:
    """The newest usable run (``reports/<collection>/latest``) of a collection whose notes folder
    is indexed here, else the newest usable run of any collection; and those passed over."""
    indexed = {str(Path(root).resolve()) for _, _, root, _ in app.store.sources()}
    runs, found = [], Reports()
    for root in report_roots(app, extra):
        for latest in root.glob("*/latest"):
            run = _run_named_by(latest, root)
            if run is None:
                continue
            try:
                view = page_view(json.loads(report_text(run / "results.json") or "null"))
                mine = bool(view["notes_dir"]) and str(Path(view["notes_dir"]).resolve()) in indexed
            except Exception as exc:  # noqa: BLE001 - any field, any shape: this run is passed over, not the page
                found.unreadable.append((run / "results.json", _why(exc)))
                _say_once(run / "results.json", _why(exc))
                continue
            runs.append((mine, view["created"], run, view))
    if runs:
        mine, _, run, view = max(runs, key=lambda r: (r[0], r[1]))
        found.latest = {"dir": run, "html": run / "report.html", "results": view, "matches_index": mine}
    return found


def page_view(results: object) -> dict[str, Any]:
    """What the page shows of a run, each field of the type it is shown as; any other shape raises."""
    if not isinstance(results, Mapping):
        raise ValueError("not a JSON object (an empty, cut or undecodable file reads as none)")
    notes_dir = results.get("notes_dir") or ""
    if not isinstance(notes_dir, str):
        raise ValueError("its notes_dir is not text")
    model, thresholds = _mapping(results, "model"), _mapping(results, "thresholds")
    if not isinstance(model.get("model_id"), str):
        raise ValueError("its model has no model_id")
    metrics = {}
    for key, m in _mapping(results, "metrics").items():
        if key in SHOWN_METRICS and isinstance(m, Mapping) and m.get("value") is not None:
            value = float(m["value"])
            lo, hi = m.get("ci95") or (value, value)
            metrics[key] = {"value": value, "ci95": [float(lo), float(hi)], "n": int(m.get("n") or 0)}
    curve = results.get("curve")
    if curve is not None:
        if not isinstance(curve, Mapping):
            raise ValueError("its curve is not an object")
        svg.tradeoff(dict(curve))  # drawn again with the configured value; one it cannot draw raises here
    return {"collection": _text(results.get("collection")), "run_id": _text(results.get("run_id")),
            "created": _text(results.get("created")), "notes_dir": notes_dir, "n_notes": results.get("n_notes"),
            "n_questions": results.get("n_questions"), "model": {"model_id": model["model_id"]},
            "thresholds": dict(thresholds), "metrics": metrics, "curve": dict(curve) if curve is not None else None}


def _mapping(results: Mapping, key: str) -> Mapping:
    value = results.get(key) or {}
    if not isinstance(value, Mapping):
        raise ValueError(f"its {key} is not an object")
    return value


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _why(exc: Exception) -> str:
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:160]}"


def _say_once(path: Path, why: str) -> None:
    if (str(path), why) not in _SAID:
        _SAID.add((str(path), why))
        log.warning("evaluation report %s passed over: %s", mask_path(str(path)), why)


def report_text(path: Path) -> str | None:
    """The UTF-8 text of a report file (``paths.read_regular``: regular, found without blocking,
    at most ``MAX_OWN_FILE``), else None: a named pipe or a device where a report should be
    never holds the page, a cut or undecodable one is not shown."""
    try:
        data, size = paths.read_regular(path, paths.MAX_OWN_FILE)
        return data.decode("utf-8") if size <= len(data) else None
    except (OSError, ValueError):
        return None


def _run_named_by(latest: Path, root: Path) -> Path | None:
    """The run folder ``<collection>/latest`` names, or None: ``latest`` must be a plain file
    (not a folder, not a link) holding one folder name, and the run, its results.json and
    report.html must lie inside ``root`` once links are followed. Nothing outside the
    reports folder is ever read or served."""
    try:
        if not latest.is_file() or latest.is_symlink():
            return None
        name = latest.read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        return None
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        return None
    run = latest.parent / name
    try:
        inside = all(p.resolve().is_relative_to(root) for p in (run, run / "results.json", run / "report.html"))
    except (OSError, RuntimeError, ValueError):
        return None
    return run if inside and run.is_dir() else None


def provenance_words(prov: Mapping[str, Any] | None) -> str | None:
    """How the thresholds in force were made, from what their provenance says, or None when it
    says nothing the page knows: a tune's (``recall-eval tune``) or a calibration's (``recall
    calibrate``), each part only where its value is there (a calibration.toml's read "Tuned  on
    (; ): … hit rate  ," with every field empty)."""
    if not isinstance(prov, Mapping):
        return None
    had = {k: v for k, v in prov.items() if v not in (None, "", [], {})}
    if "tuned" in had or "collections" in had:
        head = " ".join(filter(None, ["Tuned", _part(had, "tuned", "{}"), _part(had, "collections", "on {}")]))
        how = "; ".join(filter(None, [_part(had, "protocol", "{}"), _part(had, "objective", "{}")]))
        rates = [_part(had, "cv_injected_hit_rate", "injected hit rate {}", "cv_injected_hit_rate_ci95"),
                 _part(had, "cv_silence_rate", "silence rate {}", "cv_silence_rate_ci95")]
        rates_said = ", ".join(filter(None, rates))
        return f"{head}{f' ({how})' if how else ''}{f': cross-validated {rates_said}' if rates_said else ''}."
    if "calibrated" in had or "mode" in had:
        head = " ".join(filter(None, ["Calibrated", _part(had, "calibrated", "{}"), "on this home's own notes"]))
        how = ", ".join(filter(None, [_part(had, "positives", "{} questions"), _part(had, "negatives", "{} negatives"),
                                      _part(had, "mode", "{}")]))
        rates_said = ", ".join(filter(None, [_part(had, "calib_injected_hit_rate", "injected hit rate {}"),
                                             _part(had, "calib_silence_rate", "silence rate {}"),
                                             _part(had, "target_silence", "target silence {}")]))
        return f"{head}{f' ({how})' if how else ''}{f': {rates_said}' if rates_said else ''}."
    return None


def _part(had: Mapping[str, Any], key: str, form: str, ci: str | None = None) -> str:
    if key not in had:
        return ""
    value = had[key]
    said = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    interval = f" {had[ci]}" if ci and ci in had else ""
    return form.format(said) + interval
