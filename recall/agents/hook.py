"""Claude Code's UserPromptSubmit hook: ask the warm daemon, print its answer, never block.

Claude Code starts this as a new process for every message you send:

    <python> -E -P -m recall.agents.hook || exit 1   (a shell line, what `recall install` registers)
    <python> /abs/path/recall/agents/hook.py   (also works)

Codex CLI and Gemini CLI run the same module with ``--agent codex`` / ``--agent gemini``,
and recall's OpenCode plugin with ``--agent opencode``. The agent's module, from
``recall.agents.registry``, reads its event and wraps the daemon's block in its envelope,
within its cap; the daemon's answer is the same for every agent.

It reads the event JSON on stdin, asks the daemon within ``daemon.hook_budget_ms`` for the
whole exchange (the settings come from the snapshot the core writes, ``recall.config.snapshot``),
and prints at most one line, for Claude Code:

    {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "..."}}

The event's ``session_id`` goes up with the message (``wire.session_of``): the daemon holds back
a note it handed over in that session within ``[hook] repeat_after`` messages (in its memory only).

Messages nobody typed (turns the agent makes itself, e.g. ``<task-notification>`` when a
background job ends: ``nobody_typed``) and automated sessions get nothing, as do very short ones.

Whatever happens (no daemon, a slow or killed daemon, bad input, a bug here, a RECALL_HOME on
a mount that hangs) it prints nothing and exits 0: a memory aid must never block or break a
prompt. The budget bounds the whole process: a watchdog thread started first thing
(``recall.agents.deadline``) ends it at the budget plus ``GRACE_S``, whatever it is held in; the
answer is written whole while the budget holds or not at all, and one read after it is dropped. When no daemon
runs it starts one in the background and waits for its answer within what is left of
the budget (the daemon listens before it loads the model); if the start takes longer,
that message gets nothing and the daemon answers the next one. The daemon logs each answer as
handed over; when the hook cannot write it (the agent closed the hook's stdout, or stopped
reading it), it tells the daemon so (``tell_unsent``: one short message, on that failure only),
and ``recall log --stats`` and the page count that answer as none.

Registered under the agent's session start too (``wire.SESSION_START``, where `recall install` set
up a command hook), it starts a missing daemon there (``session_started``, ``recall.agents.early``)
and prints nothing, so that the session's first message finds the model loaded.

Start-up time is the cost of every message, so this imports the standard library,
``recall.privacy``, ``recall.config.snapshot``, ``recall.ipc.client``, ``recall.agents.deadline``
and its agent's module only
(no numpy, no model, no click, no TOML parser; the core's settings loader only when the snapshot
is missing or older than the config file). The prompt is never written anywhere.
"""

from __future__ import annotations

import json
import os
import sys
import time

if not __package__:  # run as a file: import the package from its parent folder
    _here = os.path.dirname(os.path.abspath(__file__))
    # Replace the script's own folder on sys.path: its modules must load as recall.*,
    # never as top-level modules that could shadow the standard library's.
    sys.path[0] = os.path.dirname(os.path.dirname(_here))

try:  # a half-written upgrade (a module of another release) fails here, before main()'s guard
    from recall.agents import deadline, registry, wire
    from recall.config import snapshot
    from recall.privacy import coredumps
    from recall.privacy.paths import home_arg, relative_home, store_file, user_config_path
except BaseException:  # noqa: BLE001 - run as the hook: nothing printed, exit 0 (imported: raised)
    if __name__ == "__main__":
        os._exit(0)
    raise


def hook_settings(until: deadline.Deadline | None = None) -> dict | None:
    """What the hook needs of the settings (budget, skip lists, minimum length): the snapshot
    the core writes whenever it loads them (``recall.config.snapshot``). After a config edit,
    or before any ``recall`` command ran, the core loads the settings here once (and writes the
    snapshot; ``until``, the caller's deadline, moved to give that load ``LOAD_WAIT_S``); a config
    that cannot be read leaves the last snapshot in force, and with none the hook hands nothing
    over. Shared with the MCP tool."""
    conf = snapshot.read()
    if conf is not None:
        return conf
    stamp = snapshot.config_stamp(user_config_path())  # before reading: an edit meanwhile is seen
    if stamp is None or snapshot.rejected() != stamp:  # a file already refused is not parsed again (AG02)
        if until is not None:
            until.move(max(until.at, time.monotonic() + deadline.LOAD_WAIT_S))
        try:
            from recall.config.load import refresh_snapshot

            refresh_snapshot()
        except Exception:  # noqa: BLE001 - a broken config file must not break prompts
            snapshot.reject(stamp)
    return snapshot.read(stale_ok=True)


def skipped_session(entrypoint: str, conf: dict) -> bool:
    """An automated session (``claude -p``, the SDKs), or one recall's own question writer
    started (``RECALL_GENERATING``, recall.authoring.agentcli): searched for nothing, no daemon started."""
    return entrypoint in conf["skip"] or bool(os.environ.get("RECALL_GENERATING"))


