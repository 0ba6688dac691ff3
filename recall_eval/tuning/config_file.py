"""Write tuned values into a recall config file, keeping its comments (tomlkit).

Targets: the user's config (``recall.privacy.paths.user_config_path()``: RECALL_CONFIG, else
``$RECALL_HOME/config.toml``), which overrides the packaged defaults, or with
``--packaged`` recall/config/default_config.toml itself (how the project ships defaults).

Only the model's own tables change: ``[thresholds."<model id>"]`` (the four tuned keys
plus a ``provenance`` sub-table) and ``[learned."<model id>"]``; every other key and
comment stays as it was. recall.config.load reads just the keys it knows, so provenance
travels with the numbers without affecting them.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import tomlkit
from tomlkit.items import InlineTable, Table

from recall.privacy.paths import user_config_path

HEADER = "# recall settings (same keys as the packaged defaults; anything set here wins).\n"


def packaged_path() -> Path:
    import recall.config

    return Path(recall.config.__file__).resolve().parent / "default_config.toml"


def target_path(packaged: bool = False, explicit: Path | None = None) -> Path:
    return explicit or (packaged_path() if packaged else user_config_path())


SECTION_NOTES = {
    "learned": ("Learned selector per model id, used when selector.kind = \"learned\": fitted by",
                "`recall-eval tune --learned`; plain numbers, evaluated without scikit-learn."),
}


def _super(doc, name: str) -> Table:
    if name not in doc:
        doc.add(tomlkit.nl())
        for line in SECTION_NOTES.get(name, ()):
            doc.add(tomlkit.comment(line))
        doc[name] = tomlkit.table(is_super_table=True)
    return doc[name]


def _model_table(parent: Table, model_id: str, comment: str) -> Table:
    if model_id in parent:
        found = parent[model_id]
        if isinstance(found, InlineTable):  # `"<model>" = { top_floor = 0.4 }`: a table can hold the provenance
            t = tomlkit.table()
            for k, v in found.items():
                t[k] = v
            parent[model_id] = t
        return parent[model_id]
    t = tomlkit.table()
    t.add(tomlkit.comment(comment))
    parent[model_id] = t
    return parent[model_id]


def _provenance(t: Table, provenance: dict) -> None:
    p = tomlkit.table()
    for k, v in provenance.items():
        p[k] = v
    p.add(tomlkit.nl())
    t["provenance"] = p


def set_thresholds(text: str, model_id: str, values: dict[str, float], provenance: dict) -> str:
    doc = tomlkit.parse(text)
    t = _model_table(_super(doc, "thresholds"), model_id,
                     "tuned by `recall-eval tune` (cross-validated); provenance below")
    for k, v in values.items():
        item = tomlkit.item(float(v))
        if abs(v) >= 3.0:  # recall_eval.tuning.tune.to_config's stand-ins for "no floor" / "never full"
            item.comment("never full: gaps lie within [-2, 2]" if k == "full_gap" else "no floor")
        t[k] = item
    _provenance(t, provenance)
    return tomlkit.dumps(doc)


def set_learned(text: str, model_id: str, table: dict, provenance: dict, kind: str | None = None) -> str:
    """Write the learned selector's numbers; ``kind`` ("gap"/"learned") also sets selector.kind."""
    doc = tomlkit.parse(text)
    t = _model_table(_super(doc, "learned"), model_id,
                     "learned selector (recall-eval tune --learned): logistic regression, plain numbers")
    for k, v in table.items():
        if k == "coef":
            arr = tomlkit.array()
            arr.multiline(True)
            arr.extend(tomlkit.array(str([float(x) for x in row])) for row in v)
            t[k] = arr
        else:
            t[k] = v
    _provenance(t, provenance)
    if kind is not None:
        if "selector" not in doc:
            doc["selector"] = tomlkit.table()
        sel = doc["selector"]
        old = sel.get("kind")
        item = tomlkit.item(kind)
        if old is not None and getattr(old, "trivia", None) is not None and old.trivia.comment:
            item.comment(old.trivia.comment.lstrip("#").strip())
            item.trivia.comment_ws = old.trivia.comment_ws
        sel["kind"] = item
    return tomlkit.dumps(doc)


def diff(path: Path, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(path), str(path) + " (tuned)"))


def check(path: Path) -> str:
    """The text of the config ``path`` tune would rewrite ("" when absent), or one line saying why it
    cannot be (a pipe, a folder, too large, not TOML): said before the tuning runs, not after."""
    from recall.config.load import check_config_file
    from recall.config.settings import ConfigError
    from recall.privacy.paths import read_bytes

    check_config_file(path)
    raw = read_bytes(path).decode("utf-8", errors="replace") if path.exists() else ""
    try:
        tomlkit.parse(raw.replace("\r\n", "\n"))
    except tomlkit.exceptions.TOMLKitError as exc:
        raise ConfigError(f"{path} is not valid TOML ({str(exc).splitlines()[0][:120]}): fix it (`recall config` "
                          "says where), then tune again; it was not changed") from None
    return raw


def update(path: Path, change, dry_run: bool = False) -> str:
    """Apply ``change(text) -> text`` to ``path`` (created if missing); return the diff. The file
    is replaced atomically (``recall_eval.files.write_private``: a failed write, a full disk,
    leaves the old one whole), 0600, in its line endings (a CRLF file stays CRLF); a config kept
    behind a link (a dotfiles folder) is written through it. A file TOML cannot read is one line."""
    from recall.config.settings import ConfigError
    from recall_eval.files import write_private

    raw = check(path)
    old, crlf = raw.replace("\r\n", "\n"), "\r\n" in raw
    try:
        new = change(old or HEADER).rstrip("\n") + "\n"
    except tomlkit.exceptions.TOMLKitError as exc:
        raise ConfigError(f"{path} is not valid TOML ({str(exc).splitlines()[0][:120]}): fix it (`recall config` "
                          "says where), then tune again; it was not changed") from None
    if not dry_run and new != old:
        target = path.resolve() if path.is_symlink() else path  # the link stays, its target gets the values
        write_private(target, new, newline="\r\n" if crlf else None)
    return diff(path, old, new)
