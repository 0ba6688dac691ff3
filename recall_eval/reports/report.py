"""Write a run's report: ``reports/<collection>/<run id>/{results.json, report.md, report.html}``.

The HTML (``recall_eval.reports.html``, template ``templates/report.html``) is self-contained
(figures inlined as base64 PNG, the trade-off as the page's SVG, CSS inline, no external ``src``/``href``), so it can be
mailed or attached to an issue as one file.
``reports/<collection>/latest`` is a text file holding the newest run id (a text file
rather than a symlink, which Windows checkouts do not always allow).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

from recall import svg
from recall_eval.datasets.collections import DatasetError
from recall_eval.files import InputError, masked, new_folder, read_input, write_private
from recall_eval.reports import plots
from recall_eval.reports.html import png_data_uri, render, svg_data_uri
from recall_eval.reports.markdown import md_table, md_text
from recall_eval.results import check_run
from recall_eval.scoring import metrics as M
from recall_eval.scoring.latency import percentiles as latency_percentiles
from recall_eval.scoring.latency import samples as latency_samples
from recall_eval.scoring.latency import summary as latency_summary
from recall_eval.scoring.metrics import HEADLINE, RANKING

PERCENT = {"hit_rate@1", "hit_rate@3", "mrr", "injected_hit_rate", "silence_rate", "headline_precision",
           "short_rate", "full_rate", "balanced_accuracy"}
DECIMAL = {"headlines_per_message"}


def run_id(results: dict, now: dt.datetime | None = None) -> str:
    """UTC timestamp + short hash of what was measured (model, sets, headline metrics)."""
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%dT%H%M%SZ")
    basis = json.dumps([results.get("model"), results.get("sets"), results.get("metrics")], sort_keys=True,
                       default=str)
    return f"{stamp}-{hashlib.sha256(basis.encode()).hexdigest()[:7]}"


def fmt(metric: str, v: dict | None) -> str:
    if not v or v.get("value") is None:
        return "–"
    lo, hi = v.get("ci95") or (v["value"], v["value"])
    if metric in PERCENT:
        return f"{v['value']:.3f} [{lo:.3f}, {hi:.3f}]"
    if metric in DECIMAL:
        return f"{v['value']:.2f} [{lo:.2f}, {hi:.2f}]"
    return f"{v['value']:.0f} [{lo:.0f}, {hi:.0f}]"


HELDOUT_STYLE_METRICS = ("hit_rate@3", "injected_hit_rate", "silence_rate")


def summary_table(results: dict) -> str:
    """Plain-text table: metric, then value [95% CI] per pipeline; then each held-out set's."""
    names = list(results["pipelines"])
    width = 27
    lines = [f"{'metric':<18}" + "".join(f"{n:>{width}}" for n in names)]
    for metric in HEADLINE:
        lines.append(f"{metric:<18}" + "".join(
            f"{fmt(metric, results['pipelines'][n]['metrics'].get(metric)):>{width}}" for n in names))
    for set_id, h in (results.get("heldout") or {}).items():
        lines += ["", f"held-out set {set_id} ({h['n_paraphrase']} related, {h['n_unrelated']} unrelated): "
                      f"{(h.get('provenance') or {}).get('role', '')}"]
        hn = list(h["pipelines"])
        lines.append(f"{'metric':<18}" + "".join(f"{n:>{width}}" for n in hn))
        for metric in HEADLINE:
            lines.append(f"{metric:<18}" + "".join(
                f"{fmt(metric, h['pipelines'][n]['metrics'].get(metric)):>{width}}" for n in hn))
    landing = calibration_rows(results)
    if landing:
        lines += ["", "calibration (default pipeline): set, target silence, calibrated silence, measured silence, "
                      "calibrated injected, measured injected"]
        lines += ["  " + " | ".join(row) for row in landing]
    return "\n".join(lines)


def _pipeline_rows(pipeline: dict | None) -> list[list[str]]:
    if not pipeline:
        return []
    return [["note questions indexed", f"{pipeline['note_questions']} (from {pipeline['questions_file'] or 'none'})"],
            ["BM25 weight in the order", f"{pipeline['lexical_weight']:g}"]]


