"""Reading the settings: packaged defaults (``recall/config/default_config.toml``), then the
user's ``$RECALL_HOME/config.toml``, then ``RECALL_MODEL`` and ``RECALL_QUESTIONS_GENERATE`` from the
environment, parsed once into ``recall.config.settings.Settings``; then ``$RECALL_HOME/calibration.toml`` for every
model whose thresholds the user did not set. Each effective value remembers its origin
(``recall config`` prints both).
"""

from __future__ import annotations

import os
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from recall.config import snapshot
from recall.config.settings import (
    PACKAGED,
    THRESHOLD_KEYS,
    THRESHOLD_RANGES,
    ConfigError,
    Settings,
    parse,
    record_origin,
)
from recall.privacy.decoding import settings_text
from recall.privacy.paths import recall_home, user_config_path
from recall.privacy.regular import NotAFile, read_regular

# A config file is a few dozen settings; a larger one is refused before it is parsed (a
# 10 MB file held the hook that reloads the settings for 3 s).
MAX_CONFIG_BYTES = 1_000_000
# Tables and arrays nest at most this deep in a settings file: recall's own go four deep
# (``[thresholds."<model>".provenance]``); ten thousand dotted keys (``[a.a.a...]``) passed the
# parser and then broke every command with a RecursionError (an outside tester's, stop 55).
MAX_NESTING = 16


def nesting(value: Any) -> int:
    """How deep tables and arrays nest in ``value`` (a scalar: 0), counted without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def packaged_config_text() -> str:
    return resources.files("recall.config").joinpath("default_config.toml").read_text(encoding="utf-8")


def defaults_with_ranges() -> str:
    """The packaged file with each number key's range at the end of its line (``recall config
    --defaults``; the ranges are the typed settings' own, ``settings.ranged``)."""
    import re

    from recall.config.settings import range_of, section_class, span

    out, cls = [], None
    for line in packaged_config_text().splitlines():
        if header := re.fullmatch(r"\[([a-z_]+)\]\s*(#.*)?", line):
            cls = section_class(header.group(1))
        elif header is None and line.startswith("["):
            cls = None
        key = re.match(r"([a-z_]+)\s*=", line)
        bounds = range_of(cls, key.group(1)) if cls is not None and key else None
        if bounds is not None:
            line = f"{line} ({span(*bounds)})" if "#" in line else f"{line}  # {span(*bounds)}"
        out.append(line)
    return "\n".join(out)


def calibration_path() -> Path:
    """Thresholds fitted on this RECALL_HOME's notes (recall.ranking.calibration): a layer between
    the packaged defaults and the user's config.toml."""
    return recall_home() / "calibration.toml"


def _merge(base: dict, over: dict, origin: str, origins: dict[tuple[str, ...], str],
           prefix: tuple[str, ...] = ()) -> dict:
    out = dict(base)
    for key, value in over.items():
        path = (*prefix, key)
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value, origin, origins, path)
        else:
            out[key] = value
            for p in [p for p in origins if p[: len(path)] == path]:
                del origins[p]
            record_origin(value, path, origin, origins)
            if value == {}:  # an empty table where a value or no key goes: the error names this file
                origins[path] = origin
    return out


def _read(path: Path) -> dict:
    """The user's config.toml: one ``ConfigError`` line for a file recall cannot take (not TOML,
    nested past the parser's depth, over MAX_CONFIG_BYTES, or a pipe, socket or folder where
    the file goes: read without blocking, so no command and no hook hangs on it)."""
    aside = "or move the file aside to use the defaults (`recall config` then shows the settings in effect)"
    try:
        raw, size = read_regular(path, MAX_CONFIG_BYTES + 1)
    except NotAFile as exc:
        if is_devnull(path):  # RECALL_CONFIG=/dev/null: no settings of the user's, the usual idiom
            return {}
        if os.environ.get("RECALL_CONFIG"):  # the user named it: the variable is what to change, not the file
            raise ConfigError(f"RECALL_CONFIG names {path}, which is {exc}, not a file: point RECALL_CONFIG at "
                              "your config file, or unset it to use RECALL_HOME/config.toml") from None
        raise ConfigError(f"{path} is {exc}, not a file: move it aside (`mv {path} {path}.old`) to use the "
                          "defaults, or put your settings there in a file") from None
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path} is {size:,} bytes, over the {MAX_CONFIG_BYTES // 1_000_000} MB a config "
                          f"file may be; keep only your settings there, {aside}")
    too_deep = f"{path}: arrays or tables nested too deeply (recall's settings go {MAX_NESTING} deep at most); fix it, "
    try:  # a byte-order mark (PowerShell's, Notepad's) says the encoding; else UTF-8, no guessing at settings
        data = tomllib.loads(settings_text(raw))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix that line, {aside}") from exc
    except RecursionError:
        raise ConfigError(too_deep + aside) from None
    if nesting(data) > MAX_NESTING:
        raise ConfigError(too_deep + aside)
    return data


