"""`recall questions`: an agent CLI you already have writes your notes' questions (recall.authoring.agentcli)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from recall.cli.common import FolderPath, Interrupted, UserError, fail_cleanly, recall_app, say, warn

_DIRS = click.argument("dirs", nargs=-1, type=FolderPath(path_type=Path))
_KIND = click.option("--kind", type=click.Choice(["dir", "rule", "memory"]), default="dir", show_default=True,
                     help="How DIRs are indexed (as `recall index --kind`).")


def _sources(app, dirs: tuple[Path, ...], kind: str) -> list:
    from recall.cli.index import _sources as index_sources

    return index_sources(app, dirs, kind, Path.cwd())


def _known_sources(app) -> list:
    """This project's folders (as `recall index` takes them) and every note folder indexed before."""
    from recall.cli.index import known_sources

    return known_sources(app, Path.cwd())


def pending_line(app, sources, choice: str | None = None) -> str:
    """What a run would send and cost now with the agent ``choice`` names (default: the
    config's), or that nothing is pending."""
    from recall.authoring.agentcli import describe, find_agent, given_up, plan
    from recall.authoring.tries import MAX_TRIES

    states, cost = plan(sources, app.config.questions.batch_notes)
    waiting = given_up(sources)
    later = (f"; {waiting} note(s) got nothing from the agent in {MAX_TRIES} tries and wait for an edit "
             "(`recall questions run` asks them again now)") if waiting else ""
    if not states:
        return "every note has its questions; nothing to send" + later
    q = app.config.questions
    return describe(cost, sum(len(s.pending) for s in states), find_agent(choice or q.generate, q.model),
                    sum(len(s.bought) for s in states)) + later


@click.group("questions", invoke_without_command=True)
@click.pass_context
@fail_cleanly
def questions(ctx: click.Context) -> None:
    """Let an agent CLI you have (claude, codex, gemini) write each note's questions.

    Without a subcommand: whether it is allowed ([questions] generate), which agent, and
    what the project's new or changed notes would cost in tokens. Nothing is sent before
    `recall questions on`; then `recall index` starts it in the background for new and
    changed notes only. The agent sees only recall's prompts and the notes' text, from an
    empty folder of RECALL_HOME's private run folder; results go to each folder's questions.jsonl and
    negatives.jsonl, and are indexed.
    """
    if ctx.invoked_subcommand is not None:
        return
    from recall.authoring.agentcli import consented, find_agent

    app = recall_app()
    choice = app.config.questions.generate
    agent = find_agent("auto" if choice == "off" else choice, app.config.questions.model)  # off: the one it would be
    state = "allowed" if consented(choice) else "not allowed (`recall questions on` allows it)" \
        if choice == "ask" else "off (nothing is sent; `recall questions on` allows it)"
    who = f"{agent.name} ({agent.exe})" + (", once allowed" if choice == "off" else "") if agent else "none on PATH"
    say(f"generate = {choice}: {state}; agent: {who}")
    say(pending_line(app, _known_sources(app)))
    _damaged()
    failed = _last_failure(app.home)
    if failed:
        say(f"the last run in the background failed: {failed}")


def _damaged() -> None:
    """Say once that the answers bought before could not be read (``recall.authoring.bought``)."""
    from recall.authoring.bought import damage_line

    if line := damage_line():
        warn(line)


_CHOSEN = ("Error: [questions] generate is", "Error: consent was")  # what an older run logged of the user's "off"


def _last_failure(home) -> str | None:
    """The error that ended the last background run, if that is how it ended (its log's last
    line: a run that failed ends on ``Error: ...``), with where the rest is."""
    from recall.authoring.runner import LOG_FILE
    from recall.privacy.paths import read_bytes
    from recall.privacy.safetext import one_line, shortened

    log = home / LOG_FILE
    try:
        tail = read_bytes(log)[-65536:].decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [line for line in tail.splitlines() if line.strip()]
    if not lines or not lines[-1].startswith("Error:") or lines[-1].startswith(_CHOSEN):
        return None  # a run that found consent withdrawn did as the user chose: no failure
    return f"{shortened(one_line(lines[-1][6:].strip()), 400)} (the whole run: {log})"


@questions.command("on")
@click.option("--agent", "agent_name", type=click.Choice(["auto", "claude", "codex", "gemini"]), default="auto",
              show_default=True, help="Which agent CLI writes them (auto: the first of claude, codex, gemini on "
              "PATH now, recorded by its name: the notes never go to another vendor unasked).")
