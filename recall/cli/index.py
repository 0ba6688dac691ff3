"""`recall index` and `recall calibrate`: write the notes into the store and fit the thresholds."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from recall.cli.common import (
    Finite,
    FolderPath,
    UserError,
    check_folders,
    fail_cleanly,
    nothing_yet,
    own_negatives_words,
    recall_app,
    say,
    warn,
)
from recall.config.settings import TARGET_SILENCE_RANGE


@click.command()
@click.argument("dirs", nargs=-1, type=FolderPath(path_type=Path))
@click.option("--kind", type=click.Choice(["dir", "rule", "memory", "library"]), default="dir", show_default=True,
              help="How DIRs are indexed: plain note folders, shared rules, a project's memory, or a library "
                   "(mirrored repositories' docs: searched on request, not on every message).")
@click.option("--no-conversations", is_flag=True, help="Do not index past conversations' titles.")
@click.option("--rebuild", is_flag=True,
              help="Repair: re-read every folder indexed before and write a fresh index; a damaged "
                   "store file is moved aside and the notes are indexed again; files that failed to "
                   "convert are tried again.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@fail_cleanly
def index(dirs: tuple[Path, ...], kind: str, no_conversations: bool, rebuild: bool, quiet: bool) -> None:
    """Index notes and documents: DIRs given, or the project's memory folder, the rules
    and libraries [sources] lists, and past conversations' titles.

    Only new or changed notes are embedded; removed ones are dropped. Each DIR given
    is searched by later queries against the same RECALL_HOME. A folder's
    questions.jsonl (questions per note, from `recall-eval expand`) and notes'
    front-matter `questions:` are indexed as extra chunks of their note. Besides markdown
    notes, a folder's PDF, DOCX, PPTX, XLSX, HTML, EPUB and text files, screenshots and
    recordings are indexed ([documents]; extras `docs` and `ocr`). With --rebuild,
    every folder indexed before is read again too, and a damaged index or store is replaced.

    Every note's text is embedded before its questions, and notes are searchable as they
    are embedded; `recall status` shows the progress. An index interrupted (Ctrl-C, a
    crash) is resumed by the next `recall index`: only what is missing is embedded.
    """
    from recall.ipc.client import retire_older

    retire_older()  # a daemon from before recall's code check: it would answer with the older code for good
    app = recall_app()
    cwd = Path.cwd()
    salvaged: list = []
    if rebuild:
        from recall.notes.documents.failed import forget_all

        forget_all()  # every file that failed to convert is tried again
        aside, salvaged = _set_aside(app)
        if aside is not None:
            say(f"note: the damaged store was moved to {aside} (delete it once all is well); "
                f"indexing {len(salvaged)} known folder(s) and the ones asked for again", err=True)
    sources = _sources(app, dirs, kind, cwd)
    conversations_of = None if dirs or no_conversations else cwd
    bar, plan = _progress_bar(quiet)
    try:
        stats = app.index(sources, progress=lambda n, _: bar.update(n), conversations_of=conversations_of,
                          rebuild=rebuild, salvaged=salvaged, plan=plan)
    finally:
        bar.close()
    _say_done(app, stats)
    if not rebuild:
        line = start_after_index(app, dirs, kind, cwd, sources)
        if line and not quiet:
            say(line, err=True)


def _say_done(app, stats) -> None:
    """What an index did: each problem in one line, the counts, the calibration, and a threshold
    table set for a model no longer in use (a default model changed under it)."""
    from recall.notes.problems import grouped

    for p in grouped(stats.problems):
        warn(p)
    say(
        f"added {stats.added}, changed {stats.changed}, removed {stats.removed}, unchanged {stats.unchanged}; "
        f"embedded {stats.chunks_embedded} chunk{'' if stats.chunks_embedded == 1 else 's'} with "
        f"{app.embedder.model_id} in {stats.embed_seconds:.2f} s; {stats.seconds:.2f} s in all"
        + (f" (calibrating {stats.calibrate_seconds:.2f} s)" if app.calibration is not None else "")
        + (f"; {stats.questions_total} note questions among the chunks written" if stats.questions_total else "")
    )
    if app.calibration is not None:
        for problem in app.calibration.problems:
            warn(problem)
        say(_calibration_line(app.calibration, app.store.counts()["questions"], _writes_them(app)))
    for line in app.config.unused_model_tables(app.embedder.model_id):
        say(line, err=True)
    from recall.embedding.scripts import uncovered_line

    if line := uncovered_line(app.embedder.model_id, (f"{n.name} {n.description}" for n in app.store.notes())):
        say(line, err=True)


def _progress_bar(quiet: bool):
    """The bar on a terminal, and what ``Recall.index`` calls at each phase's start: notes'
    text (searchable as it goes), questions, calibrating."""
    from tqdm import tqdm

    bar = tqdm(total=None, unit="passage", disable=quiet or not sys.stderr.isatty(), desc="reading")

    def plan(phase: str, passages: int) -> None:
        bar.reset()
        bar.total = passages or None  # none: a count without a bar (calibrating)
        bar.set_description(phase)

    return bar, plan


def _sources(app, dirs: tuple[Path, ...], kind: str, cwd: Path) -> list:
    """The folders to index: DIRs as ``kind``, else the project's memory and the rules
    that exist (a missing one is noted and skipped). A project's memory records its folder's
    name (``--repo NAME`` finds it by that)."""
    from recall.indexing.indexer import SourceSpec
    from recall.indexing.known import remember_project
    from recall.privacy.paths import project_key

    if not dirs or kind == "memory":
        remember_project(app.store, cwd)
    if dirs:
        check_folders(dirs, "recall index")
        given = _kind_given()  # without --kind, a folder known as another kind is read as that
        return [SourceSpec(kind, d, project_key(cwd) if kind == "memory" else None, kind_given=given) for d in dirs]
    from recall.privacy.claude_memory import auto_memory_override
    from recall.privacy.paths import project_root

    _override, problem = auto_memory_override(project_root(cwd))
    if problem is not None and _first_time(problem):
        warn(problem)
    sources = app.default_sources(cwd)
    for s in sources:
        if not s.root.exists() and _first_time(str(s.root)):
            say(_missing_line(s), err=True)
    return [s for s in sources if s.root.exists()]


def _kind_given() -> bool:
    """Whether this command was given ``--kind`` (not its default)."""
    ctx = click.get_current_context(silent=True)
    return ctx is None or ctx.get_parameter_source("kind") is not click.core.ParameterSource.DEFAULT


def _first_time(what: str) -> bool:
    """Whether this command has not said ``what`` yet (a command that reads the folders twice,
    as `recall index` then its questions line do, says a missing one once)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return True
    said = ctx.find_root().meta.setdefault("recall.said", set())
    if what in said:
        return False
    said.add(what)
    return True


