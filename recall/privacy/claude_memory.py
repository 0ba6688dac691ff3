"""A project's Claude Code memory folder: ``memory_dir``, Claude Code's default or the
``autoMemoryDirectory`` its settings name (``auto_memory_override``), the project's own settings
read only where Claude Code trusts the folder (``trusts``: its global config, ``~/.claude.json``
or ``$CLAUDE_CONFIG_DIR/.claude.json``, records ``hasTrustDialogAccepted`` for the folder or a
folder above it, as its trust dialog writes it).

Claude Code reads a project's own settings (``.claude/settings.json``, committed by anyone who
can push, and ``settings.local.json`` beside it) for ``autoMemoryDirectory`` only in a folder
the user trusted. recall read them everywhere: a cloned repository naming
``~/.claude/projects`` there made recall index every project's memory as its own, handed over
in that repository unasked (stop 49, an outside tester's AA01).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from recall.privacy.paths import (
    EVERY_PROJECT,
    claude_config_dir,
    encode_project_path,
    expand_user,
    home_folder,
    project_root,
    read_text,
    utf8_name,
)
from recall.privacy.regular import read_regular

MAX_BYTES = 64 << 20  # a global config past this is not read (it holds every project's state)


def global_config() -> Path:
    """Claude Code's global config file: beside its settings when ``CLAUDE_CONFIG_DIR`` moves
    them, else in the home folder."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return claude_config_dir() / ".claude.json" if env else home_folder() / ".claude.json"


def trusts(root: Path) -> bool:
    """Whether Claude Code's trust dialog was accepted for ``root`` or a folder above it."""
    try:
        data, size = read_regular(global_config(), MAX_BYTES)
        projects = json.loads(data).get("projects") if size <= MAX_BYTES else None
    except (OSError, ValueError, AttributeError, RecursionError):
        return False
    if not isinstance(projects, dict):
        return False
    for folder in (root, *root.parents):
        entry = projects.get(str(folder))
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return True
    return False


def auto_memory_override(root: Path) -> tuple[Path | None, str | None]:
    """Claude Code's ``autoMemoryDirectory`` for the project at ``root`` (its local settings,
    its settings, the user's), and one line when a value set there is not a folder recall can
    use (not a string, a ``~user`` this machine does not know, a name that is not UTF-8):
    that value is passed over. A project's settings file is committed by anyone on the team:
    Claude Code, and so recall, reads it only in a folder the user trusted (``trusts``)."""
    in_project = (root / ".claude" / "settings.local.json", root / ".claude" / "settings.json")
    untrusted: str | None = None  # said, and the user's own settings read next
    for settings in (*in_project, claude_config_dir() / "settings.json"):
        try:
            value = json.loads(read_text(settings)).get("autoMemoryDirectory")
        except (OSError, ValueError, AttributeError, RecursionError):
            continue
        if not value:
            continue
        if settings in in_project and not trusts(root):
            untrusted = untrusted or (
                f"{settings}: autoMemoryDirectory is passed over: Claude Code reads it only in a folder you "
                "trusted (its trust dialog), and so does recall (set it in ~/.claude/settings.json instead)")
            continue
        why = "is not a folder's path" if not isinstance(value, str) else (
            "is not valid UTF-8" if not utf8_name(value) else None)
        if why is None:
            try:
                return expand_user(value, "autoMemoryDirectory"), untrusted
            except Exception:  # noqa: BLE001 - HomeUnusable (recall.errors is not imported here): a ~user unknown
                why = "names the home folder of a user this machine does not know"
        return None, (f"{settings}: autoMemoryDirectory {json.dumps(value)[:200]} {why}; the project's "
                      "memory is read from Claude Code's default folder (write the folder's full path there)")
    return None, untrusted


def memory_dir(cwd: Path | str) -> Path:
    """The Claude Code memory folder of the project containing ``cwd``."""
    return memory_source(cwd)[0]


def memory_source(cwd: Path | str) -> tuple[Path, str]:
    """The memory folder of the project containing ``cwd`` and whose it is: the project's key,
    or ``EVERY_PROJECT`` for a folder the user's own settings give every project (Claude Code
    writes every project's memory there; recall had it belong to the project indexed last, its
    notes gone from every other: an outside tester's AA04)."""
    root = project_root(cwd)
    override, _problem = auto_memory_override(root)
    if override is None:
        key = encode_project_path(root)
        return claude_config_dir() / "projects" / key / "memory", key
    return override, (EVERY_PROJECT if override == _users_own(root) else encode_project_path(root))


def _users_own(root: Path) -> Path | None:
    """The folder the user's own ``settings.json`` names (what a project's settings would
    otherwise override)."""
    try:
        value = json.loads(read_text(claude_config_dir() / "settings.json")).get("autoMemoryDirectory")
        return expand_user(value, "autoMemoryDirectory") if isinstance(value, str) and value else None
    except Exception:  # noqa: BLE001 - unreadable, not JSON, a ~user unknown: not the user's folder
        return None
