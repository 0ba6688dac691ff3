"""The report of ``recall-eval compare``: ``reports/<collection>/compare-<run id>/{compare.html,
compare.md, compare.png, results.json}``, and the table it prints."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
from pathlib import Path

from recall_eval.files import masked, new_folder, write_private
from recall_eval.reports import markdown
from recall_eval.reports.html import png_data_uri, render

COLUMNS = ("hit_rate@1", "hit_rate@3", "mrr", "injected_hit_rate", "silence_rate", "balanced_accuracy")
SHORT = {"hit_rate@1": "hit@1", "hit_rate@3": "hit@3", "mrr": "mrr", "injected_hit_rate": "injected",
         "silence_rate": "silence", "balanced_accuracy": "balanced"}
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
    return markdown.md_table(head, body)


def caption(results: dict) -> str:
    sig, t = results["significance"], results["timing"]
    return (f"{results['collection']}: {results['n_notes']} notes, {results['n_questions']} held-out questions "
            f"({results['n_paraphrase']} related), split: {results['split']}. Value [95% CI: bootstrap, Wilson's "
            "where every answer is alike]; † = differs "
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
    head, body = rows(results)
    notes = [caption(results)] + ([RANDOM_NOTE] if results.get("random_cross_encoders") else [])
    params = [(n, json.dumps(p["params"]), p["label"]) for n, p in results["pipelines"].items()]
    return render("compare.html", title="recall compare", results=results, notes=notes, head=head, rows=body,
                  params=params, png=png_data_uri(results.get("_png") or bar_plot(results)))


def write(results: dict, root: Path) -> Path:
    results.setdefault("created", dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    digest = hashlib.sha256(json.dumps({k: v["metrics"] for k, v in results["pipelines"].items()},
                                       sort_keys=True).encode()).hexdigest()[:7]
    results.setdefault("run_id", dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + digest)
    out = new_folder(root / results["collection"] / f"compare-{results['run_id']}")  # never another run's
    results["run_id"] = out.name.removeprefix("compare-")
    results = masked(results)  # the messages and names in it: masked like indexed text
    write_private(out / "results.json", json.dumps(results, ensure_ascii=False, indent=1) + "\n")
    notes = "\n\n".join(markdown.md_text(n) for n in [caption(results)]
                        + ([RANDOM_NOTE] if results.get("random_cross_encoders") else []))
    write_private(out / "compare.md", f"{md_table(results)}\n\n{notes}\n")
    png = bar_plot(results)
    write_private(out / "compare.png", png)
    write_private(out / "compare.html", render_html({**results, "_png": png}))
    return out
