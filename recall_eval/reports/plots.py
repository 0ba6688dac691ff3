"""The report's figures, each returned as PNG bytes (matplotlib, Agg: no display needed).

    distributions  top score and gap of related vs unrelated messages, thresholds drawn:
                   the key figure, it shows whether silence is possible at all
    (the silence vs hit trade-off is drawn by the core's page, ``recall.svg.tradeoff``:
     one drawing for the page and the report)
    pipelines      headline metrics per pipeline with their 95% intervals
    latency        hook latency histogram (only when the benchmark's data is present)
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RELATED, UNRELATED = "#1f77b4", "#d62728"
BAR_METRICS = ("hit_rate@1", "hit_rate@3", "injected_hit_rate", "silence_rate", "headline_precision",
               "balanced_accuracy")
DPI = 110


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def distributions(records: list[dict], thresholds: dict) -> bytes:
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, key, floor in ((axes[0], "top", "top_floor"), (axes[1], "gap", "gap_floor")):
        rel = [r[key] for r in records if r["kind"] == "paraphrase" and r[key] is not None]
        unr = [r[key] for r in records if r["kind"] == "unrelated" and r[key] is not None]
        values = rel + unr
        if values:
            lo, hi = min(values), max(values)
            bins = [lo + (hi - lo) * i / 24 for i in range(25)] if hi > lo else 10
            ax.hist(rel, bins=bins, alpha=0.6, color=RELATED, label=f"related (n={len(rel)})")
            ax.hist(unr, bins=bins, alpha=0.6, color=UNRELATED, label=f"unrelated (n={len(unr)})")
        ax.axvline(thresholds[floor], color="black", linestyle="--", linewidth=1,
                   label=f"{floor} {thresholds[floor]:g}")
        ax.set_xlabel("top score" if key == "top" else "gap = top - mean(ranks 2..11)")
        ax.set_ylabel("messages")
        ax.legend(fontsize=8)
    axes[0].set_title("Top score: related vs unrelated messages")
    axes[1].set_title("Gap: related vs unrelated messages")
    fig.tight_layout()
    return _png(fig)


def pipelines(results: dict) -> bytes:
    names = list(results["pipelines"])
    fig, ax = plt.subplots(figsize=(11, 4.2))
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        m = results["pipelines"][name]["metrics"]
        xs, ys, err_lo, err_hi = [], [], [], []
        for j, metric in enumerate(BAR_METRICS):
            v = m.get(metric)
            if not v or v["value"] is None:
                continue
            xs.append(j + (i - (len(names) - 1) / 2) * width)
            ys.append(v["value"])
            lo, hi = v["ci95"] or (v["value"], v["value"])
            err_lo.append(max(0.0, v["value"] - lo))
            err_hi.append(max(0.0, hi - v["value"]))
        ax.bar(xs, ys, width=width, label=name, yerr=[err_lo, err_hi], capsize=3)
    ax.set_xticks(range(len(BAR_METRICS)))
    ax.set_xticklabels(BAR_METRICS)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share (95% bootstrap interval)")
    ax.set_title("Default pipeline vs baselines")
    ax.legend(fontsize=8, ncol=len(names))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return _png(fig)


def latency(samples: list[float], label: str) -> bytes:
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.hist(samples, bins=40, color=RELATED, alpha=0.8)
    srt = sorted(samples)
    p50, p95 = srt[len(srt) // 2], srt[min(len(srt) - 1, int(len(srt) * 0.95))]
    for v, name in ((p50, "p50"), (p95, "p95")):
        ax.axvline(v, color="black", linestyle="--", linewidth=1)
        ax.annotate(f"{name} {v:.1f} ms", (v, ax.get_ylim()[1] * 0.9), fontsize=8, xytext=(3, 0),
                    textcoords="offset points")
    ax.set_xlabel(f"ms ({label})")
    ax.set_ylabel("calls")
    ax.set_title("Hook latency")
    fig.tight_layout()
    return _png(fig)


def latency_summaries(rows: list[tuple[str, dict[str, float]]]) -> bytes:
    """p50 / p95 / max per benchmark row, when the benchmark kept no per-call timings."""
    fig, ax = plt.subplots(figsize=(9, 0.6 * len(rows) + 1.6))
    keys = ("p50_ms", "p95_ms", "max_ms")
    height = 0.8 / len(keys)
    for j, key in enumerate(keys):
        ys = [i + (j - 1) * height for i in range(len(rows))]
        ax.barh(ys, [r[1].get(key, 0.0) for r in rows], height=height, label=key.removesuffix("_ms"))
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label for label, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ms (hook wall time, spawn to exit)")
    ax.set_title("Hook latency")
    ax.legend(fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _png(fig)
