"""Claude Code's UserPromptSubmit hook: ask the warm daemon, print its answer, never block.

Claude Code starts this as a new process for every message you send:

    <python> -P -m recall.agents.hook          (exec form, what `recall install` registers)
    <python> /abs/path/recall/agents/hook.py   (also works)

Codex CLI and Gemini CLI run the same module with ``--agent codex`` / ``--agent gemini``,
and recall's OpenCode plugin with ``--agent opencode``:
the same answer in that agent's event shape and within its context cap (see ``for_agent``).

It reads the event JSON on stdin, asks the daemon within ``daemon.hook_budget_ms``
(300 ms) for the whole exchange, and prints at most one line:

    {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "..."}}

Messages nobody typed (turns the agent makes itself, e.g. ``<task-notification>`` when a
background job ends: ``nobody_typed``) and automated sessions get nothing, as do very short ones.

Whatever happens (no daemon, a slow or killed daemon, bad input, a bug here) it prints
nothing and exits 0: a memory aid must never block or break a prompt. When no daemon
runs it starts one in the background and waits for its answer within what is left of
the budget (the daemon listens before it loads the model); if the start takes longer,
that message gets nothing and the daemon answers the next one.

Start-up time is the cost of every message, so this imports the standard library,
``recall.privacy.paths``, ``recall.ipc.client`` and ``recall.privacy.safetext`` only (no numpy,
no model, no click; ``tomllib`` only when a user config file exists). The prompt is never written anywhere.
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

from recall.privacy.paths import ensure_private_dir, private_open, recall_home, run_dir  # noqa: E402

# Defaults, the same as default_config.toml (a test keeps them in step).
HOOK_BUDGET_MS = 300
SKIP_ENTRYPOINTS = ("sdk-cli", "sdk-py", "sdk-ts")
# Messages nobody typed: Claude Code runs the prompt hook on turns it makes itself (a background
# job's end, another agent's or session's message, a scheduled tick...) with nothing in the
# hook's input to mark them (anthropics/claude-code#94675); their text starts with one of
# these tags, the ones Claude Code 2.1.332 itself calls "harness envelope" tags.
SKIP_PROMPT_TAGS = ("task-notification", "agent-message", "teammate-message", "cross-session-message",
                    "remote-review", "slack-ping", "slack-tag-message", "tick", "fetched-web-content",
                    "untrusted-widget-state", "coordinator-relay", "artifact-type-instructions",
                    "cowritten-artifact-html", "artifact-file-content", "artifact-origin-notes",
                    "artifact-stored-declaration")
MIN_PROMPT_CHARS = 8
# The model reads one window of 512 tokens (~2,000-3,000 characters of prose) of a question;
# the daemon cuts exactly (recall.embedding.models.fit_query), this cheap cut keeps a pasted
# megabyte off the socket. The same as recall.embedding.models.QUERY_CHARS_MAX (a test checks).
MAX_PROMPT_CHARS = 4096
SETTINGS_CACHE = "hook-settings.json"


def hook_settings() -> dict:
    """What the hook needs from the user's config, over the packaged defaults.

    Importing tomllib and parsing costs ~8 ms of CPU, a quarter of the hook's start, so
    the four values are cached as JSON in run_dir(), keyed by the config file's
    identity (path, inode, size, mtime, ctime): any edit of the file re-reads it.
    """
    out = {"budget_ms": HOOK_BUDGET_MS, "skip": list(SKIP_ENTRYPOINTS), "min_chars": MIN_PROMPT_CHARS,
           "skip_tags": list(SKIP_PROMPT_TAGS)}
    path = os.environ.get("RECALL_CONFIG") or os.path.join(recall_home(), "config.toml")
    try:
        st = os.stat(path)
    except OSError:
        return out  # no user config: the defaults
    key = [path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    cache = run_dir() / SETTINGS_CACHE
    from recall.privacy import trust

    # No run folder yet (a cold start): nothing cached, the config is read and the cache made.
    if os.path.isdir(cache.parent) and trust.run_files_problem(cache.parent, SETTINGS_CACHE):
        return out  # another user could have written it (a budget, a skip list): defaults only
    try:
        with open(cache, "rb") as fh:
            cached = json.load(fh)
        if cached["key"] == key:
            out.update(cached["settings"])
            return out
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        import tomllib

        with open(path, "rb") as fh:
            data = tomllib.load(fh)
        budget = data.get("daemon", {}).get("hook_budget_ms")
        if isinstance(budget, int | float) and not isinstance(budget, bool) and budget > 0:
            out["budget_ms"] = budget
        skip = data.get("hook", {}).get("skip_entrypoints")
        if isinstance(skip, list):
            out["skip"] = [str(s) for s in skip]
        tags = data.get("hook", {}).get("skip_prompt_tags")
        if isinstance(tags, list):
            out["skip_tags"] = [str(s) for s in tags]
        min_chars = data.get("selector", {}).get("min_prompt_chars")
        if isinstance(min_chars, int) and not isinstance(min_chars, bool):
            out["min_chars"] = min_chars
    except Exception:  # noqa: BLE001 - a broken config file must not break prompts
        return out
    try:  # config values only: nothing of the prompt goes into this file
        ensure_private_dir(cache.parent)
        # pid + a live object's id: unique also between threads (the MCP server's tool calls)
        tmp = cache.with_name(f"{SETTINGS_CACHE}.{os.getpid()}.{id(out)}.tmp")
        with private_open(tmp) as fh:
            json.dump({"key": key, "settings": out}, fh)
        os.replace(tmp, cache)
    except OSError:
        pass
    return out


def skipped_session(entrypoint: str, conf: dict) -> bool:
    """An automated session (``claude -p``, the SDKs), or one recall's own question writer
    started (``RECALL_GENERATING``, recall.authoring.agentcli): searched for nothing, no daemon started."""
    return entrypoint in conf["skip"] or bool(os.environ.get("RECALL_GENERATING"))


def nobody_typed(prompt: str, conf: dict) -> bool:
    """A turn the agent made itself: the message starts with one of ``[hook] skip_prompt_tags``
    (``<task-notification>``, ``<agent-message from=...>``...). Shared with the MCP tool."""
    head = prompt.lstrip()[:80]
    if not head.startswith("<"):
        return False
    name = head[1:].split(">", 1)[0].split(None, 1)
    return bool(name) and name[0].rstrip("/") in conf.get("skip_tags", SKIP_PROMPT_TAGS)


def worth_searching(prompt: object, conf: dict) -> bool:
    """A message long enough to search ("ok", "go on" are not). Shared with the MCP tool."""
    return isinstance(prompt, str) and len(prompt.strip()) >= conf["min_chars"]


def answer(stdin: bytes, entrypoint: str = "", agent: str = "claude") -> str | None:
    """The line to print for one event, or None. May raise; main() swallows it."""
    conf = hook_settings()
    if skipped_session(entrypoint, conf):
        return None
    event = json.loads(stdin.decode("utf-8"))  # strict: invalid UTF-8 means nothing
    if not isinstance(event, dict):
        return None
    prompt = event.get("prompt")
    if not worth_searching(prompt, conf):
        return None
    assert isinstance(prompt, str)
    if nobody_typed(prompt, conf):
        return None
    cwd = event.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        cwd = os.getcwd()

    from recall.ipc import client

    deadline = time.monotonic() + conf["budget_ms"] / 1000.0
    try:
        # No daemon: start one and wait for its answer within what is left of the budget.
        reply = client.ask_or_start({"cmd": "query", "prompt": prompt[:MAX_PROMPT_CHARS], "cwd": cwd},
                                    deadline)
    except client.DaemonError:
        return None
    if reply is None:
        return None
    line = reply.get("line")
    if reply.get("ok") is True and isinstance(line, str) and line.startswith("{"):
        return for_agent(line, agent)  # re-made here: the text is checked whoever wrote the line
    return None


# --- other agents' output formats ---------------------------------------------------------
# Each agent's event and cap (checked against their docs, 2026-11):
#   claude  UserPromptSubmit; additionalContext over 10,000 characters becomes a file preview
#   codex   UserPromptSubmit, the same JSON shape (codex-rs/hooks/schema/generated/
#           user-prompt-submit.command.output.schema.json); context capped near 2,500 tokens,
#           so at most 2,500 characters here (one token per character in the worst case, CJK)
#   gemini  BeforeAgent; stdout must be JSON only; hookSpecificOutput.additionalContext is
#           appended to that turn's prompt (google-gemini/gemini-cli docs/hooks/reference.md)
#   opencode  recall's own plugin (recall.agents.opencode) reads additionalContext and adds it
#           to the message as a hidden text part; OpenCode sets no cap, Claude Code's is kept
AGENT_EVENTS = {"claude": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent",
                "opencode": "chat.message"}
AGENT_MAX_CHARS = {"claude": 10_000, "codex": 2_500, "gemini": 10_000, "opencode": 10_000}


def fit(text: str, max_chars: int) -> str:
    """``text`` cut at a line boundary to at most ``max_chars`` characters (the header stays)."""
    if len(text) <= max_chars:
        return text
    lines = text.split("\n")
    while len(lines) > 2 and len("\n".join(lines)) > max_chars:
        lines.pop()
    return "\n".join(lines)[:max_chars]


def context_of(line: str) -> str:
    """The additionalContext of the daemon's (Claude Code shaped) line, each of its lines one
    line of printable text (``recall.privacy.safetext.agent_block``)."""
    from recall.privacy.safetext import agent_block

    data = json.loads(line)
    text = data["hookSpecificOutput"]["additionalContext"]
    return agent_block(text) if isinstance(text, str) else ""


def for_agent(line: str, agent: str) -> str | None:
    """The daemon's line rewritten for ``agent``: its event name, within its cap."""
    text = fit(context_of(line), AGENT_MAX_CHARS[agent])
    if not text:
        return None
    return json.dumps({"hookSpecificOutput": {"hookEventName": AGENT_EVENTS[agent], "additionalContext": text}},
                      ensure_ascii=False)


def agent_arg(argv: list[str]) -> str:
    """``--agent NAME`` (or ``--agent=NAME``) from the command line; claude when absent or unknown."""
    for i, arg in enumerate(argv):
        value = argv[i + 1] if arg == "--agent" and i + 1 < len(argv) else (
            arg.split("=", 1)[1] if arg.startswith("--agent=") else None)
        if value in AGENT_EVENTS:
            return value
    return "claude"


def main() -> None:
    try:
        line = answer(sys.stdin.buffer.read(), os.environ.get("CLAUDE_CODE_ENTRYPOINT", ""),
                      agent_arg(sys.argv[1:]))
        if line:
            sys.stdout.buffer.write(line.encode("utf-8") + b"\n")
            sys.stdout.buffer.flush()
    except BaseException:  # noqa: BLE001 - fail open: nothing printed, exit 0
        pass
    # os._exit: no interpreter teardown (a few ms per message), and no chance of a
    # non-zero status from a late flush error.
    os._exit(0)


if __name__ == "__main__":
    main()
