"""Register the hook in Claude Code's settings (``recall install``) and take it out again
(``recall uninstall``), then check that a warm question fits in the hook's budget.

The entry is a shell line, which Claude Code runs through its shell, the python's path quoted
for sh and bash (``shlex.join``), and ``|| exit 1`` after it (``GUARD``): a python that cannot
start recall (an older one rebuilt at the same path, which exits 2 on ``-P``) is a hook error,
never exit 2, which blocks the prompt. ``--home PATH`` pins a RECALL_HOME that is not the default:

    {"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "timeout": 5,
         "command": "/abs/.venv/bin/python -E -P -m recall.agents.hook || exit 1"}]}]}}

``-P`` keeps the project folder (Claude Code's cwd) off ``sys.path``, so a project
that has its own ``recall`` folder cannot shadow this package. ``timeout`` is Claude
Code's limit for the process; the hook itself gives up after ``daemon.hook_budget_ms``.

Our entry is recognised by its arguments (``-m recall.agents.hook`` at the end), so installing
twice leaves one entry (updated to the current interpreter), and uninstalling removes
exactly that entry, plus the group, event list or ``hooks`` object only if removing it
left them empty. Everything else in the file is kept, in order; the file is written
atomically (temporary file + rename) with 2-space indentation.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from recall.agents.settings_file import as_written, write_settings
from recall.agents.writes import InstallError  # noqa: F401 - where every agent's module takes it from
from recall.privacy.paths import claude_config_dir, git_toplevel, project_root

EVENT = "UserPromptSubmit"
HOOK_MODULE = "recall.agents.hook"
# Every interpreter an agent starts for recall: -P keeps the agent's folder off the module path,
# and -E ignores PYTHON* variables, whose empty or relative PYTHONPATH entry (":/opt/lib", ".")
# put it back and ran a repository's sitecustomize.py in the hook (stop 46, an outside tester).
SAFE_FLAGS = ("-E", "-P")
# What releases before the packages by layer ran (``-m recall.hook``, ``-m recall.track``): still
# our entries, so ``recall install`` replaces them and ``recall uninstall`` takes them out.
FORMER_MODULES = {"recall.agents.hook": "recall.hook", "recall.agents.track": "recall.track"}
HOOK_TIMEOUT_S = 5  # every agent recall registers with waits this long for the hook (its `timeout`)
# The longest hook budget an agent lets finish: its answer written and read before the agent kills it.
BUDGET_MAX_MS = HOOK_TIMEOUT_S * 1000 - 500


# Every command hook install writes ends in this: any failure before recall's own code runs (an
# interpreter gone, or rebuilt too old to know -P: "unknown option", exit 2; a module missing) exits
# 1, which every agent shows as a hook error and lets the message through, never 2, which Claude Code,
# Codex and Gemini CLI read as "block this prompt" and erase it (an outside tester's D6). The hook
# itself always exits 0.
GUARD = ("||", "exit", "1")


def pinned_home() -> list[str]:
    """``--home PATH`` when this install runs under a RECALL_HOME that is not the default: an agent
    started without it (from an IDE, a desktop launcher) would read another, empty home and hand
    nothing over, in silence (an outside tester's D7; XDG_DATA_HOME likewise). Empty for the default home."""
    from recall.privacy.paths import default_home, recall_home

    home = recall_home()
    return ["--home", str(home)] if home != default_home(plain=True) else []


def guarded(argv: list[str]) -> str:
    """The shell command line of a hook: ``argv`` quoted for sh and bash, then ``GUARD``."""
    import shlex

    return f"{shlex.join(argv)} {' '.join(GUARD)}"


def is_guarded(entry: dict) -> bool:
    """Whether a command entry is a shell line that ends in ``GUARD`` (cannot exit 2)."""
    command = entry.get("command")
    return not isinstance(entry.get("args"), list) and isinstance(command, str) \
        and command.rstrip().endswith(" " + " ".join(GUARD))


def program(module: str, *agent: str) -> list[str]:
    """The argv of one of recall's programs as install registers it: this python, ``SAFE_FLAGS``,
    the module, ``--agent X`` where given, and the pinned home."""
    tail = ["--agent", agent[0]] if agent else []
    return [os.path.abspath(sys.executable), *SAFE_FLAGS, "-m", module, *tail, *pinned_home()]


def hook_entry() -> dict[str, Any]:
    """Claude Code's command hook: a shell line (Claude Code runs it through its shell), guarded."""
    return {"type": "command", "command": guarded(program(HOOK_MODULE)), "timeout": HOOK_TIMEOUT_S}


def budget_past_wait(budget_ms: float) -> str | None:
    """One line when ``[daemon] hook_budget_ms`` is longer than the agents wait for the hook: a
    slow answer is then cut by the agent, with its own error on the message, not by the hook
    in silence. The benchmarks set more on purpose (they run the hook themselves)."""
    if budget_ms <= BUDGET_MAX_MS:
        return None
    from recall.privacy.paths import user_config_path

    return (f"note: [daemon] hook_budget_ms = {budget_ms:g} is past the {HOOK_TIMEOUT_S} s an agent waits for "
            f"recall's hook, which it then kills with an error on the message; set it to at most "
            f"{BUDGET_MAX_MS} in {user_config_path()}")


CONTEXT_TOOL = "recall_context"  # the MCP tool of the no-spawn hook (recall.mcp.tools)
SERVER_NAME = "recall"  # the MCP server's name in the agents' settings


def is_ours(hook: object, module: str = HOOK_MODULE) -> bool:
    """Our entry: a command hook whose interpreter runs ``-m <module>`` (exec or shell form, with
    or without ``--agent X`` after it), or, for the prompt hook, an ``mcp_tool`` hook calling
    recall_context on recall's server. An entry that sets its own environment first (``env
    RECALL_HOME=... python -m ...``: another setup the user wrote) is not: install left it be."""
    if not isinstance(hook, dict):
        return False
    if hook.get("type") == "mcp_tool":
        return module == HOOK_MODULE and hook.get("tool") == CONTEXT_TOOL and hook.get("server") == SERVER_NAME
    if hook.get("type") != "command":
        return False
    words = command_words(hook)
    if isinstance(hook.get("args"), list):  # exec form: the command runs the args
        words = [str(hook.get("command", "")), *words]
    for i in range(1, len(words) - 1):
        if words[i] == "-m" and words[i + 1] in (module, FORMER_MODULES.get(module)):
            rest = words[i + 2:]
            # an interpreter and its flags only: `env X=1 python`, `cd d && python`, `. f && python`
            # set up something of the user's own (install replaced them, uninstall removed them)
            interpreter = Path(words[0]).name != "env" and all(w.startswith("-") and "=" not in w
                                                                for w in words[1:i])
            return interpreter and _options_only(rest)
    return False


def _options_only(rest: list[str]) -> bool:
    """``rest`` is what install puts after the module: ``--agent X`` and ``--home PATH``, each at most once."""
    pairs = [rest[i:i + 2] for i in range(0, len(rest), 2)]
    names = [p[0] for p in pairs]
    return len(rest) % 2 == 0 and set(names) <= {"--agent", "--home"} and len(set(names)) == len(names)


def runs_module(args: object, module: str) -> bool:
    """Whether ``args`` (an MCP server's) are ``-m <module>`` with only interpreter flags before it:
    what every ``recall install`` wrote (``-P`` before ``-E`` came, ``-E -P`` since), so an entry
    an older release wrote is recall's still, updated by install and removed by uninstall; it was
    "kept (yours, as it is)" for good (an outside tester's upgrade)."""
    if not isinstance(args, list) or "-m" not in args or not all(isinstance(a, str) for a in args):
        return False
    at = args.index("-m")
    return (args[at + 1:at + 2] == [module] and _options_only(args[at + 2:]) and "--agent" not in args[at + 2:]
            and all(a.startswith("-") and "=" not in a for a in args[:at]))


def command_words(entry: dict) -> list[str]:
    """The words a command entry runs: its ``args`` (exec form), or its ``command`` split as a
    shell would (shell form), less a closing ``GUARD``; empty when it has neither."""
    args, command = entry.get("args"), entry.get("command")
    if isinstance(args, list):
        return [str(a) for a in args]
    if not isinstance(command, str):
        return []
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return words[:-len(GUARD)] if tuple(words[-len(GUARD):]) == GUARD else words


def settings_path(project: bool, cwd: Path | str | None = None) -> Path:
    """``<git root>/.claude/settings.json`` or ``$CLAUDE_CONFIG_DIR/settings.json``."""
    if project:
        here = Path(cwd or Path.cwd())
        root = git_toplevel(here) or project_root(here)
        return root / ".claude" / "settings.json"
    return claude_config_dir() / "settings.json"


def refuse_a_link_to_nothing(path: Path) -> None:
    """An agent's file that is a link to nothing is refused before anything is written: writing
    through it would make folders where the link points (a drive not mounted)."""
    if path.is_symlink() and not path.exists():
        try:
            path.stat()
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InstallError(f"{path} is a link in a loop of links (to {os.readlink(path)}); remove the "
                                   "link or point it at a file, then run the command again") from None
        raise InstallError(f"{path} is a link to {os.readlink(path)}, which does not exist; create that "
                           "file or remove the link, then run the command again")


def unreadable(path: Path, text: str, exc: Exception, form: str) -> InstallError:
    """One line for an agent's settings file that cannot be read as ``form`` (JSON, TOML)."""
    if text.startswith("\ufeff"):  # Notepad's UTF-8: the parsers' words for it are their own
        return InstallError(f"{path}: it starts with a byte-order mark (U+FEFF), which {form} files do not "
                            "take: fix it (save it as UTF-8 without one), then run the command again")
    return InstallError(f"{path}: cannot read it as {form} ({exc}); fix or move it first")


def load_settings(path: Path) -> dict[str, Any]:
    """``path``'s settings as the edit under way sees them (``recall.agents.writes``)."""
    from recall.agents.writes import current_text

    refuse_a_link_to_nothing(path)
    text = ""
    try:
        if (read := current_text(path)) is None:
            return {}
        text = read
        data = json.loads(text, parse_float=as_written) if text.strip() else {}
    except (OSError, ValueError, RecursionError) as exc:
        raise unreadable(path, text, exc, "JSON") from exc
    if not isinstance(data, dict):
        raise InstallError(f"{path}: not a JSON object; fix or move it first")
    return data


@contextmanager
def editing(path: Path) -> Iterator[None]:
    """A refusal about the settings file's contents names the file."""
    try:
        yield
    except InstallError as exc:
        if str(path) in str(exc):
            raise
        raise InstallError(f"{path}: {exc}") from None


def _event_groups(settings: dict[str, Any], create: bool, event: str = EVENT) -> list | None:
    hooks = settings.get("hooks")
    if hooks is None and create:
        hooks = settings["hooks"] = {}
    if not isinstance(hooks, dict):
        if hooks is None:
            return None
        raise InstallError("its 'hooks' is not an object; fix it there or move the file aside")
    groups = hooks.get(event)
    if groups is None and create:
        groups = hooks[event] = []
    if groups is not None and not isinstance(groups, list):
        raise InstallError(f"its 'hooks.{event}' is not a list; fix it there or move the file aside")
    return groups


def add_hook(settings: dict[str, Any], entry: dict[str, Any] | None = None, event: str = EVENT,
             module: str = HOOK_MODULE, matcher: str | None = None) -> str:
    """Add (or refresh) our entry in place. Returns "added", "updated" or "unchanged".

    Any entry of ours for ``module`` (command or mcp_tool form) is replaced by ``entry``, so
    switching forms leaves one entry. ``matcher`` goes on a new group (e.g. "Read").
    """
    groups = _event_groups(settings, create=True, event=event)
    assert groups is not None
    entry = entry or hook_entry()
    found = False
    result = "added"
    for group in list(groups):
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            continue
        kept = []
        for hook in group["hooks"]:
            if not is_ours(hook, module):
                kept.append(hook)
            elif not found:  # the first of ours is refreshed in place; duplicates go
                found = True
                result = "unchanged" if hook == entry else "updated"
                kept.append(entry)
            else:
                result = "updated"
        if kept or not group["hooks"]:
            group["hooks"] = kept
        else:
            groups.remove(group)  # held only a duplicate of ours
    if not found:
        groups.append({"matcher": matcher, "hooks": [entry]} if matcher else {"hooks": [entry]})
    return result


def remove_hook(settings: dict[str, Any], event: str = EVENT, module: str = HOOK_MODULE) -> int:
    """Remove our entries in place; drop containers only our removal emptied. Returns count."""
    groups = _event_groups(settings, create=False, event=event)
    if groups is None:
        return 0
    removed = 0
    for group in list(groups):
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            continue
        kept = [h for h in group["hooks"] if not is_ours(h, module)]
        if len(kept) == len(group["hooks"]):
            continue
        removed += len(group["hooks"]) - len(kept)
        if kept:
            group["hooks"] = kept
        else:
            groups.remove(group)
    if removed and not groups:
        del settings["hooks"][event]
        if not settings["hooks"]:
            del settings["hooks"]
    return removed


def other_hooks(settings: dict[str, Any]) -> bool:
    """Whether ``settings`` hold any hook besides recall's (after ``remove_hook``): a switch that
    turns an agent's hooks on serves them too, so it stays."""
    hooks = settings.get("hooks")
    return isinstance(hooks, dict) and any(
        isinstance(group, dict) and group.get("hooks")
        for groups in hooks.values() if isinstance(groups, list) for group in groups)


def install(path: Path, entry: dict[str, Any] | None = None) -> str:
    from recall.agents.writes import run

    def edit() -> str:
        settings = load_settings(path)
        result = add_hook(settings, entry)
        if result != "unchanged":
            write_settings(path, settings)
        return result

    return run(edit)


def uninstall(path: Path) -> int:
    from recall.agents.writes import exists, run

    def edit() -> int:
        if not exists(path):
            return 0
        settings = load_settings(path)
        removed = remove_hook(settings)
        if removed:
            write_settings(path, settings)
        return removed

    return run(edit)
