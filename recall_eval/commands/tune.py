"""``recall-eval tune``: cross-validated thresholds (and optionally a learned selector)
for one model, written back into a recall config with provenance.

    recall-eval tune --collection sample                      # tune a,b,c; test d; user config
    recall-eval tune --collection sample --packaged --learned # ship them in recall/config/default_config.toml
    recall-eval tune --collection sample --dry-run            # print the diff only
    recall-eval tune --collection rules-120 --pool sample     # tune on both collections' tuning sets
    recall-eval tune --collection sample --learned --keep-thresholds  # refit only the learned selector

Objective (explicit, printed, stored in the provenance): by default maximise
injected_hit_rate subject to silence_rate >= 0.85 (``--maximise``, ``--min METRIC=V``);
``--objective weighted --weights injected_hit_rate=1,silence_rate=1`` maximises a
weighted sum instead. Splits: by default the last set (by name) is the test set and
the others are tuned on, leave-one-set-out (``--tune-sets`` / ``--test-sets``).
"before" in the table is the rule in force when the collection is scored: its own
self-calibration, or the table the config sets (``--before original``: the original design's
numbers). Thresholds that do no better than the rule in force on the held-out folds are not
written (``--accept-no-gain`` writes them anyway): a table of the user's wins as a whole, and
turns the self-calibration off. With ``--learned``, selector.kind becomes "learned" only when
recall_eval.tuning.cv.beats says so (significantly better on the held-out folds, not worse on
the test sets); otherwise it is left alone (or set back to "gap").
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import click

from recall_eval.commands.common import (
    UserError,
    echo_json,
    fail_cleanly,
    log,
    not_empty,
    resolve_inputs,
    resolve_note_questions,
    say,
    scoring_options,
)


def parse_pairs(items: tuple[str, ...] | list[str], what: str) -> dict[str, float]:
    out = {}
    for item in (p for chunk in items for p in chunk.split(",") if p.strip()):
        name, sep, value = item.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise UserError(f"{what}: expected METRIC=NUMBER, got {item!r}") from None
        if not sep:
            raise UserError(f"{what}: expected METRIC=NUMBER, got {item!r}")
    return out


def resolve_collection(collection: str | None, notes: Path | None, questions: tuple[Path, ...]):
    """resolve_inputs, plus benchmark collections whose notes live in ../shared/benchmarks/NAME/notes."""
    from recall_eval.datasets.collections import PROJECT_ROOT, collection_paths

    if collection and notes is None and not collection_paths(collection).notes_dir.is_dir():
        shared = PROJECT_ROOT.parent / "shared" / "benchmarks" / collection / "notes"
        if not shared.is_dir():
            raise UserError(f"{collection}: no notes at datasets/{collection}/notes or {shared}")
        notes = shared
    return resolve_inputs(collection, notes, questions)


def _pool_names(_ctx, _param, names: tuple[str, ...]) -> tuple[str, ...]:
    """Each --pool NAME one folder name, said as --pool (it was said to be --collection)."""
    from recall_eval.datasets.collections import DatasetError, collection_name

    try:
        return tuple(collection_name(n, "--pool") for n in names)
    except DatasetError as exc:
        raise UserError(str(exc)) from None


def pooled(name: str) -> tuple[str, Path, list[Path]]:
    """(name, notes folder, question sets) of ``--pool NAME``; one line naming --pool when it has
    no notes or no sets (their lines named --collection, --notes and --questions, none of which
    applies to it)."""
    from recall_eval.datasets.collections import PROJECT_ROOT, collection_paths

    found = collection_paths(name)
    have = sorted(p.parent.name for p in (PROJECT_ROOT / "datasets").glob("*/questions"))
    if not found.notes_dir.is_dir() or not found.question_files:
        what = "no notes" if not found.notes_dir.is_dir() else f"no question sets in datasets/{name}/questions/"
        raise UserError(f"--pool {name}: {what}; give --pool a collection with notes and question sets "
                        f"({', '.join(have)})")
    return name, found.notes_dir, found.question_files


def _questions_of(note_questions: Path | None, use_questions: bool) -> str:
    from recall_eval.scoring.score import shown_path

    if not use_questions:
        return "off"
    return shown_path(note_questions) or "folder questions file, if any"


def split_sets(ids: list[str], tune: str | None, test: str | None) -> tuple[list[str], list[str]]:
    def pick(s: str) -> list[str]:
        return [x.strip() for x in s.split(",") if x.strip()]

    test_ids = pick(test) if test else ([] if tune or len(ids) < 2 else [ids[-1]])
    tune_ids = pick(tune) if tune else [i for i in ids if i not in test_ids]
    unknown = [s for s in tune_ids + test_ids if s not in ids]
    if unknown:
        raise UserError(f"unknown set {unknown[0]!r}; sets here: {', '.join(ids)}")
    if set(tune_ids) & set(test_ids):
        raise UserError("a set cannot be both tuned on and tested on")
    if not tune_ids:
        raise UserError("no sets left to tune on")
    return tune_ids, test_ids


def stamp(report: dict) -> str:
    basis = json.dumps([report["model"], report["tuned"], report["tune_sets"]], sort_keys=True, default=str)
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + hashlib.sha256(basis.encode()).hexdigest()[:7]


def provenance(report: dict, report_path: Path | None, learned: bool = False) -> dict:
    """What the config records next to the numbers: when, on what, for what, and how well
    they did on questions they were not tuned on."""
    if learned:
        cv, test = report["learned"]["cv"]["learned"], report["learned"].get("test", {}).get("learned", {})
    else:
        cv, test = report["cv"], report["tuned"].get("test", {})
    p = {"tuned": dt.date.today().isoformat(), "model": report["model"]["spec"],
         "collections": report["collections"], "tune_sets": report["tune_sets"], "test_sets": report["test_sets"],
         "objective": report["objective"], "protocol": report["protocol"]}
    if report.get("note_questions"):
        p["note_questions"] = report["note_questions"]
    for m in ("injected_hit_rate", "silence_rate"):
        if cv.get(m, {}).get("value") is None:  # no such questions in the sets (no unrelated ones): none to say
            continue
        p[f"cv_{m}"] = round(cv[m]["value"], 4)
        p[f"cv_{m}_ci95"] = [round(x, 4) for x in cv[m]["ci95"] or []]
        if test.get(m, {}).get("value") is not None:
            p[f"test_{m}"] = round(test[m]["value"], 4)
    if learned:
        p["mcnemar_p_vs_gap"] = round(report["learned"]["cv"]["mcnemar"]["p_value"], 4)
    if report_path is not None:
        p["report"] = report_path.name if report_path.parent.name != "baseline" else \
            report_path.relative_to(report_path.parent.parent.parent).as_posix()
    return p


# Which messages each rate an objective may name is measured on (the others: every message).
MEASURED_ON = {"injected_hit_rate": "paraphrase", "hit_rate@3": "paraphrase", "silence_rate": "unrelated"}


def measurable(obj, questions: list) -> None:
    """A ``UserError`` when the tuning sets hold none of the messages a rate of the objective is
    measured on: with no related message, injected_hit_rate is nothing, yet tune wrote the
    thresholds it found (an outside tester's AH14)."""
    kinds = {q.kind for q in questions}
    for metric in dict.fromkeys([obj.target, *obj.minimums, *obj.weights] if obj.kind == "weighted" else
                                [obj.target, *obj.minimums]):
        kind = MEASURED_ON.get(metric)
        if kind is not None and kind not in kinds:
            what = "related" if kind == "paraphrase" else "unrelated"
            raise UserError(f"the tuning sets hold no {what} message, so {metric} cannot be measured: add some "
                            f"(or leave {metric} out of the objective); nothing was tuned")


def held_out_only(questions: list, tune_ids: list[str], seen: list) -> list:
    """``questions`` without the held-out messages that are tuning messages again, said: a test
    set that was a tuning set under other ids was reported as held out, and written into the
    config's provenance as such (an outside tester's AH01). ``seen`` collects the tuning ones."""
    from recall_eval.datasets.overlap import leaks

    seen += [q for q in questions if q.set_id in tune_ids]
    leaked = {id(q) for q in leaks(seen, [q for q in questions if q.set_id not in tune_ids])}
    if leaked:
        named = [q.id for q in questions if id(q) in leaked]
        log(f"warning: {len(named)} held-out message(s) are tuning messages again, word for word: left out of the "
            f"held-out figures ({', '.join(named[:3])}{', ...' if len(named) > 3 else ''})")
    kept = [q for q in questions if id(q) not in leaked]
    for set_id in sorted({q.set_id for q in questions} - {q.set_id for q in kept}):
        raise UserError(f"every message of the held-out set {set_id} is a tuning message again: it measures "
                        "nothing held out; give another --test-sets")
    return kept


def no_gain(report: dict, in_force, obj) -> str | None:
    """Why the tuned thresholds are no better than the rule in force (``in_force``) where it counts,
    on the folds each was not fitted on: the tuned ones' cross-validated figures against the rule
    in force on the same questions (it was fitted on none of them). None when they are better."""
    import numpy as np

    def values(table: dict) -> dict:
        return {m: np.array([v["value"]]) for m, v in table.items()
                if isinstance(v, dict) and v.get("value") is not None}

    tuned, held = values(report["cv"]), values(report["in_force"]["tune"])
    if not tuned or not held or float(obj.score(tuned)[0]) > float(obj.score(held)[0]) + 1e-9:
        return None
    return (f"the tuned thresholds do no better than the rule in force ({in_force.thresholds.source}) on the "
            f"held-out folds ({obj.target} {tuned.get(obj.target, [float('nan')])[0]:.3f} vs "
            f"{held.get(obj.target, [float('nan')])[0]:.3f}"
            + "".join(f", {m} {tuned[m][0]:.3f} vs {held[m][0]:.3f}" for m in obj.minimums if m in tuned and m in held)
            + ")")


def write_reports(report: dict, root: Path, text: str, stem: str | None = None) -> Path:
    """reports/<collection>/tune-<run id>.{json,md}; ``stem`` names a file in ``root`` itself."""
    from recall.privacy.paths import make_missing_dirs
    from recall_eval.files import masked, new_file, write_private
    from recall_eval.reports.markdown import md_fence, md_text

    if stem:
        path = root / f"{stem}.json"
        make_missing_dirs(path.parent)
    else:  # another tune's of the same second kept (it was replaced)
        path = new_file(root / report["collection"] / f"tune-{report['run_id']}.json", ".md")
        report["run_id"] = path.stem.removeprefix("tune-")
    shown = masked(report)  # set ids and names as a run's report shows them: masked, the user's only
    write_private(path, json.dumps(shown, ensure_ascii=False, indent=2) + "\n")
    write_private(path.with_suffix(".md"), masked(  # names in Markdown through md_text, the table in its fence
        f"# recall-eval tune — {md_text(shown['collection'])}, {md_text(shown['model']['model_id'])}\n\n"
        f"Objective: {md_text(shown['objective'])}. Protocol: {md_text(shown['protocol'])} over "
        f"{md_text(', '.join(shown['tune_sets']))}; test: {md_text(', '.join(shown['test_sets']) or 'none')}. "
        f"Values: value [95% CI: bootstrap, Wilson's where every answer is alike].\n\n{md_fence(text)}\n"))
    return path


def writable(reports_root: Path, config_path: Path | None) -> None:
    """One line, before the tuning, for a --reports or --config it could not write."""
    from recall_eval.files import check_output

    check_output(reports_root, "--reports", folder=True)
    if config_path is not None:
        from recall.config.load import is_devnull

        if is_devnull(config_path):
            raise UserError(f"--config {config_path} is /dev/null, which holds no settings and takes none: give "
                            "--config a config file's path (or leave it out for your own config)")
        check_output(config_path.resolve() if config_path.is_symlink() else config_path, "--config", folder=False)


@click.command("tune")
@scoring_options
@click.option("--tune-sets", callback=not_empty,
              help="Comma-separated set ids to tune on (default: all but the test sets).")
@click.option("--test-sets", callback=not_empty,
              help="Comma-separated set ids tuning never sees (default: the last set by name).")
@click.option("--pool", multiple=True, callback=_pool_names,
              help="Another collection to tune on as well (its last set joins the tests).")
@click.option("--objective", type=click.Choice(["constrained", "weighted"]), default="constrained", show_default=True)
@click.option("--maximise", "--maximize", "target", default="injected_hit_rate", show_default=True)
@click.option("--min", "minimums", multiple=True, default=("silence_rate=0.85",), show_default=True,
              help="Constraint METRIC=VALUE for the constrained objective (repeatable).")
@click.option("--weights", default="injected_hit_rate=1,silence_rate=1", show_default=True,
              help="METRIC=W,... for the weighted objective.")
@click.option("--learned", is_flag=True, help="Also fit the learned selector, compare it, write [learned.<model>].")
@click.option("--before", "before_kind", type=click.Choice(["original", "config"]), default="config",
              show_default=True, help="What the tuned thresholds are compared with: the rule in force when the "
              "collection is scored (its self-calibration, or your config's table), or the original design's "
              "numbers (recall_eval.scoring.baselines).")
@click.option("--keep-thresholds", is_flag=True, help="Keep the thresholds in force (no search, not written): "
              "with --learned, fit only the learned selector and compare it with the gap rule as configured.")
@click.option("--packaged", is_flag=True, help="Write recall/config/default_config.toml (the shipped defaults).")
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="Write this config file instead.")
@click.option("--dry-run", is_flag=True, help="Print the config diff; write nothing to the config.")
@click.option("--no-write", is_flag=True, help="Report only; leave every config alone.")
@click.option("--accept-held-out-miss", is_flag=True,
              help="Write the thresholds even when the held-out folds miss the --min constraint.")
