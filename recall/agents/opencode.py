"""OpenCode: a plugin file whose ``chat.message`` hook adds recall's block as a hidden text part.

OpenCode (``opencode-ai`` on npm) loads every ``.js``/``.ts`` file in ``.opencode/plugins/``
(project) and ``~/.config/opencode/plugins/`` (user; ``$XDG_CONFIG_HOME`` moves it) at start.
A plugin's ``chat.message(input, output)`` runs on each user message before it is stored and
sent; ``output.parts`` is that message's parts, and a text part pushed there with
``synthetic: true`` goes to the model with the message but is hidden in OpenCode's views.
A pushed part needs its own ``id`` (OpenCode rejects the message otherwise: "SchemaError:
Missing key part.id", found with 1.18.33); part ids sort by time, so ours is the last part's
id plus one in its time field.

The plugin runs the same hook process as Codex and Gemini (``<python> -E -P -m recall.agents.hook
--agent opencode``: the daemon's budget, the start of a missing daemon, fail-open), so recall's
logic stays in Python; it adds nothing when the hook prints nothing, the hook fails, or it runs
past ``HOOK_TIMEOUT_S``, and it never throws into OpenCode. Skipped, as nobody typed them:
messages whose text parts are all synthetic (OpenCode's own, e.g. after a compaction) and
messages in sessions an agent started (subtasks: a ``session.created`` event with a
``parentID``). Each hook run's time goes to OpenCode's log (``service=recall``, debug level)
through the SDK client OpenCode hands the plugin.

As OpenCode loads the plugin (its start, before any session's first message) the plugin runs
the hook once with a ``SessionStart`` event, not awaited: a missing daemon starts then and has
loaded its model by the first message (issue #22's cold start; ``recall.agents.early``).

``uninstall --agent opencode`` deletes the file (recognised by ``MARK``) and the plugins folder
when install created it and it is empty again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from recall.agents.install import HOOK_MODULE, HOOK_TIMEOUT_S, InstallError, program
from recall.agents.shared import (
    command_only,
    drop_created_dirs,
    note_created_dirs,
    root_of,
    write_text,
)
from recall.agents.wire import additional_context, prompt_event_reader
from recall.privacy.paths import expand_user, home_folder, read_text

# --- on the wire --------------------------------------------------------------------------------
NAME = "opencode"
EVENT = "chat.message"
# recall's own plugin (PLUGIN below) reads additionalContext and adds it to the message as a hidden
# text part; OpenCode sets no cap, Claude Code's is kept
MAX_CHARS = 10_000
FORMS = ("command",)
read_event = prompt_event_reader(EVENT)  # the plugin sends {hook_event_name, session_id, cwd, prompt}
output, envelope = additional_context(EVENT, MAX_CHARS)  # the line the hook prints; its bytes


PLUGIN_NAME = "recall.js"
MARK = "recall-opencode-plugin"

PLUGIN = """\
// recall: past notes related to each message you send, as hidden context (or nothing).
// Written by `recall install --agent opencode`; `recall uninstall --agent opencode` removes it.
// __MARK__ 1
import { spawn } from "node:child_process";

const COMMAND = __COMMAND__;
const TIMEOUT_MS = __TIMEOUT_MS__;

// The hook process: the event JSON on stdin, one JSON line (or nothing) on stdout.
function ask(event) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn(COMMAND[0], COMMAND.slice(1), { stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      resolve("");
      return;
    }
    const timer = setTimeout(() => { child.kill("SIGKILL"); resolve(""); }, TIMEOUT_MS);
    child.on("error", () => { clearTimeout(timer); resolve(""); });
    child.stdout.on("data", (data) => { out += data; });
    child.on("close", () => { clearTimeout(timer); resolve(out); });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(event));
  });
}

// Part ids sort by time ("prt_" + 12 hex digits + 14 characters): ours comes right after `id`.
function nextPartId(id) {
  const m = /^prt_([0-9a-f]{12})(.+)$/.exec(typeof id === "string" ? id : "");
  if (!m) return undefined;
  return "prt_" + (BigInt("0x" + m[1]) + 1n).toString(16).padStart(12, "0") + m[2];
}

