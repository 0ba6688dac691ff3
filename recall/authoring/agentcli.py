"""The recommended flow without a manual step: an agent CLI the user already has (Claude
Code ``claude``, Codex ``codex``, Gemini ``gemini``) writes each new or changed note's
questions, restatements and negatives (``recall.authoring.notegen``), in the background.

* **Consent first.** Nothing is sent until ``[questions] generate`` names an agent (or
  ``auto``): ``recall questions on`` writes it after showing the cost in tokens, the
  plugin's option ``generate_questions`` sets it for the plugin's runs, the web page has a
  button. ``ask`` (the default) and ``off`` send nothing.
* **Context-free.** Each prompt goes to the CLI on stdin (never in argv: a batch of notes
  can pass Linux's 128 KiB limit on one argument), run
  in an empty temporary folder (no project file, no CLAUDE.md in reach), with
  ``RECALL_GENERATING=1`` in its environment so recall's own hooks in that session neither
  search nor start another run. Only note text is sent; never a message the user typed.
* **In the background.** ``recall index`` (the plugin runs it at each session start) calls
  ``start_background`` once it has indexed: a detached ``recall questions run`` process, one
  at a time (a lock in RECALL_HOME), that writes the files and indexes the folders again
  through ``recall.api.Recall.index`` (the one write path). The hook and the daemon never
  wait for it: the daemon picks up the new index generation as it does after any index.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from recall.authoring import answers, bought, notegen, runner, tries
from recall.authoring.costs import REQUEST_OVERHEAD, agent_cost, describe, request_overheads
from recall.authoring.failures import AgentError, ConsentWithdrawn, TimedOut, claude_result, login_error, said_by
from recall.authoring.runner import GENERATING_ENV, Finished
from recall.authoring.sending import Sending, check_writable
from recall.privacy.masking import mask_path
from recall.privacy.paths import ensure_private_dir, read_text, run_dir

AGENTS = ("claude", "codex", "gemini")
__all__ = ["REQUEST_OVERHEAD", "agent_cost", "describe", "request_overheads"]  # moved to costs: imported from here
CONSENTED = ("auto", *AGENTS)
CHOICES = ("ask", "off", *CONSENTED)
MAX_TIMEOUTS = 4  # requests of one folder's run past [questions] timeout_s before it stops (``_ask_all``)
OFFER_FILE = "questions-offer.txt"  # what a run would cost, for the plugin to show once before consent
# Folders whose notes get questions: the user's notes, not conversations' titles or libraries.
NOTE_KINDS = ("memory", "rule", "dir")
SYSTEM_PROMPT = "You answer with exactly the output the message asks for, nothing else."



@dataclass(frozen=True)
class Agent:
    name: str
    exe: str
    model: str = ""  # [questions] model; empty: the agent's own default

    def command(self, out_file: Path, prompt: str) -> tuple[list[str], str]:
        """(argv, stdin text) for one prompt."""
        if self.name == "claude":
            # No tools, no MCP servers, no skills, no saved session, a one-line system prompt:
            # the model has the prompt and nothing else, and Claude Code's own ~12k-token system
            # prompt and tool list are not sent with every request (~500 tokens instead).
            # Only the user's own settings: a CLAUDE.md above the folder it runs in (another
            # user's in a shared /tmp reached the model as "instructions that OVERRIDE", stop 46) is not read.
            return [self.exe, "-p", "--output-format", "json", "--tools", "", "--strict-mcp-config",
                    "--setting-sources", "user",
                    "--no-session-persistence", "--disable-slash-commands", "--system-prompt", SYSTEM_PROMPT,
                    *(["--model", self.model] if self.model else [])], prompt
        model = ["-m", self.model] if self.model else []
        if self.name == "codex":
            # A note's text must not be able to steer the run: no shell (Codex's only way to act),
            # and a read-only sandbox whatever the user's own config.toml grants.
            return [self.exe, "exec", "--skip-git-repo-check", "--sandbox", "read-only",
                    "-c", "features.shell_tool=false", "-c", "features.unified_exec=false", *model,
                    "--output-last-message", str(out_file), "-"], prompt
        # Gemini CLI runs headless when stdin is not a terminal and takes stdin as the prompt
        # (``-p`` text would only be appended to it).
        return [self.exe, *model], prompt

    def env(self) -> dict[str, str]:
        """What the CLI needs in its environment besides the caller's."""
        if self.name == "gemini":
            # Gemini CLI 0.61 refuses a folder the user never trusted when headless (exit 55):
            # the empty temporary folder is trusted for this run only (what --skip-trust sets;
            # an older CLI ignores the variable).
            return {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
        return {}

    def answer(self, proc: Finished, out_file: Path) -> str:
        said = said_by(proc)
        if proc.returncode != 0:
            message = f"{self.name} exited {proc.returncode}: {said or 'it printed nothing'}"
            raise login_error(self.name, message, said) or AgentError(message, transient=True)
        if self.name == "codex":
            return read_text(out_file, errors="replace") if out_file.exists() else ""
        if not proc.stdout.strip():
            raise AgentError(f"{self.name} printed no answer" + (f"; it said: {said}" if said else ""))
        if self.name == "gemini":
            return proc.stdout
        return claude_result(proc.stdout)


def consented(choice: str) -> bool:
    return choice in CONSENTED


def find_agent(choice: str, model: str = "") -> Agent | None:
    """The agent CLI ``choice`` names (``auto``: the first of claude, codex, gemini) on PATH."""
    names = AGENTS if choice in ("auto", "ask") else (choice,) if choice in AGENTS else ()
    for name in names:
        exe = shutil.which(name)
        if exe:
            return Agent(name, exe, model)
    return None


def complete(agent: Agent, prompt: str, timeout_s: float) -> str:
    """The agent's answer to ``prompt`` alone, asked from an empty folder of RECALL_HOME's run
    folder (0700), its temporary files in another: the CLIs read instruction files in every
    folder above the one they run in, and a shared /tmp is anyone's."""
    run = ensure_private_dir(run_dir())
    with tempfile.TemporaryDirectory(prefix="gen-", dir=run) as cwd, \
            tempfile.TemporaryDirectory(prefix="out-", dir=run) as out_dir:
        env = {**os.environ, **agent.env(), GENERATING_ENV: "1", "TMPDIR": out_dir}
        out_file = Path(out_dir) / "answer.txt"
        argv, stdin = agent.command(out_file, prompt)
        try:
            proc = runner.run(argv, stdin, cwd=cwd, env=env, timeout_s=timeout_s)
        except runner.TooLong:
            raise TimedOut(f"{agent.name} did not end within {timeout_s:g} s; it was stopped "
                             "([questions] timeout_s)") from None
        except runner.TooMuch:
            raise AgentError(f"{agent.name} printed more than {runner.MAX_ANSWER_BYTES >> 20} MB; it was stopped "
                             "and nothing of it was used") from None
        except OSError as exc:
            raise AgentError(f"{agent.name} could not start: {exc}", transient=True) from exc
        return agent.answer(proc, out_file)


# --- one run ----------------------------------------------------------------------------

def note_folders(sources: Sequence) -> list[Path]:
    """The folders of ``sources`` (``recall.indexing.indexer.SourceSpec``) whose notes get questions."""
    out: list[Path] = []
    for spec in sources:
        if spec.kind in NOTE_KINDS and spec.questions and spec.root.is_dir() and spec.root.resolve() not in out:
            out.append(spec.root.resolve())
    return out


def plan(sources: Sequence, batch_notes: int) -> tuple[list[notegen.FolderState], notegen.Cost]:
    """Each folder's state and what writing its pending notes would cost, in tokens (a note the
    agent left unanswered ``tries.MAX_TRIES`` times is not pending until it is edited)."""
    states = [notegen.folder_state(folder) for folder in note_folders(sources)]
    record = tries.asked()
    for state in states:
        state.pending = [p for p in state.pending if not tries.given_up(p, record)]
        if state.owes_negatives and tries.negatives_given_up(state, record):
            state.has_negatives = True  # asked MAX_TRIES times for nothing: not again until a note comes or goes
    total = notegen.Cost()
    for state in states:
        c = notegen.cost(state, batch_notes)
        total.requests += c.requests
        total.input_tokens += c.input_tokens
        total.output_tokens += c.output_tokens
    return [s for s in states if s.wanted], total


def given_up(sources: Sequence) -> int:
    """How many new or changed notes are not pending for having got nothing ``tries.MAX_TRIES`` times."""
    record = tries.asked()
    return sum(tries.given_up(p, record) for folder in note_folders(sources)
               for p in notegen.folder_state(folder).pending)


def generate_folder(state: notegen.FolderState, agent: Agent, embedder, batch_notes: int, timeout_s: float,
                    log: Callable[[str], None], allowed: Callable[[], bool] = lambda: True,
                    out: notegen.Written | None = None) -> notegen.Written:
    """Ask ``agent`` for the pending notes' questions, restatements and negatives; write them
    (in ``out``, given or new: what was written, also when it raises).

    ``allowed`` is asked before every request: consent withdrawn during a run (`recall
    questions off`, another agent chosen) stops it there, nothing more sent or written. A note
    deleted during the run, or that no longer reads as the indexer reads it (a folder, a link out
    of the folder), is left out (its answer too) and said (``sending.Sending``), not the end of the run.
    Each batch answered whole is kept at once (``_keep``); a run that ends before its last batch
    (the agent failing, Ctrl-C, SIGTERM) writes those batches' lines first, then raises."""
    out = out if out is not None else notegen.Written()
    questions: dict[str, list[str]] = {}
    restated: dict[str, list[str]] = {}
    hashes: dict[Path, str] = {}
    for p in state.pending:  # before asking: a later edit stays pending
        with contextlib.suppress(OSError):
            hashes[p] = notegen.note_hash(p)
    sending = Sending(state.folder)

    def ask(prompt_of: Callable[..., str], part: list[Path]) -> tuple[str, list[Path]]:
        """The answer to ``prompt_of``'s prompt over the notes of ``part`` still sendable, and those."""
        if not allowed():
            raise ConsentWithdrawn("consent was withdrawn during the run (`recall questions off` or another agent): "
                             "stopped, nothing more sent")
        texts = sending.read(part)  # read now, as the indexer would: not at plan time
        sent = [p for p in part if p in texts]
        return (complete(agent, prompt_of(sent, texts=texts), timeout_s) if sent else ""), sent

    check_writable(state.folder)
    try:
        stopped = _ask_all(state, batch_notes, ask, hashes, agent.name, (questions, restated), out, log)
    except BaseException:  # the batches answered whole (kept by ``_keep``) are written, then it goes on
        whole = bought.known(set(hashes.values()), notegen.prompts_hash())
        done = _answered(state, sending.still(state.pending), hashes, questions, whole)
        if done and allowed():
            with contextlib.suppress(OSError):  # not written: given back by the next run (``bought``)
                _write(state, sending, done, (questions, restated), agent.name, out)
        raise
    if not allowed():
        raise ConsentWithdrawn("consent was withdrawn during the run: stopped, nothing written")
    present = sending.still(state.pending)  # a note deleted or swapped during the run: left out
    _write(state, sending, _answered(state, present, hashes, questions), (questions, restated), agent.name, out)
    if stopped is not None:  # the answers got before it are written; the rest wait for the next run
        raise stopped
    # Negatives while the folder has none (the README's promise), every note shown: a request each
    # edit showed the edited note alone, and its answer was thrown away (an outside tester's AD03).
    if state.owes_negatives and (present or not state.pending):  # not when every pending note went meanwhile
        _negatives(state, [p for p in state.notes if p not in sending.left_out], ask, embedder, out, agent.name,
                   log, allowed)
    out.left_out = sending.left_out_line()
    return out


def _answered(state: notegen.FolderState, present: list[Path], hashes: dict[Path, str],
              questions: dict[str, list[str]], whole: dict[str, dict] | None = None) -> dict[str, str]:
    """The answered notes of ``present`` (still in the folder: ``Sending.still``), with their
    hashes; only those of ``whole``'s hashes, if given (a batch answered whole)."""
    return {state.key(p): hashes[p] for p in present if p in hashes
            and state.key(p) in questions and (whole is None or hashes[p] in whole)}


def _keep(state: notegen.FolderState, part: list[Path], hashes: dict[Path, str], by: str,
          got: tuple[dict[str, list[str]], dict[str, list[str]]]) -> None:
    """A batch answered whole, kept at once (``bought``): a run that ends before its last batch
    (the agent failing, Ctrl-C, SIGTERM, a crash) loses none of it; the next gives it back free."""
    bought.keep({hashes[p]: (got[0][state.key(p)], got[1].get(state.key(p), []), by) for p in part
                 if p in hashes and got[0].get(state.key(p))}, notegen.prompts_hash())


def _write(state: notegen.FolderState, sending: Sending, answered: dict[str, str],
           got: tuple[dict[str, list[str]], dict[str, list[str]]], by: str, out: notegen.Written) -> None:
    """Write the answered notes' lines, and those of the notes answered before for the same text
    (``state.bought``), given back with nothing sent."""
    kept = bought.known(set(state.bought.values()), notegen.prompts_hash())
    back = {state.key(p): state.bought[p] for p in sending.still(list(state.bought)) if state.bought[p] in kept}
    back = {key: digest for key, digest in back.items() if key not in answered}
    questions = {s: got[0][s] for s in answered} | {s: kept[d]["questions"] for s, d in back.items()}
    restated = {s: v for s, v in got[1].items() if s in answered} | {
        s: kept[d].get("restatements") or [] for s, d in back.items()}
    agents = {s: by for s in answered} | {s: kept[d].get("by") or by for s, d in back.items()}
    written = notegen.write_questions(state.folder, questions, restated, {**answered, **back}, agents)
    out.given_back = min(len(back), written)
    out.notes = written - out.given_back
    out.questions = sum(len(got[0][s]) for s in answered)


def _ask_all(state: notegen.FolderState, batch_notes: int, ask: Callable, hashes: dict[Path, str], by: str,
             into: tuple[dict[str, list[str]], dict[str, list[str]]], out: notegen.Written,
             log: Callable[[str], None]) -> TimedOut | None:
    """Every pending note's batch asked (``_ask_part``). A batch of several notes that timed out
    is asked again at once in halves (a batch's time grows with its notes: a half usually fits),
    down to one note, and no larger next run (``tries.split``); only a note that times out alone
    loses a try. Past ``MAX_TIMEOUTS`` in a run (an agent slow whatever it is asked) it stops:
    returns that timeout, raised once what was answered is written."""
    most = {p: min(n, batch_notes) for p, n in tries.batch_limits({p: hashes[p] for p in hashes}).items()}
    queue = deque(part for n in sorted({most.get(p, batch_notes) for p in state.pending})
                  for part in notegen.batches([p for p in state.pending if most.get(p, batch_notes) == n], n))
    timeouts = 0
    while queue:
        part = queue.popleft()
        log(f"{state.folder}: asking {by} for {len(part)} note(s)' questions and restatements")
        try:
            _ask_part(state, part, ask, hashes, by, into, out)
            _keep(state, part, hashes, by, into)
        except TimedOut as exc:
            timeouts += 1
            left = [p for p in part if state.key(p) not in into[0]]  # its restatements timed out: questions kept
            if len(left) > 1:
                halves = notegen.batches(left, math.ceil(len(left) / 2))
                for half in halves:
                    tries.split({p: hashes[p] for p in half if p in hashes}, len(half))
                queue.extend(halves)  # after the batches waiting: those answer while the halves narrow down
            elif left:
                out.skipped.append(f"{mask_path(state.key(left[0]))}: {by} did not end within the time limit on "
                                   f"this note alone (asked again next time, at most {tries.MAX_TRIES} times "
                                   "until the note is edited)")
            if timeouts >= MAX_TIMEOUTS and queue:
                return TimedOut(f"{exc}; {timeouts} requests of this run ran past it: the notes not answered are "
                                "asked next run, in smaller batches")
    return None


def _ask_part(state: notegen.FolderState, part: list[Path], ask: Callable, hashes: dict[Path, str], by: str,
              into: tuple[dict[str, list[str]], dict[str, list[str]]], out: notegen.Written) -> None:
    """One batch's questions then restatements (``ask``: ``generate_folder``'s), kept in ``into``."""
    keys = list(state.keys.values())
    try:
        raw, part = ask(functools.partial(notegen.expand_prompt, keys=state.keys), part)
    except AgentError as exc:  # an answer refused or cut off counts as a try too ("prompt is too long")
        # not an agent that did not get to answer (waited out), nor a timeout of several notes (``_ask_all``)
        if not exc.transient and not (isinstance(exc, TimedOut) and len(part) > 1):
            tries.note_unanswered({p: hashes[p] for p in part if p in hashes})
        raise
    if not part:
        return
    got, problems = answers.parse_per_note(raw, [state.key(p) for p in part], "questions", f"{by} answer", keys)
    into[0].update(got)
    left = [p for p in part if not got.get(state.key(p))]
    if left:
        tries.note_unanswered({p: hashes[p] for p in left if p in hashes})
        problems.append(f"{len(left)} of {len(part)} note(s) got no questions from {by} (asked again "
                        f"next time, at most {tries.MAX_TRIES} times until the note is edited)")
    raw, part = ask(functools.partial(notegen.restate_prompt, keys=state.keys), part)
    more, problems2 = answers.parse_per_note(raw, [state.key(p) for p in part], "restatements", f"{by} answer",
                                             keys) if part else ({}, [])
    into[1].update(more)
    out.skipped += problems + problems2


def _negatives(state: notegen.FolderState, shown: list[Path], ask: Callable, embedder, out: notegen.Written,
               by: str, log: Callable[[str], None], allowed: Callable[[], bool]) -> None:
    """The folder's negatives (``shown``: the notes the request sees), appended where recall
    reads them; a request that fails or brings none is counted (``tries``) and asked again
    next run, at most ``tries.MAX_TRIES`` times."""
    n = notegen.n_negatives(len(shown), state.has_negatives) if shown else 0
    if not n:
        return
    log(f"{state.folder}: asking {by} for {n} negatives")
    try:
        raw, sent = ask(lambda ps, texts: notegen.negatives_prompt(ps, n, keys=state.keys, texts=texts), shown)
    except AgentError as exc:
        if not state.has_negatives and not exc.transient:
            tries.negatives_unanswered(state)
        raise
    if not sent:
        return
    found, problems = answers.parse_negatives(raw, f"{by} answer")
    if len(found) > n:  # 90,000 lines for 80 asked were embedded and written, every index warning after
        problems.append(f"{by} answer: {len(found):,} negatives where {n} were asked: the first {n} kept")
        found = found[:n]
    out.skipped += problems
    asked = notegen.note_questions(state.folder)
    kept, out.negatives_dropped = answers.drop_too_close(found, [q for _, q in asked], embedder)
    paths = {key: path for path, key in state.keys.items()}
    for negative, key in zip(kept, answers.nearest_notes(kept, asked, embedder), strict=True):
        if key in paths:  # forgotten with that note (recall.notes.questions.follow_negatives)
            with contextlib.suppress(OSError):
                negative.update(note=key, note_hash=notegen.note_hash(paths[key]))
    if kept and allowed():
        notegen.append_negatives(state.folder, kept, by)
        tries.negatives_answered(state)
    elif not kept and not state.has_negatives:
        tries.negatives_unanswered(state)
    out.negatives = len(kept)


def set_generate(value: str) -> Path:
    """Write ``[questions] generate = value`` to the user's config.toml (``recall.config.edit``):
    the consent ``recall questions on``/``off`` and the web page give."""
    from recall.config.edit import set_setting

    if value not in CHOICES:
        raise ValueError(f"generate must be one of {', '.join(CHOICES)}")
    return set_setting("questions", "generate", value)


def indexed_sources(app) -> list:
    """The note folders ``app``'s store has indexed, as ``SourceSpec`` (the web page's view)."""
    from recall.indexing.indexer import SourceSpec

    return [SourceSpec(kind, Path(root), project) for _, kind, root, project in app.store.sources()
            if kind in NOTE_KINDS and Path(root).is_dir()]


def offer(home: Path, line: str) -> None:
    """Leave the not-yet-allowed line for the plugin to show once (``questions-offer.txt``)."""
    from recall.privacy.paths import private_open

    with private_open(home / OFFER_FILE) as fh:
        fh.write(line + "\n")

