"""``recall-eval generate``: write (or import) a question set with a context-free model."""

from __future__ import annotations

from pathlib import Path

import click

from recall.commandline import Finite
from recall_eval.commands.common import (
    UserError,
    collection_option,
    echo_json,
    fail_cleanly,
    log,
    not_empty,
    notes_folder,
    refuse_to_replace,
)


@click.command("generate")
@click.option("--backend", type=click.Choice(["anthropic", "claude-cli", "file"]), required=True,
              help="anthropic: Messages API; claude-cli: `claude -p`; file: import a set written elsewhere.")
@click.option("--notes", type=click.Path(path_type=Path), help="Folder of note files.")
@collection_option("datasets/NAME/notes (and the set goes to datasets/NAME/questions/).")
@click.option("--set-id", callback=not_empty, help="Set id (ids become <set-id>-01...). Default: --out's stem.")
@click.option("--out", type=click.Path(path_type=Path),
              help="Set to write (default: datasets/NAME/questions/<set-id>.jsonl).")
@click.option("--from", "from_file", type=click.Path(path_type=Path),
              help="file backend: the JSONL to import.")
@click.option("--written-by", callback=not_empty, help="file backend: who or what wrote it (free text, to provenance).")
@click.option("--api-model", callback=not_empty, help="Model for the anthropic / claude-cli backends.")
@click.option("--max-tokens", default=16000, show_default=True, type=click.IntRange(1, 1_000_000),
              help="anthropic backend: answer cap.")
@click.option("--paraphrases", default=20, show_default=True, type=click.IntRange(0, 100_000),
              help="Paraphrase messages to ask for.")
@click.option("--unrelated", default=20, show_default=True, type=click.IntRange(0, 100_000),
              help="Unrelated messages to ask for.")
@click.option("--share-ja", default=0.3, show_default=True, type=Finite(0, 1),
              help="Share of all messages in Japanese.")
@click.option("--share-cross", default=0.25, show_default=True, type=Finite(0, 1),
              help="Share of paraphrases in the other language than their note.")
@click.option("--leakage-threshold", type=Finite(0, 1), help="Flag paraphrases sharing more than this share of "
                                                      "content words with their note (default 0.6).")
@click.option("--no-retry", is_flag=True, help="Do not ask the model to reword leaky lines.")
@click.option("--check-model", callback=not_empty,
              help="Model for the near-note check of unrelated lines (default: config's).")
@click.option("--no-index-check", is_flag=True, help="Skip the near-note check (no model needed).")
@click.option("--force", is_flag=True, help="Replace a set already at --out.")
@fail_cleanly
def command(backend: str, notes: Path | None, collection: str | None, set_id: str | None, out: Path | None,
            from_file: Path | None, written_by: str | None, api_model: str | None, max_tokens: int,
            paraphrases: int, unrelated: int, share_ja: float, share_cross: float,
            leakage_threshold: float | None, no_retry: bool, check_model: str | None,
            no_index_check: bool, force: bool) -> None:
    """Write SET.jsonl, SET.provenance.json and SET.checks.json (leakage and near-note flags)."""
    from recall_eval.generation.checks import LEAKAGE_THRESHOLD
    from recall_eval.generation.generate import generate, import_file, index_top_scores, make_backend, write_outcome
    from recall_eval.generation.prompting import GenerationSpec

    notes_dir, out = _where(notes, collection, set_id, out, force)
    spec = GenerationSpec(set_id or out.stem, paraphrases, unrelated, share_ja, share_cross)
    kwargs = {
        "threshold": LEAKAGE_THRESHOLD if leakage_threshold is None else leakage_threshold,
        "top_scores": None if no_index_check else index_top_scores(notes_dir, check_model), "log": log}
    if backend == "file":
        if from_file is None or not written_by:
            raise UserError("the file backend needs --from FILE and --written-by TEXT")
        outcome = import_file(notes_dir, spec, from_file, written_by, **kwargs)
    else:
        log(f"asking {backend} for {paraphrases} paraphrases + {unrelated} unrelated messages")
        outcome = generate(notes_dir, spec, make_backend(backend, api_model, max_tokens),
                           retry=not no_retry, **kwargs)
    if not outcome.questions:
        raise UserError(f"no usable line in the answer; see {outcome.checks['rejected'][:3]}")
    paths = write_outcome(out, outcome)
    for row in outcome.checks["lines"]:
        if row["flags"]:
            log(f"flagged {row['id']} {row['flags']}: {row['text'][:80]}")
    echo_json({"written": [str(p) for p in paths], **outcome.checks["summary"]})


def _where(notes: Path | None, collection: str | None, set_id: str | None, out: Path | None,
           force: bool) -> tuple[Path, Path]:
    """(notes folder, the set's file): given, or the collection's under datasets/; a set already
    there is replaced only with ``force``."""
    from recall_eval.datasets.collections import PROJECT_ROOT
    from recall_eval.files import check_output

    notes_dir = notes_folder(notes or (PROJECT_ROOT / "datasets" / collection / "notes" if collection else None))
    if out is None:
        if not (collection and set_id):
            raise UserError("give --out SET.jsonl (or --collection NAME and --set-id ID)")
        out = PROJECT_ROOT / "datasets" / collection / "questions" / f"{set_id}.jsonl"
    check_output(out, "--out", folder=False)  # before the model is asked or the set checked, not after
    refuse_to_replace(out, force)
    return notes_dir, out