export const RecallPlugin = async ({ client, directory }) => {
  const subtasks = new Set(); // sessions an agent started: nobody typed their messages
  // OpenCode's start: a missing daemon starts now, so that it has loaded by the first message
  // (the hook prints nothing for it); not awaited, so it never holds OpenCode's start.
  ask({ hook_event_name: "SessionStart", session_id: "", cwd: directory });
  return {
    event: async ({ event }) => {
      const info = event?.type === "session.created" ? event.properties?.info : undefined;
      if (info?.parentID) subtasks.add(info.id);
    },
    "chat.message": async (input, output) => {
      try {
        const parts = output?.parts;
        if (!Array.isArray(parts) || subtasks.has(input?.sessionID)) return;
        const typed = parts.filter((p) => p?.type === "text" && !p.synthetic && !p.ignored
                                         && typeof p.text === "string");
        if (typed.length === 0) return;
        const started = performance.now();
        const line = await ask({ hook_event_name: "chat.message", session_id: input.sessionID, cwd: directory,
                                 prompt: typed.map((p) => p.text).join("\\n") });
        const ms = Math.round((performance.now() - started) * 10) / 10;
        Promise.resolve(client?.app?.log?.({ body: { service: __SERVICE__, level: "debug",
          message: "chat.message hook", extra: { ms, context: line.trim() !== "", hook: __SERVICE__ } } }))
          .catch(() => {});
        if (!line.trim()) return;
        const text = JSON.parse(line)?.hookSpecificOutput?.additionalContext;
        const id = nextPartId(parts[parts.length - 1]?.id);
        if (typeof text !== "string" || !text || !id) return;
        parts.push({ id, sessionID: output.message.sessionID, messageID: output.message.id, type: "text",
                     text, synthetic: true });
      } catch {
        // never break a message
      }
    },
  };
};
"""


def plugin_text(command: list[str] | None = None, service: str = "recall") -> str:
    """The plugin file; ``command`` replaces the hook's and ``service`` names its lines in
    OpenCode's log (the benchmark's do-nothing floor, loaded beside recall's)."""
    argv = command or program(HOOK_MODULE, "opencode")
    return (PLUGIN.replace("__MARK__", MARK).replace("__COMMAND__", json.dumps(argv))
            .replace("__SERVICE__", json.dumps(service))
            .replace("__TIMEOUT_MS__", str(HOOK_TIMEOUT_S * 1000)))


def opencode_plugins(project: bool, cwd: Path | None = None) -> Path:
    if project:
        return root_of(cwd) / ".opencode" / "plugins"
    env = os.environ.get("XDG_CONFIG_HOME")
    base = expand_user(env, "XDG_CONFIG_HOME") if env else home_folder() / ".config"
    return base / "opencode" / "plugins"


def _is_ours(path: Path) -> bool:
    try:
        return MARK in read_text(path)[:400]
    except (OSError, ValueError):
        return False


def install(project: bool, cwd: Path | None = None, form: str | None = None,
            track_reads: bool = False) -> list[str]:
    command_only(NAME, form, track_reads)
    folder = opencode_plugins(project, cwd)
    path = folder / PLUGIN_NAME
    from recall.agents.writes import current_text

    if (now := current_text(path)) is not None and not _is_ours(path):
        raise InstallError(f"{path} exists and is not recall's plugin; rename it first")
    text = plugin_text()
    if now == text:
        return [f"unchanged: the recall plugin (chat.message; the daemon's early start as OpenCode starts) in {path}"]
    result = "updated" if now is not None else "added"
    note_created_dirs(folder)  # made as the file is written (recall.agents.writes)
    write_text(path, text)
    return [f"{result}: the recall plugin (chat.message; the daemon's early start as OpenCode starts) in {path}",
            "OpenCode loads it when it starts: restart a running OpenCode"]


def uninstall(project: bool, cwd: Path | None = None) -> list[str]:
    folder = opencode_plugins(project, cwd)
    path = folder / PLUGIN_NAME
    if not path.exists() or not _is_ours(path):
        return [f"no recall plugin in {folder}"]
    from recall.agents.writes import stage

    stage(path, None)
    drop_created_dirs(folder)
    return [f"removed the recall plugin {path}"]