def nobody_typed(prompt: str, conf: dict) -> bool:
    """A turn the agent made itself: the message starts with one of ``[hook] skip_prompt_tags``
    (``<task-notification>``, ``<agent-message from=...>``...). Claude Code runs the prompt hook
    on turns it makes itself (a background job's end, another agent's message, a scheduled
    tick...) with nothing in the hook's input to mark them (anthropics/claude-code#94675); their
    text starts with one of these tags. Shared with the MCP tool."""
    head = prompt.lstrip()[:80]
    if not head.startswith("<"):
        return False
    name = head[1:].split(">", 1)[0].split(None, 1)
    return bool(name) and name[0].rstrip("/") in conf["skip_tags"]


def worth_searching(prompt: object, conf: dict) -> bool:
    """A message long enough to search ("ok", "go on" are not). Shared with the MCP tool."""
    return isinstance(prompt, str) and not snapshot.too_short(prompt, conf["min_chars"])


def block_of(reply: dict | None) -> str:
    """The block of the daemon's answer to ``query`` (agent-neutral: no envelope), or ""."""
    if not isinstance(reply, dict) or reply.get("ok") is not True:
        return ""
    decision = reply.get("decision")
    text = decision.get("text") if isinstance(decision, dict) else None
    return text if isinstance(text, str) else ""


def ask(prompt: str, cwd: str, conf: dict, started: float | None = None, session: str | None = None) -> dict | None:
    """The daemon's reply for ``prompt`` within ``conf``'s budget, counted from ``started`` (the
    hook's start: reading the event and the settings spend it too), else from now (None when
    none, late or no daemon). The prompt goes up as it is (``recall.ipc.client`` bounds what a
    socket carries; the daemon cuts it to the model's window); ``session``, the agent's session id
    (``wire.session_of``), goes with it, for the daemon's rule of repeats (``[hook] repeat_after``)."""
    from recall.ipc import client

    deadline = (time.monotonic() if started is None else started) + conf["budget_ms"] / 1000.0
    try:  # a budget already spent still starts a missing daemon (detached), then gives up at once
        # No daemon: start one and wait for its answer within what is left of the budget.
        question = {"cmd": "query", "prompt": prompt, "cwd": cwd, **client.checking(),
                    **({"session": session} if session is not None else {})}
        return client.ask_or_start(question, deadline)
    except client.DaemonError:
        return None


def reply_for(prompt: object, cwd: str, entrypoint: str, started: float | None = None,
              conf: dict | None = None, session: str | None = None) -> dict | None:
    """The daemon's reply for one message, or None: skipped sessions, messages too short to search,
    turns nobody typed, and a home where nothing is indexed yet (no store: a hook installed before
    `recall index`) get nothing and wake no daemon."""
    conf = conf or hook_settings()
    if conf is None or skipped_session(entrypoint, conf) or not worth_searching(prompt, conf):
        return None
    assert isinstance(prompt, str)  # worth_searching: a str
    if nobody_typed(prompt, conf) or not store_file().exists():
        return None
    return ask(prompt, cwd, conf, started, session)


def answer(stdin: bytes, entrypoint: str = "", agent: str = registry.DEFAULT,
           started: float | None = None, conf: dict | None = None) -> tuple[str, str] | None:
    """The line to print for one event and the daemon's reference to its answer (``ref``: what the
    hook tells the daemon when the line could not be written), or None (``conf``: the hook's
    settings, when read already). May raise; main() swallows it."""
    speaker = registry.get(agent)
    event = json.loads(stdin.decode("utf-8"))  # strict: invalid UTF-8 means nothing
    if wire.starts_session(event):
        session_started(entrypoint, conf)
        return None
    message = speaker.read_event(event)
    reply = reply_for(message.prompt, message.cwd, entrypoint, started, conf, message.session) if message else None
    block = block_of(reply)
    line = speaker.output(block) if block else None  # the agent's envelope, within its cap
    if not line:
        return None
    ref = reply.get("ref") if isinstance(reply, dict) else None
    return line, ref if isinstance(ref, str) else ""


def session_started(entrypoint: str, conf: dict | None = None) -> None:
    """A session's start (``wire.SESSION_START``, the entry `recall install` registers beside a
    command hook): a missing daemon started now, detached, so that it has loaded by the first
    message (``recall.agents.early``). Nothing printed: a SessionStart hook's output is the model's
    context. A session the prompt hook skips starts none."""
    conf = conf or hook_settings()
    if conf is not None and not skipped_session(entrypoint, conf):
        from recall.agents import early

        early.start_daemon()


def agent_arg(argv: list[str]) -> str:
    """``--agent NAME`` (or ``--agent=NAME``) from the command line; claude when absent or unknown."""
    for i, arg in enumerate(argv):
        if arg == "--agent" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--agent="):
            value = arg.split("=", 1)[1]
        else:
            continue
        if value in registry.AGENTS:
            return value
    return registry.DEFAULT