def _missing(path: Path, named: bool) -> None:
    """A config file that is not there is the defaults, unless the user pointed at it: a link
    to nothing (dotfiles not checked out, a drive not mounted) or a loop of links, or a
    ``RECALL_CONFIG`` in a folder that does not exist (a mistyped path), is one ``ConfigError``,
    not settings silently dropped."""
    if path.is_symlink():
        raise ConfigError(f"{path} is a link to {os.readlink(path)}, which does not exist (or is a loop of "
                          "links): fix the link, or remove it to use the defaults")
    if named and not path.parent.is_dir():  # in a folder that is there: a file yet to be written (tune writes it)
        raise ConfigError(f"RECALL_CONFIG names {path}, in a folder that does not exist: correct the path, or "
                          "unset RECALL_CONFIG to use RECALL_HOME/config.toml")


def named_missing() -> str | None:
    """One line when ``RECALL_CONFIG`` names a file that is not there: taken as the defaults (a
    file yet to be written: `recall-eval tune` writes it), but a mistyped name would drop the
    user's settings without a word, so `recall config` and `recall status` say it."""
    if not os.environ.get("RECALL_CONFIG"):
        return None
    path = user_config_path()
    if path.exists() or path.is_symlink() or is_devnull(path):
        return None
    return (f"RECALL_CONFIG names {path}, which does not exist: the packaged defaults are in effect; "
            "correct the path, or unset RECALL_CONFIG to use RECALL_HOME/config.toml")


def check_config_file(path: Path) -> None:
    """``ConfigError`` (one line, with the repair) when ``path`` is a config file recall cannot
    take: what a command that rewrites the file checks before it touches it. ``/dev/null`` (the
    packaged defaults alone) is one: `recall questions off` renamed its file over the device, and
    `recall-eval tune` said to move the device aside (an outside tester's AI01, AI03)."""
    if is_devnull(path):
        how = ("unset RECALL_CONFIG, or point it at your config file" if os.environ.get("RECALL_CONFIG")
               else f"put a file at {path} in place of the link")
        raise ConfigError(f"{path} is /dev/null, which stands for the packaged defaults alone: recall writes no "
                          f"setting there; {how}, and run the command again")
    if path.exists():
        _read(path)
    else:
        _missing(path, named=False)


def is_devnull(path: Path) -> bool:
    """Whether ``path`` is the null device (``RECALL_CONFIG=/dev/null``: the defaults alone)."""
    try:
        return os.path.samefile(path, os.devnull)
    except OSError:
        return False


def _packaged_layer() -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """The packaged TOML and the origin of each of its keys."""
    data = tomllib.loads(packaged_config_text())
    origins: dict[tuple[str, ...], str] = {}
    record_origin(data, (), PACKAGED, origins)
    return data, origins


def packaged_settings() -> Settings:
    """The packaged file alone: no user file, no environment, no calibration."""
    return parse(*_packaged_layer())


