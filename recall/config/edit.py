"""Changing one setting in the user's config.toml, as recall's own commands do (``recall
questions on``/``off``, the web page's consent button): comments, layout and line endings
kept (tomlkit), the file replaced whole or not at all (a full disk leaves the old one), and a
file recall cannot read said in one line and left as it is."""

from __future__ import annotations

from pathlib import Path

from recall.config.load import check_config_file
from recall.config.settings import ConfigError
from recall.privacy.decoding import settings_text
from recall.privacy.paths import make_missing_dirs, replace_private, user_config_path


def set_setting(section: str, key: str, value: str) -> Path:
    """Write ``[section] key = value`` to the user's config.toml (0600); returns its path."""
    import tomlkit

    path = user_config_path()
    check_config_file(path)
    try:
        raw = path.read_bytes() if path.exists() else b""
        doc = tomlkit.parse(settings_text(raw))  # as load_config reads it
    except (tomlkit.exceptions.TOMLKitError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} could not be rewritten ({exc}); set [{section}] {key} = {value!r} there "
                          "by hand") from None
    if section not in doc:
        doc[section] = tomlkit.table()
    doc[section][key] = value  # type: ignore[index]
    target = path.resolve() if path.is_symlink() else path  # a config kept in a dotfiles folder stays linked
    make_missing_dirs(target.parent)
    replace_private(target, tomlkit.dumps(doc))
    return path
