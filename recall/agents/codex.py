"""Codex CLI: a UserPromptSubmit command hook in hooks.json, and ``[features] hooks = true``."""

from __future__ import annotations

from pathlib import Path

from ..install import (
    InstallError,
    add_hook,
    load_settings,
    remove_hook,
    write_settings,
)
from .shared import (
    codex_dir,
    codex_entry,
    drop_if_created_and_empty,
    note_created,
    state_note,
    we_added,
    write_text,
)

# --- Codex CLI ---------------------------------------------------------------------------------


def install_codex(project: bool, cwd: Path | None = None) -> list[str]:
    folder = codex_dir(project, cwd)
    path = folder / "hooks.json"
    settings = load_settings(path)
    result = add_hook(settings, codex_entry())
    note_created(path)
    write_settings(path, settings)
    done = [f"{result}: the recall hook (UserPromptSubmit, --agent codex) in {path}"]
    config = folder / "config.toml"
    if _codex_feature(config, enable=True):
        done.append(f"set [features] hooks = true in {config}")
    done.append("Codex runs a new hook once you trust it: open `codex`, review it under /hooks "
                "(or run `codex exec --dangerously-bypass-hook-trust` in scripts)")
    return done


def _codex_feature(config: Path, enable: bool) -> bool:
    """Add ``[features] hooks = true`` when no value is set (enable), or remove it when we added
    it (not enable). Returns whether the file changed. Edited with tomlkit: comments stay."""
    import tomlkit

    if not enable and not we_added(config, "features.hooks"):
        return False
    try:
        doc = tomlkit.parse(config.read_text(encoding="utf-8")) if config.exists() else tomlkit.document()
    except (OSError, ValueError) as exc:
        raise InstallError(f"{config}: cannot read it as TOML ({exc}); fix or move it first") from exc
    features = doc.get("features")
    if enable:
        if features is not None and ("hooks" in features or "codex_hooks" in features):
            return False  # the user's choice, either way
        if features is None:
            doc["features"] = tomlkit.table()
            state_note(config, "features", True)
        note_created(config)
        doc["features"]["hooks"] = True
        state_note(config, "features.hooks", True)
    else:
        if features is not None and "hooks" in features:
            del features["hooks"]
            if we_added(config, "features") and not features:
                del doc["features"]
        state_note(config, "features.hooks", False)
        state_note(config, "features", False)
    config.parent.mkdir(parents=True, exist_ok=True)
    text = tomlkit.dumps(doc)
    if not enable:  # tomlkit keeps the blank line it put before our table; the file ended in one newline
        text = text.rstrip("\n") + "\n" if text.strip() else ""
    write_text(config, text)
    if not enable:
        drop_if_created_and_empty(config)
    return True


def uninstall_codex(project: bool, cwd: Path | None = None) -> list[str]:
    folder = codex_dir(project, cwd)
    path = folder / "hooks.json"
    done = []
    removed = 0
    if path.exists():
        settings = load_settings(path)
        removed = remove_hook(settings)
        if removed:
            write_settings(path, settings)
            drop_if_created_and_empty(path)
    done.append(f"removed the recall hook from {path}" if removed else f"no recall hook in {path}")
    if _codex_feature(folder / "config.toml", enable=False):
        done.append(f"removed [features] hooks = true (added by recall install) from {folder / 'config.toml'}")
    return done
