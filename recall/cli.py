"""The ``recall`` command line. User errors print one line, never a traceback."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path

import click

from . import __version__
from .config import ConfigError, load_config, user_config_path
from .embedders import EmbedderError
from .errors import RecallError


class UserError(click.ClickException):
    """One-line error for the user (exit 1)."""


def clean_errors(*extra):
    """Decorator: errors a user can fix become one ``Error: ...`` line (exit 1), no traceback.

    Always catches missing files or folders, bad config, no model and permission errors,
    and damaged or impossible state (``recall.errors``: a damaged index or store, a full
    disk), each told with the command that repairs it; ``extra`` adds exception classes, or
    zero-argument functions returning one, called when the command runs, so a heavy module
    is imported only then. Shared by ``recall.cli_extra`` and ``recall_eval.cli``.
    """
    import functools

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            caught: tuple[type[BaseException], ...] = (
                FileNotFoundError, NotADirectoryError, ConfigError, EmbedderError, PermissionError, RecallError,
                *(t if isinstance(t, type) else t() for t in extra))
            try:
                return fn(*args, **kwargs)
            except caught as exc:
                raise UserError(str(exc)) from None
            except (sqlite3.DatabaseError, OSError) as exc:
                line = _state_error(exc)
                if line is None:
                    raise
                raise UserError(line) from None
        return wrapper
    return decorate


def _state_error(exc: BaseException) -> str | None:
    """One line for a SQLite error or a full disk met anywhere; None: not ours to explain."""
    from .errors import DiskFull, is_disk_full
    from .paths import recall_home

    if is_disk_full(exc):
        return str(DiskFull(getattr(exc, "filename", None) or recall_home()))
    if isinstance(exc, sqlite3.DatabaseError):
        from .api import DB_NAME
        from .store import store_error

        err = store_error(recall_home() / DB_NAME, exc)
        return str(err) if isinstance(err, RecallError) else f"SQLite: {exc} ({recall_home() / DB_NAME})"
    return None


_fail_cleanly = clean_errors()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="recall")
def main() -> None:
    """recall: memory notes that come back to your coding agent at the right moment.

    Files live under RECALL_HOME (default: a per-user data folder); settings in
    RECALL_HOME/config.toml (see `recall config`).
    """


def _app():
    from .api import Recall

    return Recall()


@main.command()
@click.argument("dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--kind", type=click.Choice(["dir", "rule", "memory"]), default="dir", show_default=True,
              help="How DIRs are indexed: plain note folders, shared rules, or a project's memory.")
@click.option("--no-conversations", is_flag=True, help="Do not index past conversations' titles.")
@click.option("--rebuild", is_flag=True,
              help="Repair: re-read every folder indexed before and write a fresh index; a damaged "
                   "store file is moved aside and the notes are indexed again.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@_fail_cleanly
def index(dirs: tuple[Path, ...], kind: str, no_conversations: bool, rebuild: bool, quiet: bool) -> None:
    """Index notes: DIRs given, or the current project's memory folder and shared rules.

    Only new or changed notes are embedded; removed ones are dropped. Each DIR given
    is searched by later queries against the same RECALL_HOME. A folder's
    questions.jsonl (questions per note, from `recall-eval expand`) and notes'
    front-matter `questions:` are indexed as extra chunks of their note. With --rebuild,
    every folder indexed before is read again too, and a damaged index or store is replaced.
    """
    from tqdm import tqdm

    from .api import project_key
    from .indexer import SourceSpec

    app = _app()
    cwd = Path.cwd()
    salvaged: list = []
    if rebuild:
        aside, salvaged = app.set_aside_damaged_store()
        if aside is not None:
            click.echo(f"note: the damaged store was moved to {aside} (delete it once all is well); "
                       f"indexing {len(salvaged)} known folder(s) and the ones asked for again", err=True)
    if dirs:
        for d in dirs:
            if not d.exists():
                raise UserError(f"no such folder: {d}")
            if not d.is_dir():
                raise UserError(f"not a folder: {d}")
        sources = [SourceSpec(kind, d, project_key(cwd) if kind == "memory" else None) for d in dirs]
        conversations_of = None
    else:
        sources = [s for s in app.default_sources(cwd) if s.root.exists()]
        missing = [s for s in app.default_sources(cwd) if not s.root.exists()]
        for s in missing:
            click.echo(f"note: {s.root} does not exist yet ({s.kind}); skipped", err=True)
        conversations_of = None if no_conversations else cwd
    bar = tqdm(total=None, unit="chunk", disable=quiet or not sys.stderr.isatty(), desc="embedding")
    try:
        stats = app.index(sources, progress=lambda n, _: bar.update(n), conversations_of=conversations_of,
                          rebuild=rebuild, salvaged=salvaged)
    finally:
        bar.close()
    for p in stats.problems:
        click.echo(f"warning: {p}", err=True)
    click.echo(
        f"added {stats.added}, changed {stats.changed}, removed {stats.removed}, unchanged {stats.unchanged}; "
        f"embedded {stats.chunks_embedded} chunks with {app.embedder.model_id} in {stats.seconds:.2f} s"
        + (f"; {stats.questions_total} note questions among the chunks written" if stats.questions_total else "")
    )
    if app.calibration is not None:
        for problem in app.calibration.problems:
            click.echo(f"warning: {problem}", err=True)
        click.echo(_calibration_line(app.calibration))


def _calibration_line(cal) -> str:
    how = (f"{cal.positives} held-out note questions and {cal.negatives} known unrelated messages"
           if cal.mode != "negatives only" else
           f"{cal.negatives} known unrelated messages (no note questions: `recall-eval expand` writes them)")
    got = f"; held-out hit {cal.injected:.2f}" if cal.injected is not None else ""
    return (f"calibrated on {how}: top_floor {cal.top_floor:.4f}, neg_weight {cal.neg_weight:g} "
            f"(silence {cal.silence:.2f} on the negatives, target {cal.target_silence:g}{got})")


@main.command()
@click.option("--target-silence", type=click.FloatRange(0.5, 1.0),
              help="Share of known unrelated messages to stay silent on (default: [selector] target_silence).")
@_fail_cleanly
def calibrate(target_silence: float | None) -> None:
    """Fit the thresholds on the indexed notes (also done by every `recall index`).

    Each note's questions are held out of the index in turn and asked as messages that
    should get the note; known unrelated messages (negatives.jsonl beside the notes, plus a
    shipped bank of chit-chat and off-topic messages) as messages that should get nothing.
    The thresholds that hand over the right note most often while staying silent on the
    target share of the unrelated ones go to $RECALL_HOME/calibration.toml; values you set in
    config.toml win. The daemon picks them up when it restarts (`recall stop`).
    """
    app = _app()
    cal = app.calibrate(target=target_silence)
    if cal is None:
        raise UserError("nothing indexed yet: run `recall index` first")
    for problem in cal.problems:
        click.echo(f"warning: {problem}", err=True)
    click.echo(_calibration_line(cal))
    from .calibration import FILE

    click.echo(f"written to {app.home / FILE}")


@main.command()
@click.argument("text")
@click.option("--repo", help="Search one other project's notes and titles (its folder name).")
@click.option("--all", "everything", is_flag=True, help="Search every project.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--explain", is_flag=True, help="Show scores, gap, thresholds and why the selector stopped.")
@click.option("-k", "k", default=11, show_default=True, help="Notes to list with --explain/--json.")
@_fail_cleanly
def query(text: str, repo: str | None, everything: bool, as_json: bool, explain: bool, k: int) -> None:
    """Search the notes for TEXT and show what the hook would hand over."""
    from .api import default_scope
    from .search import Scope

    app = _app()
    if everything:
        scope = Scope(everything=True)
    elif repo:
        scope = Scope(repo=repo, shared=False)
    else:
        scope = default_scope(Path.cwd())
    res = app.query(text, scope)
    d = res.decision
    if as_json:
        click.echo(json.dumps({
            "model": app.embedder.model_id,
            "thresholds": res.rule.as_dict(),
            **d.as_dict(),
            "text": d.text,
            "ranked": [{"id": h.note["id"], "name": h.note["name"], "kind": h.note["kind"],
                        "score": round(h.score, 4), "path": h.note["path"]} for h in res.hits[:k]],
            "timings_ms": {k2: round(v, 2) for k2, v in res.timings.items()},
        }, ensure_ascii=False, indent=2))
        return
    if explain:
        t = res.rule.thresholds
        click.echo(f"model {app.embedder.model_id}; thresholds from [{t.source}] in "
                   f"{t.origin}: top_floor {t.top_floor:.4f}, neg_weight {t.neg_weight:g}, "
                   f"gap_floor {t.gap_floor}, full_gap {t.full_gap}, full_margin {t.full_margin}")
        if d.negative is not None:
            click.echo(f"nearest known unrelated message: {d.negative:.4f} (negatives.jsonl + the shipped bank); "
                       "evidence = top + neg_weight x (top - nearest unrelated)")
        if "lexical_ms" in res.timings:
            click.echo(f"order: dense fused with BM25 (search.lexical_weight {app.searcher.lexical_weight}); "
                       "each score is the dense ranking's score at that rank, which the gap rule reads")
        chosen = {id(h.note) for h in d.chosen}
        for rank, h in enumerate(res.hits[:k], 1):
            mark = "*" if id(h.note) in chosen else " "
            click.echo(f"{mark}{rank:3d}  {h.score:.4f}  [{h.note['kind']}] {h.note['name']}  ({h.note['id']})")
        top = "-" if d.top is None else f"{d.top:.4f}"
        gap = "-" if d.gap is None else f"{d.gap:.4f}"
        click.echo(f"top {top}, gap {gap} -> {d.kind}: {d.reason}")
        if res.timings:
            click.echo("timings: " + ", ".join(f"{k2} {v:.1f} ms" for k2, v in res.timings.items()))
        if d.text:
            click.echo(f"--- injected ({d.line_bytes} bytes) ---")
    if d.text:
        click.echo(d.text)
    elif not explain:
        click.echo(f"(nothing: {d.reason})", err=True)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_fail_cleanly
def status(as_json: bool) -> None:
    """Model and device in use, counts, last index time, daemon state."""
    from .api import Recall
    from .embedders import describe

    app = Recall()
    info: dict = {"recall_home": str(app.home), **describe(app.config.model)}
    info["counts"] = app.store.counts()
    info["indexes"] = [
        {"model_id": m, "generation": g, "built": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)),
         "chunks": c}
        for m, g, t, c in app.store.index_runs()
    ]
    from .vector_index import check_indexes

    problems = check_indexes(app.home)
    if problems:
        info["index_problems"] = problems
    try:
        from .client import daemon_status

        info["daemon"] = daemon_status()
    except ImportError:
        pass
    info["thresholds"] = _thresholds_in_force(app)
    if as_json:
        click.echo(json.dumps(info, indent=2, ensure_ascii=False))
        return
    for key, value in info.items():
        if key == "thresholds":
            click.echo(f"thresholds: {value['words']}")
            continue
        click.echo(f"{key}: {value}")


def _thresholds_in_force(app) -> dict:
    """Which thresholds the selector uses for the configured model, and where they came from."""
    from .embedders import model_id_of

    model_id = model_id_of(app.config.model)
    t = app.config.thresholds_for(model_id)
    prov = t.provenance or {}
    if t.origin.endswith("calibration.toml") and prov.get("calibrated"):
        how = (f"self-calibrated {prov['calibrated']} on {prov.get('positives', 0)} held-out note questions and "
               f"{prov.get('negatives', 0)} known unrelated messages ({prov.get('mode')}; target silence "
               f"{prov.get('target_silence')}) in {t.origin}")
    elif t.origin == "packaged":
        how = f"the packaged [{t.source}] table (not calibrated yet: `recall index` or `recall calibrate`)"
    else:
        how = f"set by you in {t.origin}"
    return {"model_id": model_id, "table": t.source, "origin": t.origin, **t.as_dict(),
            "words": f"top_floor {t.top_floor:.4f}, neg_weight {t.neg_weight:g}: {how}"}


@main.command("config")
@click.option("--path", "show_path", is_flag=True, help="Print the user config file's path only.")
@_fail_cleanly
def config_cmd(show_path: bool) -> None:
    """Print the effective config, each value with the file it came from."""
    if show_path:
        click.echo(user_config_path())
        return
    for key, value, origin in load_config().entries():
        click.echo(f"{key} = {json.dumps(value, ensure_ascii=False)}    # {origin}")


@main.command()
@click.argument("name", required=False)
@_fail_cleanly
def models(name: str | None) -> None:
    """List models, or fetch/assemble NAME (mpnet, e5, or a Hugging Face id).

    Downloads happen here and only here: indexing, the hook and the daemon never
    download anything.
    """
    from .models import fetch, list_models

    if not name:
        for line in list_models():
            click.echo(line)
        return
    click.echo(fetch(name))


# Commands that live in their own modules (daemon + hook + installer; watch, MCP, team store).
from .cli_daemon import register as _register_daemon  # noqa: E402
from .cli_extra import register as _register_extra  # noqa: E402
from .cli_ui import register as _register_ui  # noqa: E402

_register_daemon(main)
_register_extra(main)
_register_ui(main)


def run() -> None:  # console-script entry point that also hides KeyboardInterrupt
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    run()