def _missing_line(spec) -> str:
    """A default folder that is not there, with what to do about it."""
    if spec.kind == "memory":
        return (f"note: no Claude Code memory for this project yet ({spec.root}): Claude Code creates it when it "
                "saves its first memory; for a notes folder of your own, `recall index DIR`")
    from recall.privacy.paths import user_config_path

    key = "rules" if spec.kind == "rule" else "libraries"
    return (f"note: {spec.root} ([sources] {key}) does not exist; skipped: create it, or take it out of "
            f"[sources] {key} in {user_config_path()}")


def known_sources(app, cwd: Path) -> list:
    """This project's folders (as `recall index` takes them) and every note folder indexed
    before: what `recall questions` counts and `recall questions run` writes with no DIR."""
    from recall.authoring.agentcli import indexed_sources

    out = {s.root.resolve(): s for s in _sources(app, (), "dir", cwd)}
    for spec in indexed_sources(app):
        out.setdefault(spec.root.resolve(), spec)
    return list(out.values())


def _set_aside(app):
    """``Recall.set_aside_damaged_store``, the daemon stopped first when the store stays locked
    (a store damaged under a running daemon: every command waited 30 s for it; the next message
    starts it again)."""
    import sqlite3

    from recall.privacy.paths import DB_NAME

    path = app.home / DB_NAME
    if path.is_file():
        try:
            probe = sqlite3.connect(str(path), timeout=3, isolation_level=None)
            try:
                probe.execute("PRAGMA journal_mode=WAL")  # what opening the store does first
            finally:
                probe.close()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc):
                from recall.cli.daemon import stop_daemon

                say(f"note: the store was locked: the daemon was {stop_daemon()} (the next message starts it "
                    "again)", err=True)
        except sqlite3.DatabaseError:
            pass  # damaged: said and repaired below
    return app.set_aside_damaged_store()


def _writes_them(app) -> str:
    """What writes the notes' questions from here: once allowed, the background run (or `recall
    questions run` now), not `recall questions on` again."""
    from recall.authoring.agentcli import consented

    if consented(app.config.questions.generate):
        return "`recall questions run` writes them now (`recall index` starts it in the background)"
    return "`recall questions on` writes them"


