"""The hook's settings snapshot: ``RECALL_HOME/hook.json`` (0600), the few settings the
per-message hook reads, written by ``recall.config.load.load_config`` whenever the user's
settings are loaded (every ``recall`` command, the daemon's start, its re-read after a config
edit), so the hook never parses TOML and no default is copied into it.

    {"version": recall's version (a new release may ship other defaults),
     "config": [path, inode, size, mtime_ns, ctime_ns] | null,   the config file it was made from
     "settings": {"budget_ms": ..., "skip": [...], "skip_tags": [...], "min_chars": ...}}

The hook trusts a snapshot of this release whose ``config`` is the config file as it is now; after an edit
(or with none yet) it has the core load the settings once, which writes a new one. Standard
library only: the hook imports this on every message. Nothing of a message goes into it.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall import __version__
from recall.privacy.paths import ensure_private_dir, private_open, recall_home, user_config_path
from recall.privacy.regular import read_regular
from recall.privacy.strays import set_aside_folder

# The hook's few settings are ~1 KB; a config at its 1 MB cap (recall.config.load) of skip tags
# in emoji or CJK is up to 3x that as JSON (\uXXXX escapes): past this cap the hook would
# find no snapshot and load the settings on every message.
MAX_SNAPSHOT_BYTES = 4_000_000

if TYPE_CHECKING:
    from recall.config.settings import Settings

NAME = "hook.json"


def too_short(prompt: str, min_chars: int) -> bool:
    """The one test of ``[selector] min_prompt_chars``: a message this short ("ok", "go on") is
    not searched. The hook and the MCP tool ask it with the snapshot's value before they ask the
    daemon, the facade before it searches, the selector before it decides."""
    return len(prompt.strip()) < min_chars


def snapshot_path() -> Path:
    return recall_home() / NAME


def config_stamp(path: Path) -> list | None:
    """The config file's identity: any edit changes it. None when there is no file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def values(settings: Settings) -> dict[str, Any]:
    """What the hook reads of ``settings``."""
    return {"budget_ms": settings.daemon.hook_budget_ms, "skip": list(settings.hook.skip_entrypoints),
            "skip_tags": list(settings.hook.skip_prompt_tags), "min_chars": settings.selector.min_prompt_chars}


def write(settings: Settings, stamp: list | None, create: bool = False) -> None:
    """Write the snapshot of ``settings`` (made from the config file ``stamp``) when it differs
    from the one there. ``create``: make RECALL_HOME if missing (else a home not made yet is
    left alone). Never raises: a read-only home only costs the hook a settings load."""
    path = snapshot_path()
    if create or path.parent.is_dir():
        data = {"version": __version__, "config": stamp, "settings": values(settings)}
        if _current() != data:
            _store(data)


def rejected() -> list | None:
    """The config file's identity (``config_stamp``) when the settings last failed to load from
    it (``reject``); None when they did not, or nothing says so."""
    return _current().get("rejected")


def reject(stamp: list | None) -> None:
    """Remember that the config file ``stamp`` could not be loaded (the last settings kept): the
    hook parsed a rejected file again on every message, up to a second each for a large one (an
    outside tester's AG02). Never raises."""
    data = _current()
    if snapshot_path().parent.is_dir() and data.get("rejected") != stamp:
        _store({"version": __version__, "config": data.get("config"), "settings": data.get("settings"),
                "rejected": stamp})


def _current() -> dict[str, Any]:
    """The snapshot file's contents when it is ours and readable; {} otherwise."""
    path = snapshot_path()
    try:
        data = json.loads(read_regular(path, MAX_SNAPSHOT_BYTES)[0])
    except (OSError, ValueError, RecursionError):
        return {}  # written anew (a pipe there is replaced by the file)
    return data if isinstance(data, dict) and _trusted(path) else {}


def _store(data: dict[str, Any]) -> None:
    """The snapshot file replaced whole by ``data`` (0600); a write that fails leaves it as it was."""
    path = snapshot_path()
    try:
        ensure_private_dir(path.parent)
        set_aside_folder(path)  # no file could replace it: every hook stayed silent
        # pid + thread: unique between processes and between the MCP server's threads
        tmp = path.with_name(f".{NAME}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with private_open(tmp) as fh:
                json.dump(data, fh)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError:
        pass


MAX_BUDGET_MS = 60_000  # [daemon] hook_budget_ms's range (recall.config.settings)


def _trusted(path: Path) -> bool:
    """Ours and writable by nobody else (another user could set a budget or a skip list)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (not hasattr(os, "getuid") or st.st_uid == os.getuid()) and not st.st_mode & 0o022


def read(stale_ok: bool = False) -> dict[str, Any] | None:
    """The snapshot's settings; None when it is missing, damaged, not trusted, or (unless
    ``stale_ok``) made from another state of the config file than the one there now."""
    path = snapshot_path()
    try:
        data = json.loads(read_regular(path, MAX_SNAPSHOT_BYTES)[0])  # a pipe there must not hold the hook
        if not _trusted(path):
            return None
        settings = data["settings"]
        if not stale_ok and (data.get("version") != __version__ or data["config"] != config_stamp(user_config_path())):
            return None
        if not (isinstance(settings["budget_ms"], int | float) and isinstance(settings["min_chars"], int)
                and isinstance(settings["skip"], list) and isinstance(settings["skip_tags"], list)):
            return None
        if not 1 <= settings["budget_ms"] <= MAX_BUDGET_MS:  # the config's own range: no hook waits longer
            return None
        return settings
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