@click.option("--accept-no-gain", is_flag=True,
              help="Write the thresholds even when they do no better than the rule in force on the held-out folds.")
@click.option("--reports", "reports_root", type=click.Path(path_type=Path), help="Default: <project>/reports.")
@click.option("--seed", default=None, type=click.IntRange(0, 2**32 - 1), help="Bootstrap / fold seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the tune report as JSON.")
@fail_cleanly
def command(collection, notes, questions, note_questions, no_note_questions, model, home, tune_sets, test_sets, pool,
            objective, target, minimums, weights, before_kind, learned, keep_thresholds, packaged, config_path,
            dry_run, no_write, accept_held_out_miss, accept_no_gain, reports_root, seed, as_json) -> None:
    # Long because: one click command that resolves 16 options, runs the protocol and writes config, report and
    # provenance in order; the steps are helpers above, this is their sequence.
    """Tune the selector's thresholds per model, cross-validated across question sets."""
    from recall_eval.datasets.collections import PROJECT_ROOT, collection_hash, load_sets
    from recall_eval.scoring import metrics as M
    from recall_eval.scoring.baselines import original_settings
    from recall_eval.scoring.score import effective_config
    from recall_eval.tuning import config_file as TC
    from recall_eval.tuning.cv import beats, learned_text, run_protocol, table, tuned_text
    from recall_eval.tuning.tune import Objective, rank_questions

    seed = M.SEED if seed is None else seed
    reports_root = reports_root or PROJECT_ROOT / "reports"
    writable(reports_root, config_path if not (no_write or dry_run) else None)
    if not no_write:
        TC.check(TC.target_path(packaged, config_path), dry_run)  # a config it could not rewrite: said first
    try:
        obj = Objective(objective, target, parse_pairs(minimums, "--min"), parse_pairs((weights,), "--weights"))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    config = effective_config(model)
    name, notes_dir, files = resolve_collection(collection, notes, questions)
    ids = [f.stem for f in files]
    tune_ids, test_ids = split_sets(ids, tune_sets, test_sets)
    exp, use_questions = resolve_note_questions(collection, note_questions, no_note_questions, notes_dir)
    groups = [(name, notes_dir, [f for f in files if f.stem in tune_ids + test_ids], exp)]
    for extra in pool:
        p_name, p_notes, p_files = pooled(extra)
        p_tune, p_test = split_sets([f.stem for f in p_files], None, None)
        tune_ids, test_ids = tune_ids + p_tune, test_ids + p_test
        groups.append((p_name, p_notes, p_files, resolve_note_questions(extra, None, no_note_questions)[0]))

    ranked, model_id, in_force = [], "", []
    seen: list = []  # every tuning message so far, across the pooled collections
    for g_name, g_notes, g_files, g_exp in groups:
        qs = held_out_only(load_sets(g_files, warn=log), tune_ids, seen)
        log(f"{g_name}: ranking {len(qs)} questions from {', '.join(f.stem for f in g_files)}"
            + (f", notes with questions from {g_exp}" if g_exp else ""))
        model_id, got, rule = rank_questions(g_notes, qs, config, home, log=log, note_questions=g_exp,
                                             use_questions=use_questions)
        ranked, in_force = ranked + got, in_force + [rule]
    measurable(obj, [r.question for r in ranked if r.question.set_id in tune_ids])
    base = in_force[0]  # the rule `recall-eval score` applies: what the tuned thresholds replace
    before = original_settings(base) if before_kind == "original" else base
    log(f"tuning {model_id}: {obj.describe()}")
    try:
        report = run_protocol(ranked, base, obj, tune_ids, test_ids, learned=learned, seed=seed,
                              keep_thresholds=keep_thresholds, before=before)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    report.update({"collection": "+".join(g[0] for g in groups), "model": {"spec": config.model, "model_id": model_id},
                   "collections": [f"{g[0]}:{collection_hash(g[1])}" for g in groups], "seed": seed,
                   # which questions the notes carried while ranking (thresholds depend on it)
                   "note_questions": [f"{g[0]}:{_questions_of(g[3], use_questions)}" for g in groups]})
    report["run_id"] = stamp(report)
    text = table(report) + "\n\n" + tuned_text(report) + ("\n\n" + learned_text(report) if learned else "")
    infeasible = [] if keep_thresholds else obj.misses(report["tuned"]["train"])
    held_out = obj.misses(report["cv"])
    if held_out and not infeasible:
        text += f"\n  note: the held-out folds missed the constraint ({'; '.join(held_out)})"
    switch = None
    if learned:
        wins = beats(report)
        current = config.selector.kind
        switch = "learned" if wins else ("gap" if current == "learned" else None)
        report["learned"]["selector_kind"] = "learned" if wins else "gap"
        text += ("\n  -> selector.kind = learned (significantly better on held-out folds)" if wins else
                 "\n  -> selector.kind stays gap (learned not significantly better on held-out folds)")
    path = write_reports(report, reports_root, text)

    header = (f"{report['collection']} — model {model_id}; objective: {report['objective']}; "
              f"{report['protocol']} over {', '.join(tune_ids)}; value [95% CI]"
              + ("; thresholds KEPT as configured (the 'tuned' columns are the thresholds in force)"
                 if keep_thresholds else ""))
    if as_json:
        echo_json(report)
    else:
        say(header + "\n" + text + f"\n\nreport: {path}")
    if no_write:
        return
    if infeasible:
        raise UserError(f"no thresholds meet {obj.describe().split(' subject to ')[-1]} on the tuning sets "
                        f"(best: {'; '.join(infeasible)}); no config written: lower --min, or add unrelated "
                        "messages to the sets")
    if held_out and not keep_thresholds and not accept_held_out_miss:
        raise UserError(f"the held-out folds missed the constraint ({'; '.join(held_out)}): thresholds that would "
                        "override the self-calibration were not written; add questions, lower --min, or give "
                        "--accept-held-out-miss")
    if not keep_thresholds and not accept_no_gain and (why := no_gain(report, base, obj)) is not None:
        raise UserError(f"{why}: not written (a table of yours wins as a whole and turns the self-calibration "
                        "off); give --accept-no-gain to write it anyway")
    target_file = TC.target_path(packaged, config_path)
    if packaged and not dry_run and config_path is None:
        # Shipped defaults keep their evidence in the repository (reports/baseline/ is
        # committed; reports/<collection>/ is not).
        slug = "".join(c if c.isalnum() else "-" for c in model_id)
        path = write_reports(report, PROJECT_ROOT / "reports" / "baseline", text,
                             f"tune-{report['collection']}-{slug}")
        log(f"shipped report: {path}")

    def change(t: str) -> str:
        if not keep_thresholds:  # with the neg_weight searched with: the table wins as a whole (AH09)
            values = {**report["tuned"]["thresholds"], "neg_weight": base.thresholds.neg_weight}
            t = TC.set_thresholds(t, model_id, values, provenance(report, path))
        if learned:
            t = TC.set_learned(t, model_id, report["learned"]["selector"], provenance(report, path, True), switch)
        return t

    d = TC.update(target_file, change, dry_run)
    if dry_run:
        say(d or "(no change)", err=as_json)
    else:
        tables = " and ".join(([] if keep_thresholds else [f'[thresholds."{model_id}"]'])
                              + ([f'[learned."{model_id}"]'] if learned else [])) or "nothing"
        log(f"wrote {tables} to {target_file}")