@fail_cleanly
def on(agent_name: str) -> None:
    """Allow it: writes [questions] generate to config.toml, after showing the cost."""
    from recall.authoring.agentcli import find_agent, set_generate

    app = recall_app()
    agent = find_agent(agent_name)
    if agent is None:
        raise UserError(f"no agent CLI for {agent_name!r} on PATH: install Claude Code (claude), Codex (codex) "
                        "or Gemini CLI (gemini), then run `recall questions on` again")
    say(pending_line(app, _known_sources(app), agent.name))  # the cost of the agent being allowed
    path = set_generate(agent.name)
    _still_env(agent.name)
    say(f"allowed: [questions] generate = \"{agent.name}\" in {path}; `recall index` starts it in the background "
        "(`recall questions off` stops it)")


def _still_env(written: str) -> None:
    """A ``RECALL_QUESTIONS_GENERATE`` that overrides what was just written is said, not hidden
    (an outside tester's AI02: `recall questions off` said the notes stopped going out)."""
    from recall.config.load import load_config

    effective = load_config().questions.generate
    if effective != written:
        raise UserError(f"[questions] generate = \"{written}\" is written, but RECALL_QUESTIONS_GENERATE="
                        f"{effective} in this environment wins: unset it for this to take effect")


@questions.command("off")
@fail_cleanly
def off() -> None:
    """Never send notes to an agent: writes [questions] generate = "off" to config.toml."""
    from recall.authoring.agentcli import set_generate

    path = set_generate("off")
    _still_env("off")
    say(f"[questions] generate = \"off\" in {path}; a run under way stops before its next request and writes "
        "nothing more")


@questions.command("run")
@_DIRS
@_KIND
@click.option("--indexed", is_flag=True, help="Only the note folders indexed before (what the daemon's watcher "
              "starts).")
@click.option("--quiet", "-q", is_flag=True, help="Only errors.")
@fail_cleanly
def run(dirs: tuple[Path, ...], kind: str, indexed: bool, quiet: bool) -> None:
    """Write the pending notes' questions now (in the foreground), then index them.

    What `recall index` starts in the background once allowed; DIRs as for `recall index`;
    no DIR: this project's folders and every note folder indexed before, the notes `recall
    questions` counts. Run by you, it also asks again for the notes the agent gave nothing
    for twice, at once even after it failed to answer (the background waits that out).
    """
    from recall.authoring.agentcli import agent_cost, plan
    from recall.authoring.runner import run_lock

    app = recall_app()
    choice = app.config.questions.generate
    agent = _allowed_agent(app)
    if agent is None:
        return
    from recall.authoring.agentcli import indexed_sources

    sources = indexed_sources(app) if indexed else _sources(app, dirs, kind) if dirs else _known_sources(app)
    log = (lambda _m: None) if quiet else (lambda m: say(m, err=True))
    with run_lock(app.home) as mine:
        if not mine:
            say("another `recall questions run` is under way; nothing done", err=True)
            return
        if _waits(agent.name, log):
            return
        states, cost = plan(sources, app.config.questions.batch_notes)
        _damaged()
        if not states:
            log("every note has its questions; nothing to send")
            return
        log(f"{sum(len(s.pending) for s in states)} note(s) and {sum(s.owes_negatives for s in states)} folder(s)' "
            f"negatives: about {agent_cost(cost, agent).total:,} tokens with {agent.name}"
            + (f"; {back} note(s) answered before for the same text, given back free"
               if (back := sum(len(s.bought) for s in states)) else ""))
        if not _generate_all(app, states, agent, choice, log):
            return
    stats = app.index(sources)
    say(f"indexed: added {stats.added}, changed {stats.changed}, unchanged {stats.unchanged}")


def _generate_all(app, states, agent, choice: str, log) -> bool:
    """``_generate``, and a run that stops early (the agent failing, Ctrl-C, SIGTERM) said in one
    line with what it kept (``_kept``); whether to index now (not after consent withdrawn)."""
    from recall.authoring import tries
    from recall.authoring.agentcli import AgentError
    from recall.authoring.failures import ConsentWithdrawn
    from recall.authoring.runner import GENERATING_ENV, signals_end_the_run

    done: list[int] = []  # each folder's notes answered and written, also of a folder where it stopped
    try:
        with signals_end_the_run():  # SIGTERM, SIGHUP: what was answered is written first (``generate_folder``)
            _generate(app, states, agent, choice, log, done)
    except AgentError as exc:
        if isinstance(exc, ConsentWithdrawn) and os.environ.get(GENERATING_ENV):
            say(f"{exc}; {_kept(done)}", err=True)  # the user's choice, in the background: no failure
            return False
        if exc.transient:
            tries.unreachable()
        raise UserError(f"{exc}; {_kept(done)} ({exc.repair or 'run `recall questions run` to ask for the rest'})"
                        ) from None
    except KeyboardInterrupt:
        raise Interrupted(_kept(done)) from None
    except SystemExit:
        say(f"stopped: {_kept(done)}; `recall questions run` asks for the rest", err=True)
        raise
    tries.reachable()
    return True