WRITE_GRACE_S = 0.05  # what writing an answer that came within the budget may take past it
READ_GRACE_S = 0.02  # what reading the event may take past the budget, at least


UNSENT_WAIT_S = 0.25  # what telling the daemon of an answer never handed over may take, on that failure only


def _write_within(data: bytes, by: float) -> str | None:
    """``data`` to stdout by ``by`` (``time.monotonic()``), else dropped: an agent whose pipe was
    full (it read nothing) held the hook in its write for good (stop 46, an outside tester). None
    when all of it was written, else why it was not (the agent closed the hook's stdout, or stopped
    reading): a line cut short is no answer the agent can read either. One ``write`` where the
    pipe has room (an agent that reads it); the watchdog never ends the process in the middle of
    it (``Watch.write``)."""
    import select

    if sys.stdout is None:  # started with no stdout at all
        return "closed"
    try:
        fd = sys.stdout.fileno()
        os.set_blocking(fd, False)
        view = memoryview(data)
        while view:
            left = by - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                return "not read in time"
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                continue
    except BrokenPipeError:
        return "broken pipe"
    except (OSError, ValueError):  # EBADF, a closed file object
        return "closed"
    return None


def tell_unsent(ref: str, why: str) -> None:
    """Tell the daemon its answer ``ref`` never reached the agent (``why``), so that it is logged as
    none handed over (``recall log --stats``, the page); a second message on this failure only,
    within ``UNSENT_WAIT_S``. Never the message itself."""
    if not ref:
        return
    from recall.ipc import client

    try:
        client.request({"cmd": "unsent", "ref": ref, "why": why}, deadline=time.monotonic() + UNSENT_WAIT_S)
    except (client.DaemonError, client.DaemonUnavailable):
        pass


def process_age_s() -> float:
    """How long ago this process started (Linux ``/proc``, to a clock tick), 0 where that cannot be
    read: the interpreter's start and the hook's imports come before ``main``, 30-70 ms that the
    budget did not count (a frozen daemon's hooks took 330-370 ms of a 300 ms budget; an outside
    tester's, stop 55). At most a second is taken off: a number past it is no age of this hook's."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as fh:
            uptime = float(fh.read().split()[0])
        age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0
    return min(max(age, 0.0), 1.0)


def last_word(watch: deadline.Watch) -> None:
    """What the watchdog says as it ends the hook (``recall.agents.deadline``): the daemon's answer
    read and not handed over, or waiting unread on the socket (it answered in time, the hook was
    held past its budget), told as unsent, so that it is not counted as handed over."""
    inflight = sys.modules.get("recall.ipc.inflight")  # not imported: no question was asked
    ref = watch.pending or (inflight.unread_reply_ref() if inflight is not None else "")
    if ref:
        tell_unsent(ref, "not read in time")


def main() -> None:
    # the budget covers the interpreter's start, and reading the event and the settings too
    started = time.monotonic() - process_age_s()
    # first of all, the deadline of the whole process (every path under RECALL_HOME may hang), the
    # budget's once the settings are read; a start that spent it still reads the event and starts a daemon
    watch = deadline.watch(max(started + deadline.SETTINGS_WAIT_S, time.monotonic() + deadline.GRACE_S), last_word)
    try:
        coredumps.forbid()  # it holds the message: SIGQUIT or SIGABRT must not dump it to disk
        home_arg(sys.argv[1:])  # the home install pinned (--home), whatever the agent's environment says
        # a relative home names a folder in each project the agent runs in: nothing to say, nothing made there
        conf = None if relative_home() else hook_settings(watch.deadline)
        wait_s = conf["budget_ms"] / 1000.0 if conf else wire.READ_WAIT_S
        watch.deadline.move(max(started + wait_s, time.monotonic()) + deadline.GRACE_S)
        # a stdin never at its end costs the budget; an event already written is read even when a slow
        # start spent it, so that a missing daemon is still started for the next message
        raw = wire.read_event_bytes(sys.stdin.buffer, max(started + wait_s, time.monotonic() + READ_GRACE_S))
        # no settings (a config that cannot be read): nothing to say, and no second try at them
        said = None if raw is None or conf is None else answer(raw, os.environ.get("CLAUDE_CODE_ENTRYPOINT", ""),
                                                               agent_arg(sys.argv[1:]), started, conf)
        if said:
            line, watch.pending = said
            data = line.encode("utf-8") + b"\n"
            # an answer read after the budget (the hook was held in its read) is dropped, not written late
            why = "not read in time" if time.monotonic() > started + wait_s else \
                watch.write(lambda: _write_within(data, started + wait_s + WRITE_GRACE_S))
            if why is not None:  # the daemon logged it handed over: it was not
                ref, watch.pending = watch.pending, ""
                tell_unsent(ref, why)
    except BaseException:  # noqa: BLE001 - fail open: nothing printed, exit 0
        pass
    # os._exit: no interpreter teardown (a few ms per message), and no chance of a
    # non-zero status from a late flush error.
    os._exit(0)


if __name__ == "__main__":
    main()