def load_config(path: Path | None = None, calibrated_layer: bool = True) -> Settings:
    """Packaged defaults, then the user's file, then ``RECALL_MODEL``, parsed once; then the
    thresholds of ``calibration.toml`` for every model whose table the user did not set
    (unless ``calibrated_layer`` is False: what the thresholds would be without
    self-calibration)."""
    data, origins = _packaged_layer()
    user = path or user_config_path()
    stamp = snapshot.config_stamp(user)  # before reading: an edit meanwhile makes the snapshot stale
    if user.exists():
        data = _merge(data, _read(user), str(user), origins)
    else:
        _missing(user, named=path is None and bool(os.environ.get("RECALL_CONFIG")))
    if os.environ.get("RECALL_MODEL"):
        data["model"] = os.environ["RECALL_MODEL"]
        origins[("model",)] = "env RECALL_MODEL"
    if os.environ.get("RECALL_PG_URL"):  # the team store's server, as `recall config` must show it (Y-04)
        data["team"] = {**data["team"], "url": os.environ["RECALL_PG_URL"]}
        origins[("team", "url")] = "env RECALL_PG_URL"
    if os.environ.get("RECALL_QUESTIONS_GENERATE") and not declined(data, origins):
        data["questions"] = {**data["questions"], "generate": os.environ["RECALL_QUESTIONS_GENERATE"]}
        origins[("questions", "generate")] = "env RECALL_QUESTIONS_GENERATE"
    settings = parse(data, origins)
    if calibrated_layer and calibration_path().exists():
        # never over a model table the user set; a damaged file is ignored
        settings = apply_calibration_file(settings, calibration_path()) or settings
    if path is None:  # the user's settings: the hook's snapshot follows them (recall.config.snapshot)
        snapshot.write(settings, stamp)
    return settings


def declined(data: dict[str, Any], origins: dict[tuple[str, ...], str]) -> bool:
    """Whether the user's own file says ``[questions] generate = "off"``: the environment
    (``RECALL_QUESTIONS_GENERATE``) does not send their notes over that. `recall questions off`
    said the notes would no longer go out while the variable kept sending them at each `recall
    index` (an outside tester's AI02): a "no" the user wrote stands until they change it."""
    generate = data.get("questions", {}).get("generate") if isinstance(data.get("questions"), dict) else None
    return generate == "off" and origins.get(("questions", "generate"), PACKAGED) != PACKAGED


def refresh_snapshot() -> None:
    """Load the user's settings, which writes the hook's snapshot, making RECALL_HOME if needed
    (the hook after a config edit, ``recall install``). Raises ``ConfigError`` for a config
    file that cannot be read."""
    stamp = snapshot.config_stamp(user_config_path())  # before reading: an edit meanwhile makes it stale
    settings = load_config()  # writes the snapshot where RECALL_HOME already exists
    if not snapshot.snapshot_path().parent.is_dir():
        snapshot.write(settings, stamp, create=True)


def apply_calibration_file(settings: Settings, path: Path) -> Settings | None:
    """``settings`` with every model table of a ``calibration.toml`` applied
    (``Settings.with_calibration``); None when the file cannot be read. Only numbers are
    thresholds, and the provenance table is kept: a hand-edited value of another type is
    ignored, and a damaged file is ignored as a whole (the next ``recall calibrate``
    rewrites it) rather than breaking every command."""
    try:
        raw = read_regular(path, MAX_CONFIG_BYTES)[0]
        tables = tomllib.loads(settings_text(raw)).get("thresholds", {})
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(tables, dict) or nesting(tables) > MAX_NESTING:
        return None
    for model_id, table in tables.items():
        if not isinstance(table, dict):
            return None
        values: dict[str, Any] = {k: v for k, v in table.items() if k in THRESHOLD_KEYS}
        if not all(_calibrated_value(k, v) for k, v in values.items()):
            return None  # a table is taken as a unit: one bad number and none of it is used
        if isinstance(table.get("provenance"), dict):
            values["provenance"] = table["provenance"]
        settings = settings.with_calibration(model_id, values, str(path))
    return settings


def _calibrated_value(key: str, value: Any) -> bool:
    """A threshold ``recall calibrate`` could have written: a finite number in the range a
    ``config.toml`` takes (a hand-edited ``top_floor = -1e300`` or ``neg_weight = -50`` would
    switch a gate off or turn the guard against known unrelated messages around)."""
    low, high = THRESHOLD_RANGES[key]
    return isinstance(value, int | float) and not isinstance(value, bool) and low <= value <= high