def _calibration_line(cal, questions: int, writes: str) -> str:
    """``questions``: the note questions indexed (too few to fit on is not none; stop 48, X02);
    ``writes``: what writes more (``_writes_them``)."""
    from recall.ranking.calibration import MIN_OWN_NEGATIVES, MIN_POSITIVES

    few = (f"{questions} note questions, under the {MIN_POSITIVES} a fit needs" if questions else
           f"no note questions: {writes}")
    how = (f"{cal.positives} held-out note questions and {cal.negatives} known unrelated messages"
           if cal.mode != "negatives only" else f"{cal.negatives} known unrelated messages ({few})")
    got = f"; held-out hit {cal.injected:.2f}" if cal.injected is not None else ""
    aside = (f"; {cal.muted} note question(s) set aside: through them a note spoke on messages known to be"
             " about no note" if cal.muted else "")
    own = cal.negatives - cal.negatives_by_origin.get("bank", 0)
    near = own if cal.near_misses is None else cal.near_misses
    if near < MIN_OWN_NEGATIVES and (cal.silence < cal.target_silence or near < own):
        what = own_negatives_words(own, near, "the folders'")
        aside += (f"; the packaged floor stays: {what}, under the {MIN_OWN_NEGATIVES} a"
                  f" fit needs (chit-chat says little about near misses); {writes}")
    silence = (f"silence {cal.silence:.2f} on the negatives' less silent half" if cal.hidden_notes is None else
               f"silence {cal.silence:.2f} estimated from the notes each hidden in turn ({cal.hidden_notes:.2f} of"
               f" their questions silent), {cal.written:.2f} on the written negatives")
    return (f"calibrated on {how}: top_floor {cal.top_floor:.4f}, neg_weight {cal.neg_weight:g} "
            f"({silence}, target {cal.target_silence:g}{got})" + aside)


@click.command()
@click.option("--target-silence", type=Finite(*TARGET_SILENCE_RANGE),
              help="Share of known unrelated messages to stay silent on (default: [selector] target_silence).")
@fail_cleanly
def calibrate(target_silence: float | None) -> None:
    """Fit the thresholds on the indexed notes (also done by every `recall index`).

    Each note's questions are held out of the index in turn and asked as messages that
    should get the note; known unrelated messages (negatives.jsonl beside the notes, plus a
    shipped bank of chit-chat and off-topic messages) as messages that should get nothing.
    The thresholds that hand over the right note most often while staying silent on the
    target share of the unrelated ones (of each half of your negatives file: a batch appended
    by another writer cannot carry the estimate alone) go to $RECALL_HOME/calibration.toml;
    values you set in config.toml win. The daemon reads them at its next question.
    """
    app = recall_app()
    cal = app.calibrate(target=target_silence)
    if cal is None:
        raise UserError(nothing_yet(app.home, "nothing indexed yet: run `recall index` first"))
    for problem in cal.problems:
        warn(problem)
    say(_calibration_line(cal, app.store.counts()["questions"], _writes_them(app)))
    from recall.ranking.calibration_file import FILE

    say(f"written to {app.home / FILE}")


def start_after_index(app, dirs: tuple[Path, ...], kind: str, cwd: Path, sources) -> str | None:
    """After `recall index`: start the background run when allowed and something is pending;
    returns the line to print (or None)."""
    from recall.authoring.agentcli import consented, describe, find_agent, offer, plan
    from recall.authoring.runner import start_background

    choice = app.config.questions.generate
    agent = find_agent(choice, app.config.questions.model)
    if agent is None or choice == "off" or (dirs and kind == "library"):
        return None
    # With no DIR, the run started below writes what `recall questions run` writes: every known folder's.
    states, cost = plan(sources if dirs else known_sources(app, cwd), app.config.questions.batch_notes)
    if not states:
        return None
    line = describe(cost, sum(len(s.pending) for s in states), agent, sum(len(s.bought) for s in states))
    if not consented(choice):
        if not cost.requests:  # only notes answered before: nothing to offer
            return None
        offer(app.home, line)
        return f"questions: {line}; `recall questions on` allows it (once), `recall questions off` hides this"
    argv = [*(str(d) for d in dirs), "--kind", kind, "--quiet"] if dirs else ["--quiet"]
    if start_background(app.home, argv, cwd):
        return f"questions: writing them in the background; {line} (log: {app.home / 'questions.log'})"
    return None