def _sections(results: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of every table, shared by the Markdown and the HTML."""
    p = results["pipelines"]
    names = list(p)
    out = [("Headline metrics (value [95% CI: bootstrap, Wilson's where every answer is alike])", ["metric", *names],
            [[m, *(fmt(m, p[n]["metrics"].get(m)) for n in names)] for m in HEADLINE])]
    landing = calibration_rows(results)
    if landing:
        out.append(("Calibration: its own estimate beside what was measured (default pipeline)",
                    ["set", "target silence", "calibrated silence", "measured silence", "calibrated injected",
                     "measured injected"], landing))
    by_lang = results["by_lang"]
    langs = list(by_lang)
    out.append(("Default pipeline by question language", ["metric", *langs],
                [[m, *(fmt(m, by_lang[lg].get(m)) for lg in langs)] for m in (*RANKING, "silence_rate")]))
    cross = results["cross_lang"]
    out.append(("Same- vs cross-language paraphrases (question language vs its note's)",
                ["metric", "same", "cross"], [[m, fmt(m, cross["same"].get(m)), fmt(m, cross["cross"].get(m))]
                                              for m in RANKING]))
    t = results["thresholds"]
    out.append(("Model and thresholds", ["setting", "value"], [
        ["model", f"{results['model']['spec']} ({results['model']['model_id']})"],
        ["thresholds from", results.get("thresholds_source", "")],
        *[[k, f"{v:g}"] for k, v in t.items()],
        *_pipeline_rows(results.get("pipeline")),
        ["notes", str(results["n_notes"])],
        ["questions", f"{results['n_questions']} ({results['n_paraphrase']} paraphrase, "
                      f"{results['n_unrelated']} unrelated)"],
        ["index time", f"{results['timings']['index_s']:.1f} s"],
        ["query time p50 (in-process)", f"{results['timings']['query_ms_p50']} ms"],
    ]))
    sets = [[s["set_id"], (s.get("provenance") or {}).get("backend", "?"),
             str((s.get("provenance") or {}).get("model", "?")), (s.get("provenance") or {}).get("date", "?"),
             (s.get("provenance") or {}).get("prompt_hash", "?")] for s in results.get("sets", [])]
    if sets:
        out.append(("Question sets", ["set", "backend", "model", "date", "prompt hash"], sets))
    for set_id, h in (results.get("heldout") or {}).items():
        hp = h["pipelines"]
        hn = list(hp)
        role = (h.get("provenance") or {}).get("role", "held out")
        out.append((f"Held-out set {set_id} ({h['n_paraphrase']} related, {h['n_unrelated']} unrelated; "
                    f"{role}) — value [95% CI]", ["metric", *hn],
                    [[m, *(fmt(m, hp[n]["metrics"].get(m)) for n in hn)] for m in HEADLINE]))
        styles = h.get("by_style") or {}
        if styles:
            out.append((f"{set_id}: default pipeline by message style", ["style", *HELDOUT_STYLE_METRICS],
                        [[st, *(fmt(m, styles[st].get(m)) for m in HELDOUT_STYLE_METRICS)] for st in styles]))
        cross = h.get("cross_lang") or {}
        if cross:
            out.append((f"{set_id}: same- vs cross-language related messages", ["metric", "same", "cross"],
                        [[m, fmt(m, cross["same"].get(m)), fmt(m, cross["cross"].get(m))] for m in RANKING]))
    lat = latency_summary(results.get("latency"))
    if lat:
        out.append(("Hook latency (bench/bench_hook.py)", ["figure", "value"],
                    [[k, f"{v:g}"] for k, v in lat.items()]))
    return out


def calibration_rows(results: dict) -> list[list[str]]:
    """One row per scored set (the shipped sets, then each held-out set): the silence and
    injected hit rate the self-calibration predicted on the collection's own questions and
    negatives, beside the default pipeline's measured figures. Empty when it did not run."""
    rows = []
    blocks = [("shipped sets", results), *((set_id, h) for set_id, h in (results.get("heldout") or {}).items())]
    for name, block in blocks:
        cal = block.get("calibration")
        metrics = ((block.get("pipelines") or {}).get("default") or {}).get("metrics") or block.get("metrics") or {}
        if not cal:
            continue
        injected = cal.get("injected")
        rows.append([name, f"{cal['target_silence']:g}", f"{cal['silence']:.3f}",
                     fmt("silence_rate", metrics.get("silence_rate")),
                     "–" if injected is None else f"{injected:.3f}", fmt("injected_hit_rate",
                                                                         metrics.get("injected_hit_rate"))])
    return rows


def _questions_rows(results: dict) -> list[list[str]]:
    rows = []
    for r in results["pipelines"]["default"]["records"]:
        rows.append([r["id"], r["kind"], r["lang"], r["text"], ", ".join(r["expected"]),
                     ", ".join(r["ranked"][:3]), "–" if r["top"] is None else f"{r['top']:.3f}",
                     "–" if r["gap"] is None else f"{r['gap']:.3f}", r["decision"], ", ".join(r["injected"])])
    return rows


QUESTION_HEAD = ["id", "kind", "lang", "text", "expected", "top 3", "top", "gap", "decision", "injected"]


def figures(results: dict) -> list[tuple[str, str]]:
    """(title, data URI) of each figure. The trade-off is the page's own plot (``recall.svg.tradeoff``,
    one drawing for both), the others matplotlib's PNGs."""
    figs = [
        ("Score and gap distributions", png_data_uri(plots.distributions(results["pipelines"]["default"]["records"],
                                                                         results["thresholds"]))),
        ("Silence vs hit trade-off", svg_data_uri(svg.tradeoff(results["curve"], precision=True))),
        ("Pipelines compared", png_data_uri(plots.pipelines(results))),
    ]
    found = latency_samples(results.get("latency"))
    rows = latency_percentiles(results.get("latency"))
    if found:
        figs.append(("Hook latency", png_data_uri(plots.latency(found[1], found[0]))))
    elif rows:
        figs.append(("Hook latency", png_data_uri(plots.latency_summaries(rows))))
    return figs


def render_markdown(results: dict) -> str:
    """report.md: every text of the run, in a heading, a cell or the baselines' note, through ``md_text``."""
    parts = [f"# recall evaluation — {md_text(results.get('collection', ''))} — {md_text(results.get('run_id', ''))}",
             "",
             "Figures are in report.html (self-contained).", ""]
    for title, head, rows in _sections(results):
        parts += [f"## {md_text(title)}", "", md_table(head, rows), ""]
    parts += ["## Baselines", "", md_text(baseline_note(results)), ""]
    return "\n".join(parts)


BASELINE_NOTE = ("default: thresholds self-calibrated on this collection's notes, their questions and its "
                 "negatives (never on the question sets scored here). packaged-thresholds: the same ranking "
                 "with the packaged per-model thresholds (the old default). no-questions and dense: the notes' "
                 "text only (dense: no BM25 either), each re-calibrated for itself. original-rule: the original "
                 "gap rule with its printed thresholds (gap_floor 0.025, top_floor 0.5, full_gap 0.11, "
                 "full_margin 0.05). bm25 and grep: top 3 notes when the top score exceeds the baseline's own "
                 "floor, set on the same negatives for the same target silence as recall's calibration.")


def baseline_note(results: dict) -> str:
    if results.get("thresholds_source") == "default":
        return BASELINE_NOTE + (" The config has no tuned thresholds for this model, so the default pipeline "
                                "runs the original rule too: their rows are identical by construction.")
    origin = str(results.get("thresholds_origin", "packaged"))
    if origin != "packaged" and not origin.endswith("calibration.toml"):  # a table of the user's wins (AH08)
        return BASELINE_NOTE.replace(
            "thresholds self-calibrated on this collection's notes, their questions and its negatives (never on "
            "the question sets scored here)", f"the thresholds of {origin}, which win over the self-calibration "
            "as a whole (if `recall-eval tune` wrote them, the sets its provenance names were tuned on: their "
            "figures here are not held out)")
    return BASELINE_NOTE


def render_html(results: dict) -> str:
    return render("report.html", title="recall evaluation", results=results,
                  figures=figures(results),
                  sections=_sections(results), baseline_note=baseline_note(results),
                  question_head=QUESTION_HEAD, question_rows=_questions_rows(results))


def write_report(results: dict, reports_root: Path, collection: str) -> Path:
    """Write the three files and refresh ``latest``; returns the run folder."""
    results.setdefault("created", dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    results.setdefault("run_id", run_id(results))
    results["collection"] = collection
    out = new_folder(reports_root / collection / results["run_id"])  # another run's, of the same second, kept
    results["run_id"] = out.name
    shown = masked(results)  # the messages and names in it: masked like indexed text
    write_private(out / "results.json", json.dumps(shown, ensure_ascii=False, indent=1) + "\n")
    write_private(out / "report.md", render_markdown(shown))
    write_private(out / "report.html", render_html(shown))
    write_private(reports_root / collection / "latest", results["run_id"] + "\n")
    return out


def load_results(path: Path) -> dict:
    """A run's results.json (``path``: the file or its run folder), read as a user's file is
    (``files.read_input``) and checked against its own rows (``metrics.check_figures``): what
    `recall-eval report` renders and `recall-eval versus` compares. One line if it is not one."""
    f = path / "results.json" if path.is_dir() else path
    if not f.is_file():
        raise DatasetError(f"{path}: no results.json (make one with `recall-eval run`)")
    try:
        text = read_input(f)
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        if problem := check_run(text):  # a field of another type was a traceback (outside testers', stops 55, 59)
            raise ValueError(problem)
    except InputError:
        raise  # not a file, not UTF-8: said as such
    except (ValueError, RecursionError) as exc:  # empty, cut, nested past Python's limit, a field's shape
        raise not_a_run(f, exc) from None
    M.check_figures(data, f)
    return data


def blocks(run: dict) -> dict[str, dict]:
    """The question sets of one run: ``main`` (the shipped sets), then each held-out set."""
    return {"main": run, **(run.get("heldout") or {})}


def not_a_run(source: Path, exc: Exception) -> DatasetError:
    return DatasetError(f"{source} is not a `recall-eval run` result ({type(exc).__name__}: "
                        f"{(str(exc).splitlines() or [''])[0][:120]}): run `recall-eval run` again")


def rerender(run_dir: Path) -> Path:
    """Rewrite report.md and report.html from a run's results.json."""
    results = masked(load_results(run_dir))
    try:
        render = render_markdown(results), render_html(results)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # a field of another shape
        raise not_a_run(run_dir / "results.json", exc) from None
    write_private(run_dir / "report.md", render[0])
    write_private(run_dir / "report.html", render[1])
    return run_dir
