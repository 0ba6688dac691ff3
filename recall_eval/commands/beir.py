"""``recall-eval export-beir`` / ``import-beir``: question sets in the BEIR layout."""

from __future__ import annotations

from pathlib import Path

import click

from recall_eval.commands.common import (
    UserError,
    echo_json,
    fail_cleanly,
    notes_options,
    refuse_to_replace,
    resolve_inputs,
)
from recall_eval.files import check_output


@click.command("export-beir")
@notes_options
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Folder to write.")
@click.option("--force", is_flag=True, help="Write into a folder that already holds files.")
@fail_cleanly
def export_beir_cmd(collection: str | None, notes: Path | None, questions: tuple[Path, ...],
                    out: Path, force: bool) -> None:
    """Write corpus.jsonl, queries.jsonl and qrels/test.tsv (unrelated = no qrels)."""
    from recall_eval.datasets.beir import export_beir
    from recall_eval.datasets.collections import check_expected, load_sets, read_notes

    _name, notes_dir, files = resolve_inputs(collection, notes, questions)
    refuse_to_replace(out, force)
    check_output(out, "--out", folder=True)
    qs = load_sets(files)
    check_expected(qs, [n.id for n in read_notes(notes_dir)], str(notes_dir))
    echo_json({"out": str(out), **export_beir(notes_dir, qs, out)})


@click.command("import-beir")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--notes-out", required=True, type=click.Path(path_type=Path),
              help="Folder to write the corpus into, one note file per document.")
@click.option("--questions-out", required=True, type=click.Path(path_type=Path),
              help="Question set to write.")
@click.option("--split", default="test", show_default=True, help="Which qrels/<split>.tsv to read.")
@click.option("--force", is_flag=True, help="Replace a set already at --questions-out.")
@fail_cleanly
def import_beir_cmd(folder: Path, notes_out: Path, questions_out: Path, split: str, force: bool) -> None:
    """Turn a BEIR folder into a note folder and a question set (queries without qrels
    become unrelated questions)."""
    from recall_eval.datasets.beir import import_beir, write_corpus_as_notes
    from recall_eval.datasets.collections import write_questions

    if not split or split in (".", "..") or any(c in split for c in "/\\\0"):
        raise UserError(f"--split {split!r} is not a split's name (test, dev, train: the stem of a file in "
                        f"{folder / 'qrels'}); give one of those")
    for part in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (folder / part).is_file():
            have = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
            raise UserError(f"{folder} has no {part}: give a BEIR folder (corpus.jsonl, queries.jsonl, "
                            f"qrels/<split>.tsv)" + (f"; its splits: {', '.join(have)} (--split)" if have and
                                                      part.startswith("qrels") else ""))
    refuse_to_replace(questions_out, force)
    check_output(notes_out, "--notes-out", folder=True)
    check_output(questions_out, "--questions-out", folder=False)
    corpus, qs = import_beir(folder, split)
    n = write_corpus_as_notes(corpus, notes_out)
    write_questions(questions_out, qs)
    echo_json({"notes": n, "questions": len(qs), "notes_out": str(notes_out),
               "questions_out": str(questions_out)})


commands = {"export-beir": export_beir_cmd, "import-beir": import_beir_cmd}
