"""What install added, recorded so that uninstall removes exactly that: ``installed.json``
in RECALL_HOME and a second copy in the user's state folder, each locked while read and written.
Keys per settings file: an entry's dotted path (``mcpServers.recall``), ``file``/``dir`` (made
by install), and the containers a settings write made (``settings_file.write_settings``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from recall.privacy.paths import ensure_private_dir, home_folder, private_open, read_text, recall_home

STATE_NAME = "installed.json"


def state_paths() -> list[Path]:
    """Where install records what it added, read together: RECALL_HOME's ``installed.json`` and
    the user's state folder's (``$XDG_STATE_HOME``, else ``~/.local/state``, ``/recall``). With the
    first alone, a RECALL_HOME reset (or uninstall run under another one) left every flag set and
    file made behind, uninstall saying it was done (an outside tester's AF02)."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    state = (Path(xdg) if os.path.isabs(xdg) else home_folder() / ".local" / "state") / "recall"
    return list(dict.fromkeys([recall_home() / STATE_NAME, state / STATE_NAME]))


MADE = "folders made"  # the second record's note of the highest folder it made for itself


def _drop_made(folder: Path, top: object) -> None:
    """``folder`` and its parents up to ``top`` (the highest the record made), while empty."""
    for d in [folder, *folder.parents]:
        try:
            d.rmdir()
        except OSError:
            return
        if str(d) == top or not isinstance(top, str):
            return


def _read_state(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_text(path))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError, RecursionError):
        return {}


def installed_state() -> dict[str, list[str]]:
    """The records read together, with the notes of the edit under way (``writes``) on top."""
    from recall.agents.writes import active

    out: dict[str, list[str]] = {}
    for path in state_paths():
        for key, values in _read_state(path).items():
            if isinstance(values, list):
                out[key] = sorted({*out.get(key, []), *map(str, values)})
    for path, key, added in (batch.notes if (batch := active()) is not None else []):
        keys = set(out.get(str(path), []))
        out[str(path)] = sorted(keys | {key} if added else keys - {key})
    return out


def state_note(path: Path, key: str, added: bool) -> None:
    """Record (or forget) what install added, in each record, each locked while it is read and
    written: installs run at once lost each other's records, and uninstall then left their
    entries behind (an outside tester's AF03). Inside an edit (``writes.run``) it is held until
    every write landed: a note of a write that failed made uninstall take the user's own flags."""
    import fcntl

    from recall.agents.writes import active

    if (batch := active()) is not None:
        if not batch.notes:  # once every write landed, before anything else then
            batch.then.insert(0, lambda: _write_notes(batch.notes))
        batch.notes.append((path, key, added))
        return

    records = state_paths()
    for record in records:
        try:
            made = next((d for d in reversed(record.parents) if not d.exists()), None)  # the highest to make
            ensure_private_dir(record.parent)
            with private_open(record, "a") as fh:  # created if missing, not emptied before the lock
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
                state = _read_state(record)
                keys = set(state.get(str(path), []))
                keys = keys | {key} if added else keys - {key}
                if keys:
                    state[str(path)] = sorted(keys)
                else:
                    state.pop(str(path), None)
                if made is not None:
                    state.setdefault(MADE, str(made))
                fh.truncate(0)
                json.dump(state, fh, indent=2)
                if set(state) <= {MADE} and record != records[0]:  # nothing installed: nothing left outside
                    record.unlink()
                    _drop_made(record.parent, state.get(MADE))
        except OSError:
            if record == records[0]:
                raise  # RECALL_HOME's is the one recall answers for; the other is a second copy


def _write_notes(notes: list[tuple[Path, str, bool]]) -> None:
    for path, key, added in notes:
        state_note(path, key, added)


def we_added(path: Path, key: str) -> bool:
    return key in installed_state().get(str(path), [])


def noted(path: Path, prefix: str) -> list[str]:
    """The keys recorded for ``path`` that start with ``prefix``."""
    return [key for key in installed_state().get(str(path), []) if key.startswith(prefix)]