def _generate(app, states, agent, choice: str, log, done: list[int]) -> None:
    """Each folder's questions asked and written (``generate_folder``), said; in ``done``, each
    folder's notes answered and written, the folder where it stopped included."""
    from recall.authoring.agentcli import generate_folder
    from recall.authoring.notegen import Written

    q = app.config.questions
    for state in states:
        out = Written()
        try:
            generate_folder(state, agent, app.embedder, q.batch_notes, q.timeout_s, log,
                            allowed=lambda: _still(choice), out=out)
        finally:
            done.append(out.notes)
        _report(state.folder, out)


def _kept(done: list[int]) -> str:
    """What a run that stopped kept, truthfully: the notes answered before it, written."""
    if not sum(done):
        return "no note's questions were answered whole before it, nothing written"
    return (f"the questions of the {sum(done)} note(s) answered before it are kept (in their folders' "
            "questions.jsonl; indexed at the next `recall index`)")


def _allowed_agent(app):
    """The agent a run may ask now; None (said) for a run in the background that finds consent
    withdrawn since it was started: the user's choice, no failure (`recall questions` said "the
    last run in the background failed", an outside tester's, stop 58)."""
    from recall.authoring.agentcli import consented, find_agent
    from recall.authoring.runner import GENERATING_ENV

    choice = app.config.questions.generate
    if not consented(choice) and os.environ.get(GENERATING_ENV):
        say(f"[questions] generate is {choice!r}: nothing is sent", err=True)
        return None
    if not consented(choice):
        raise UserError(f"[questions] generate is {choice!r}: nothing is sent; `recall questions on` allows it")
    agent = find_agent(choice, app.config.questions.model)
    if agent is None:
        raise UserError(f"no agent CLI for {choice!r} on PATH: install claude, codex or gemini")
    return agent


def _report(folder: Path, out) -> None:
    """What a run wrote for ``folder`` (``notegen.Written``), and what it left out or skipped."""
    say(f"{folder}: questions for {out.notes} note(s) ({out.questions}), {out.negatives} "
        f"negatives ({out.negatives_dropped} too close to a question dropped)"
        + (f"; {out.given_back} note(s)' questions given back from before, nothing sent" if out.given_back else "")
        + (f"; {len(out.skipped)} answer line(s) skipped" if out.skipped else ""))
    for line in out.skipped[:3]:  # what went wrong, in its own words (the rest counted)
        warn(line)
    if out.left_out:
        warn(out.left_out)


def _waits(agent_name: str, log) -> bool:
    """In the background, whether to wait out an agent that did not get to answer (said in
    ``log``); run by the user, the notes given up before are asked again (``tries.forget``)."""
    from recall.authoring import tries
    from recall.authoring.runner import GENERATING_ENV

    if not os.environ.get(GENERATING_ENV):
        if again := tries.forget():
            log(f"asking again for {again} note(s) or folder(s) the agent gave nothing for before")
        return False
    left, failures = tries.waiting()
    if left:
        log(f"{agent_name} did not get to answer the last {failures} time(s); asked again in "
            f"{left / 60:.0f} min, or now with `recall questions run`")
    return bool(left)


def _still(choice: str) -> bool:
    """Whether the consent the run started under still stands (the config read afresh)."""
    from recall.config.load import load_config

    return load_config().questions.generate == choice


def install_line(agent_name: str) -> str | None:
    """`recall install`'s line about questions: the one-time question with its cost (not
    allowed yet), or who writes them (allowed); nothing once declined or with no agent CLI."""
    from recall.authoring.agentcli import AGENTS, consented, find_agent

    app = recall_app()
    q = app.config.questions
    if q.generate == "off":
        return None
    wanted = agent_name if q.generate == "ask" and agent_name in AGENTS else q.generate
    agent = find_agent(wanted, q.model) or find_agent("auto", q.model)
    if agent is None:
        return None
    if consented(q.generate):
        return f"questions: {agent.name} writes new and changed notes' questions in the background after `recall index`"
    return (f"questions: {agent.name} can write your notes' questions in the background, which finds the right "
            f"note far more often ({pending_line(app, _known_sources(app), agent.name)}). Allow it once with "
            f"`recall questions on --agent {agent.name}`; `recall questions off` declines")
