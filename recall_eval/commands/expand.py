"""``recall-eval expand``: write (or import) note-side note_questions with a context-free model."""

from __future__ import annotations

from pathlib import Path

import click

from recall.authoring.notegen import N_PER_NOTE, SHARE_JA
from recall.commandline import Finite
from recall_eval.commands.common import (
    UserError,
    collection_option,
    echo_json,
    fail_cleanly,
    log,
    not_empty,
    notes_folder,
    say,
)


@click.command("expand")
@click.option("--notes", type=click.Path(path_type=Path),
              help="Folder of note files (the questions file goes to DIR/questions.jsonl, where recall reads it).")
@collection_option("datasets/NAME/notes (the questions file goes to datasets/NAME/questions.jsonl).")
@click.option("--backend", type=click.Choice(["anthropic", "claude-cli"]),
              help="anthropic: Messages API (ANTHROPIC_API_KEY); claude-cli: `claude -p` in an empty folder.")
@click.option("--import", "import_from", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Instead of a backend: import an answer written elsewhere (e.g. to the --dry-run prompt).")
@click.option("--written-by", callback=not_empty,
              help="With --import: who or what wrote it (free text, goes to provenance).")
@click.option("--out", type=click.Path(path_type=Path),
              help="Questions file to write (default: DIR/questions.jsonl for --notes, "
                   "datasets/NAME/questions.jsonl for --collection).")
@click.option("--api-model", callback=not_empty, help="Model for the anthropic / claude-cli backends.")
@click.option("--max-tokens", default=16000, show_default=True, type=click.IntRange(1, 1_000_000),
              help="anthropic backend: answer cap per request.")
@click.option("--batch-size", default=40, show_default=True, type=click.IntRange(0, 10_000),
              help="Notes per backend request (0: all in one).")
@click.option("--n-per-note", default=N_PER_NOTE, show_default=True, type=click.IntRange(1, 100),
              help="Messages to ask for per note.")
@click.option("--share-ja", default=SHARE_JA, show_default=True, type=Finite(0, 1),
              help="Share of all messages in Japanese.")
@click.option("--force", is_flag=True, help="Replace an existing questions file.")
@click.option("--no-negatives", is_flag=True,
              help="Do not also write negatives.jsonl (near-miss messages no note answers, for calibration).")
@click.option("--no-restatements", is_flag=True,
              help="Do not also add each note's name and description restated in the other language.")
@click.option("--import-negatives", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="With --import: the negatives answer (to the negatives prompt) written elsewhere.")
@click.option("--import-restatements", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="With --import: the restatements answer written elsewhere.")
@click.option("--dry-run", is_flag=True,
              help="Print the prompt for the whole folder and exit; nothing is sent or written "
                   "(hand it to any model, then --import its answer).")
@click.option("--prompt", "which", type=click.Choice(["questions", "negatives", "restatements"]),
              default="questions", show_default=True,
              help="With --dry-run: which prompt (its answer goes to --import, --import-negatives or "
                   "--import-restatements).")
@fail_cleanly
def command(notes: Path | None, collection: str | None, backend: str | None, import_from: Path | None,
            written_by: str | None, out: Path | None, api_model: str | None, max_tokens: int, batch_size: int,
            n_per_note: int, share_ja: float, force: bool, no_negatives: bool, no_restatements: bool,
            import_negatives: Path | None, import_restatements: Path | None, dry_run: bool, which: str) -> None:
    # Long because: one click command, three modes sharing their options (write questions, import an answer,
    # negatives and restatements); each branch is a few calls into recall_eval.generation.
    """Write questions.jsonl (a few messages per note, indexed as extra chunks of it) and
    questions.provenance.json beside it; then negatives.jsonl (messages on the notes'
    topics that no note answers: `recall index` calibrates the thresholds on them) and each
    note's header restated in the other language (added to its note_questions line).

    The model sees only recall/authoring/prompts/expand_notes.md with the note files inlined: the
    notes are sent to the chosen backend. A backend gets --batch-size notes per request,
    then one more request for the notes its answers left out. Lines that are not JSON
    objects (prose, code fences) are skipped; a malformed line or one naming no note of
    the folder fails the run. Notes left out are listed, and fail the run when more than
    10% of the notes are left out. Nothing is written on failure; files are 0600.
    """
    from recall_eval.datasets.collections import PROJECT_ROOT
    from recall_eval.generation.expand import (
        ExpandSpec,
        expand,
        import_answer,
        note_paths,
        write_note_questions,
    )
    from recall_eval.generation.generate import make_backend

    if notes is None and collection is None:
        raise UserError("give --notes DIR (or --collection NAME)")
    notes_dir = notes_folder(notes or PROJECT_ROOT / "datasets" / str(collection) / "notes")
    if n_per_note < 1 or not 0.0 <= share_ja <= 1.0:
        raise UserError("--n-per-note must be at least 1 and --share-ja between 0 and 1")
    spec = ExpandSpec(n_per_note, share_ja)
    paths = note_paths(notes_dir)
    if dry_run:
        say(_prompt(which, paths, spec))
        return
    if (backend is None) == (import_from is None):
        raise UserError("give either --backend NAME or --import FILE (with --written-by)")
    if import_from is not None and not written_by:
        raise UserError("--import needs --written-by TEXT (who or what wrote the file)")
    if out is None:
        base = notes if notes is not None else PROJECT_ROOT / "datasets" / str(collection)
        out = base / "questions.jsonl"
    from recall_eval.files import check_output

    check_output(out, "--out", folder=False)  # before the backend is asked or the answer read, not after
    if out.exists() and not force:
        raise UserError(f"{out} exists; give --force to replace it")
    if import_from is not None:
        result = import_answer(notes_dir, spec, import_from, str(written_by))
    else:
        result = expand(notes_dir, spec, make_backend(str(backend), api_model, max_tokens), batch_size, log=log)
    if result.skipped:
        log(f"skipped {len(result.skipped)} line(s) that are not JSON objects, e.g. {result.skipped[0]!r}")
    if result.missing:
        log(f"{len(result.missing)} note(s) have no questions: {', '.join(result.missing)}")
    from recall_eval.files import read_input
    from recall_eval.generation import negatives as more

    negatives: list[dict] = []
    restated: dict[str, list[str]] = {}
    if import_from is not None:
        if import_negatives is not None and not no_negatives:
            negatives, _ = more.raw_negatives(read_input(import_negatives), str(import_negatives))
        if import_restatements is not None and not no_restatements:
            restated, problems = more.parse_restatements(read_input(import_restatements),
                                                         [p.stem for p in paths], str(import_restatements))
            if problems:
                raise UserError(f"the restatements do not fit the notes: {'; '.join(problems[:3])}")
        how = {"backend": "file", "written_by": written_by}
    else:
        bk = make_backend(str(backend), api_model, max_tokens)
        if not no_negatives:
            log(f"asking {bk.name} for {more.notegen.n_negatives(len(paths))} negatives")
            negatives, _ = more.ask_negatives(paths, bk, share_ja)
        if not no_restatements:
            log(f"asking {bk.name} for restatements")
            restated = more.ask_restatements(paths, bk, batch_size)
        how = {"backend": bk.name, "model": bk.model}
    written = write_note_questions(out, result, [p.stem for p in paths], force=force)
    summary: dict = {"notes": len(paths), "expanded": len(result.questions),
                     "questions": result.provenance["questions"], "missing": result.missing}
    if restated:
        summary["restated"] = more.merge_restatements(out, restated)
    if negatives:
        from recall.embedding.models import get_embedder
        from recall_eval.scoring.score import effective_config

        config = effective_config(None)
        emb = get_embedder(config.model, gemini=config.gemini)
        kept, dropped = more.drop_too_close(negatives, result.questions, emb)
        prov = more.provenance(notes_dir, more.NEGATIVES_PROMPT, **how, negatives=len(kept),
                               dropped_too_close_to_a_question=dropped, too_close=more.too_close_for(emb.model_id))
        written += more.write_negatives(out.with_name("negatives.jsonl"), kept, prov)
        summary.update(negatives=len(kept), negatives_dropped=dropped)
    if import_from is not None:  # a step not taken is said, with the prompt it needs (a first-hour tester, stop 58)
        for kind, given, off in (("negatives", import_negatives, no_negatives),
                                 ("restatements", import_restatements, no_restatements)):
            if given is None and not off:
                log(f"no {kind} written: `--dry-run --prompt {kind}` prints the prompt, whose answer goes to "
                    f"--import-{kind} (or give --no-{kind})")
    log(f"next: `recall index {notes_dir}` indexes them (and calibrates on the negatives)")
    echo_json({"written": [str(p) for p in written], **summary})


def _prompt(which: str, paths: list[Path], spec) -> str:
    """The prompt ``--dry-run`` prints: the questions', the negatives' or the restatements'."""
    from recall_eval.generation import negatives as more
    from recall_eval.generation.expand import render_prompt

    if which == "negatives":
        return more.notegen.negatives_prompt(paths, more.notegen.n_negatives(len(paths)), spec.share_ja)
    if which == "restatements":
        return more.render(more.RESTATE_PROMPT, paths)
    return render_prompt(paths, spec)

