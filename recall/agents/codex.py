"""Codex CLI: a UserPromptSubmit hook in hooks.json, and ``[features] hooks = true``.

Form ``command`` (the default): ``<python> -E -P -m recall.agents.hook --agent codex``, a process per
message. Form ``mcp_tool`` (``--form mcp_tool``): ``{"type": "mcp_tool", "server": "recall",
"tool": "recall_context", "input": {"prompt": "${prompt}"}}`` and recall's MCP server as
``[mcp_servers.recall]`` in config.toml; Codex 0.171.0 calls it on UserPromptSubmit (under
``codex exec`` and its app server; tests/e2e/test_codex.py), no process per message. The
server runs in Codex's working folder (the project), so no ``cwd`` is passed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recall.agents.install import (
    CONTEXT_TOOL,
    HOOK_TIMEOUT_S,
    InstallError,
    add_hook,
    editing,
    load_settings,
    other_hooks,
    refuse_a_link_to_nothing,
    remove_hook,
    runs_module,
    unreadable,
)
from recall.agents.records import noted, state_note, we_added
from recall.agents.settings_file import write_settings
from recall.agents.shared import (
    FORMS as ALL_FORMS,
)
from recall.agents.shared import (
    MCP_MODULE,
    SERVER_NAME,
    beside,
    codex_dir,
    codex_entry,
    command_only,
    drop_if_created_and_empty,
    early_start,
    early_start_removed,
    forget_beside,
    mcp_server_args,
    note_created,
    python,
    write_text,
)
from recall.agents.wire import additional_context, prompt_event_reader

# --- on the wire --------------------------------------------------------------------------------
NAME = "codex"
EVENT = "UserPromptSubmit"
# the same JSON shape as Claude Code's (codex-rs/hooks/schema/generated/user-prompt-submit.command.output.schema.json);
# context capped near 2,500 tokens, so at most 2,500 characters (one token per character in the worst case, CJK)
MAX_CHARS = 2_500
FORMS = ALL_FORMS
read_event = prompt_event_reader(EVENT)  # {prompt, cwd, session_id, ...}, as Claude Code's
output, envelope = additional_context(EVENT, MAX_CHARS)  # the line the hook prints; its bytes


# --- Codex CLI ---------------------------------------------------------------------------------


# recall's own variables, passed through to the server when set where Codex runs (Codex starts
# an MCP server with HOME, PATH and a few more only); PYTHONPATH for a checkout run without install.
SERVER_ENV_VARS = ("RECALL_HOME", "RECALL_CONFIG", "RECALL_MODEL", "RECALL_PG_URL", "RECALL_LOG_LEVEL",
                   "RECALL_THREADS", "PYTHONPATH")


def codex_mcp_tool_entry() -> dict:
    return {"type": "mcp_tool", "server": SERVER_NAME, "tool": CONTEXT_TOOL, "input": {"prompt": "${prompt}"},
            "timeout": HOOK_TIMEOUT_S}


def install(project: bool, cwd: Path | None = None, form: str | None = None,
            track_reads: bool = False) -> list[str]:
    command_only(NAME, None, track_reads)
    folder = codex_dir(project, cwd)
    path = folder / "hooks.json"
    config = folder / "config.toml"
    refuse_a_link_to_nothing(config)  # written through its link (shared.write_text): refused first
    _read_toml(config)  # and read: a config.toml Codex cannot read is refused before hooks.json is written
    done = []
    settings = load_settings(path)  # read and edited before config.toml is written: refused, nothing is
    theirs = beside("features.hooks", settings)
    with editing(path):
        result = add_hook(settings, codex_mcp_tool_entry() if form == "mcp_tool" else codex_entry())
        early = early_start(settings, path, None if form == "mcp_tool" else codex_entry())
    had = _codex_server_args(config) is not None  # install's line for it: added, or updated
    if form == "mcp_tool" and _codex_server(config, enable=True):
        done.append(f"{'updated' if had else 'added'} recall's MCP server [mcp_servers.{SERVER_NAME}] in {config}")
    note_created(path)
    write_settings(path, settings)
    kind = "mcp_tool recall_context" if form == "mcp_tool" else "--agent codex"
    done.append(f"{result}: the recall hook (UserPromptSubmit, {kind}) in {path}")
    if early:
        done.append(early)
    if _codex_feature(config, enable=True, theirs=theirs):
        done.append(f"set [features] hooks = true in {config}")
    elif _hooks_off(config):
        done.append(f"warning: [features] hooks = false in {config}: Codex runs no hook, recall's included; "
                    "set it to true there for recall to run")
    done.append("Codex runs a new hook once you trust it: open `codex`, review it under /hooks "
                "(or run `codex exec --dangerously-bypass-hook-trust` in scripts)")
    return done


def _read_toml(config: Path):
    import tomlkit

    from recall.agents.writes import current_text

    text = ""
    try:
        text = current_text(config) or ""
        return tomlkit.parse(text)
    except (OSError, ValueError) as exc:
        raise unreadable(config, text, exc, "TOML") from exc


ENDING = "ended in: "  # the note of how config.toml ended before install (its white space after the last line)


def _write_toml(config: Path, doc, removed: bool) -> None:
    """``doc`` written to ``config``; on removal, the file ends as it did before install (tomlkit
    keeps the blank line it put before recall's table: a final newline was added where there was
    none, a trailing blank line lost; an outside tester's D11)."""
    import json

    import tomlkit

    from recall.agents.writes import current_text

    text = tomlkit.dumps(doc)
    if not removed and (before := current_text(config) or "").strip() and not noted(config, ENDING):
        state_note(config, ENDING + json.dumps(before[len(before.rstrip()) :]), True)
    elif removed and text.strip():
        ending = noted(config, ENDING)
        text = text.rstrip() + json.loads(ending[0][len(ENDING) :]) if ending else text.rstrip("\n") + "\n"
    elif removed:
        text = ""
    write_text(config, text)


def _codex_server(config: Path, enable: bool) -> bool:
    """Add ``[mcp_servers.recall]`` (enable) unless one is there (one an older install wrote is
    updated: ``ours_in_toml``), or remove the one install added. Returns whether the file changed."""
    import tomlkit

    key = f"mcp_servers.{SERVER_NAME}"
    if not enable and not we_added(config, key):
        return False
    doc = _read_toml(config)
    servers = _table_or_refuse(config, doc, "mcp_servers")
    if enable:
        current = servers.get(SERVER_NAME) if servers is not None else None
        if current is not None and (not ours_in_toml(config, current)  # the user's own entry stays as it is
                                    or (list(current.get("args") or []) == mcp_server_args()
                                        and current.get("command") == python())):  # another venv's: updated (D5)
            return False
        note_created(config)
        if servers is None:
            doc["mcp_servers"] = tomlkit.table(is_super_table=True)
            state_note(config, "mcp_servers", True)
        # inside `mcp_servers = {...}` (an inline table, valid for Codex) an inline table too
        inline = isinstance(doc["mcp_servers"], tomlkit.items.InlineTable)
        table = tomlkit.inline_table() if inline else tomlkit.table()
        table["command"] = python()
        table["args"] = mcp_server_args()
        table["env_vars"] = list(SERVER_ENV_VARS)  # Codex passes an MCP server only a few variables
        doc["mcp_servers"][SERVER_NAME] = table
        state_note(config, key, True)
    else:
        current = servers.get(SERVER_NAME) if servers is not None else None
        mine = current is not None and ours_in_toml(config, current)  # one of yours (a stale note) stays
        if mine:
            del servers[SERVER_NAME]
            if we_added(config, "mcp_servers") and not servers:
                del doc["mcp_servers"]
        state_note(config, key, False)
        state_note(config, "mcp_servers", False)
        if not mine:
            return False
    _write_toml(config, doc, removed=not enable)
    return True


def _codex_server_args(config: Path) -> list | None:
    """The args of ``[mcp_servers.recall]`` in ``config``, None where there is none."""
    servers = _table_or_refuse(config, _read_toml(config), "mcp_servers")
    table: Any = servers.get(SERVER_NAME) if servers is not None else None
    return list(table.get("args") or []) if hasattr(table, "get") else None


def ours_in_toml(config: Path, table: Any) -> bool:
    """``[mcp_servers.recall]`` as a ``recall install`` wrote and recorded it (this release's or an
    older one's, ``runs_module``): install updates it (an older one's was kept as the user's)."""
    return (hasattr(table, "get") and set(table) <= {"command", "args", "env_vars"}
            and isinstance(table.get("command"), str) and runs_module(list(table.get("args") or []), MCP_MODULE)
            and we_added(config, f"mcp_servers.{SERVER_NAME}"))


def _hooks_off(config: Path) -> bool:
    """Whether the user switched Codex's hooks off (``[features] hooks`` or ``codex_hooks``)."""
    try:
        features = _read_toml(config).get("features")
    except Exception:  # noqa: BLE001 - said by the install that read it first
        return False
    return features is not None and any(features.get(k) is False for k in ("hooks", "codex_hooks"))


def _table_or_refuse(config: Path, doc: Any, key: str) -> Any:
    """``doc[key]``: a table (``[key]``, or inline ``key = {...}``) or None; any other value
    (``features = []``, valid TOML) is refused in one line, before anything is written."""
    from tomlkit.items import InlineTable, Table

    value = doc.get(key)
    if value is not None and not isinstance(value, (Table, InlineTable)):
        raise InstallError(f"{config}: its '{key}' is not a table ({type(value.unwrap()).__name__}); Codex "
                           f"expects one: make it [{key}] there (or remove it), then run the command again")
    return value


def _codex_feature(config: Path, enable: bool, theirs: str = "") -> bool:
    """Add ``[features] hooks = true`` when no value is set (enable), or remove it when we added
    it (not enable). Returns whether the file changed. Edited with tomlkit: comments stay."""
    import tomlkit

    if not enable and not we_added(config, "features.hooks"):
        return False
    doc = _read_toml(config)
    features = _table_or_refuse(config, doc, "features")
    if enable:
        if features is not None and ("hooks" in features or "codex_hooks" in features):
            return False  # the user's choice, either way
        if features is None:
            doc["features"] = tomlkit.table()
            state_note(config, "features", True)
        note_created(config)
        doc["features"]["hooks"] = True
        state_note(config, "features.hooks", True)
        if theirs:  # hooks of yours ran without it: uninstall takes it out while they are the same
            state_note(config, theirs, True)
    else:
        made = we_added(config, "features")
        state_note(config, "features.hooks", False)
        state_note(config, "features", False)
        if features is None or features.get("hooks") is not True:  # set to false since: yours
            return False
        del features["hooks"]
        if made and not features:
            del doc["features"]
    _write_toml(config, doc, removed=not enable)
    return True


def uninstall(project: bool, cwd: Path | None = None) -> list[str]:
    from recall.agents.writes import exists

    folder = codex_dir(project, cwd)
    path, config = folder / "hooks.json", folder / "config.toml"
    done = []
    removed, early, settings = 0, None, {}
    if exists(path):
        settings = load_settings(path)
        with editing(path):
            removed = remove_hook(settings)
            early = early_start_removed(settings, path)
        if removed or early:
            write_settings(path, settings)
            drop_if_created_and_empty(path)
    done.append(f"removed the recall hook from {path}" if removed else f"no recall hook in {path}")
    if early:
        done.append(early)
    server = _codex_server(config, enable=False)
    if server:
        done.append(f"removed recall's MCP server (added by recall install) from {config}")
    switch = _switch_off(config, path, settings, ours=bool(removed or early))
    done.extend(switch)
    if not we_added(config, "features.hooks") and not we_added(config, f"mcp_servers.{SERVER_NAME}"):
        for key in noted(config, ENDING):  # recall's entries are out: how it ended is noted no more
            state_note(config, key, False)
    if (server or any(line.startswith("removed") for line in switch)) and exists(config):
        drop_if_created_and_empty(config)  # once both are out (stop 57), and only a file this run changed
    elif not removed and not early and not server:
        state_note(config, "file", False)  # recall's entries are gone: a note of the file is of its earlier life
    return done


def _switch_off(config: Path, path: Path, settings: dict, ours: bool) -> list[str]:
    """``[features] hooks = true`` taken out where recall set it: only while recall's hook is in
    ``path`` (``ours``; without it the note is of an earlier life of these files, an install under
    another RECALL_HOME, and the flag there now is the user's: an outside tester's D2), and kept
    for hooks of the user's added since install (their own switch now; the ones there before
    ran without it: ``records.beside``)."""
    flag = "features.hooks"
    if not we_added(config, flag):
        return []
    if ours and other_hooks(settings) and not we_added(config, beside(flag, settings)):
        kept = f"kept [features] hooks = true in {config}: {path} holds hooks added since install, which may need it"
    elif ours:
        forget_beside(config, flag)
        if _codex_feature(config, enable=False):
            return [f"removed [features] hooks = true (added by recall install) from {config}"]
        return []
    else:
        kept = ""
    for key in (flag, "features"):
        state_note(config, key, False)
    forget_beside(config, flag)
    return [kept] if kept else []
