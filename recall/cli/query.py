"""`recall query`: what the hook would hand over for a message, and why."""

from __future__ import annotations

from pathlib import Path

import click

from recall.cli.common import fail_cleanly, recall_app, say, say_json, scope_flags, typed_text
from recall.privacy.safetext import one_line


@click.command()
@click.argument("text")
@click.option("--repo", help="Search one other project's notes and titles (its folder name).")
@click.option("--all", "everything", is_flag=True, help="Search every project.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--explain", is_flag=True, help="Show scores, gap, thresholds and why the selector stopped.")
@click.option("-k", "k", default=11, show_default=True, type=click.IntRange(1, 1_000),
              help="Notes to list with --explain/--json.")
@click.option("--for-agent", is_flag=True, help="Print --json for an agent to read: every string one line of plain "
                                                "text, no markup (the plugin skill's fallback).")
@fail_cleanly
def query(text: str, repo: str | None, everything: bool, as_json: bool, explain: bool, k: int,
          for_agent: bool) -> None:
    """Search the notes for TEXT and show what the hook would hand over.

    TEXT `-`: read from stdin (a command line is visible to other users in the process list).
    """
    from recall.embedding.models import backend_of
    from recall.ranking.scope import Scope

    text = typed_text(text)
    app = recall_app()
    if (explain or as_json or for_agent) and backend_of(app.config.model) != "gemini":  # nothing sent unasked
        app.embedder.embed_queries(["warm up"])  # timings as a warm daemon pays them, not this process's load
    res = app.query(text, Scope.from_flags(Path.cwd(), *scope_flags(repo, everything)), typed=True)
    d = res.decision
    if as_json or for_agent:
        _print_json(app, res, k, for_agent)
        return
    if explain:
        _explain(app, res, k)
    if d.text:
        say(d.text)
    elif not explain:
        say(f"(nothing: {d.reason})", err=True)


def _explain(app, res, k: int) -> None:
    """``--explain``: the thresholds, the nearest known unrelated message, how the notes were
    ordered, the first ``k`` notes with their scores, the decision and the timings."""
    d = res.decision
    t = res.rule.thresholds
    say(f"model {app.embedder.model_id}; thresholds from [{t.source}] in "
        f"{t.origin}: top_floor {t.top_floor:.4f}, neg_weight {t.neg_weight:g}, "
        f"gap_floor {t.gap_floor}, full_gap {t.full_gap}, full_margin {t.full_margin}")
    if d.negative is not None:
        say(f"nearest known unrelated message: {d.negative:.4f} (negatives.jsonl + the shipped bank); "
            "evidence = top + neg_weight x (top - nearest unrelated)")
    if "lexical_ms" in res.timings:
        search = app.config.search
        say(f"order: dense fused with BM25 (search.lexical_weight {search.lexical_weight}, "
            f"{search.lexical_weight_with_questions} for a note with questions); each score is the dense "
            "ranking's score at that rank, which the gap rule reads\norder: a note with questions by its "
            f"{search.best_rows} best rows (search.best_rows) and its questions' mean "
            f"(search.prototype_weight {search.prototype_weight:g}); scores as above")
    if "sentences_ms" in res.timings:
        say(f"order: also each sentence searched on its own, fused by rank (search.sentence_weight "
            f"{app.config.search.sentence_weight:g}); the scores stay the whole message's")
    chosen = {id(h.note) for h in d.chosen}
    for rank, h in enumerate(res.hits[:k], 1):
        mark = "*" if id(h.note) in chosen else " "
        say(f"{mark}{rank:3d}  {h.score:.4f}  [{h.note['kind']}] {one_line(h.note['name'])}  "
            f"({one_line(h.note['id'])})")
    top = "-" if d.top is None else f"{d.top:.4f}"
    gap = "-" if d.gap is None else f"{d.gap:.4f}"
    from recall.ranking.selector import GAP_RANKS

    lo, hi = GAP_RANKS
    say(f"top {top}, gap {gap} (the top over the mean of ranks {lo}-{hi}) -> {d.kind}: {d.reason}")
    if res.timings:
        say("timings: " + ", ".join(f"{k2} {v:.1f} ms" for k2, v in res.timings.items()))
    _say_other_daemon()
    if d.text:
        say(f"--- injected ({d.line_bytes} bytes) ---")


def _print_json(app, res, k: int, for_agent: bool) -> None:
    d = res.decision
    found = {
        "model": app.embedder.model_id,
        "thresholds": res.rule.as_dict(),
        **d.as_dict(),
        "ranked": [{"id": h.note["id"], "name": h.note["name"], "kind": h.note["kind"],
                    "score": round(h.score, 4), "path": h.note["path"]} for h in res.hits[:k]],
        "timings_ms": {k2: round(v, 2) for k2, v in res.timings.items()},
    }
    if for_agent:  # names and paths as the MCP tools give them; the block as the hook hands it over
        from recall.privacy.safetext import agent_block, agent_json

        say_json({**agent_json(found), "text": agent_block(d.text)})
    else:
        say_json({**found, "text": d.text}, indent=2)


def _say_other_daemon() -> None:
    """The hook's answers are the running daemon's: said when it reads other settings (Y-03)."""
    from recall.ipc.client import daemon_status

    if other := daemon_status().get("other_settings"):
        say(f"note: the running daemon {other}", err=True)
