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
import tomllib
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
            if said := _comments(found).get(""):  # the user's comment after it: kept, above the table
                t.add(tomlkit.comment(said))
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


def _edited(text: str, section: str, model_id: str, put) -> str:
    """``put(doc)`` on ``text`` parsed; where the file's shape makes tomlkit write something that
    means more than that (dotted keys under ``[section]`` or at the root, an inline table: the
    provenance went to the root, the user's later settings under it, a traceback; an outside
    tester's AH11-AH13), the model's table is taken out, its values kept, and written whole at
    the end of the file instead. ``update`` checks the result's meaning either way."""
    try:
        new = put(tomlkit.parse(text))
        if not _moved(text, new):
            return new
    except (ValueError, TypeError, KeyError):
        pass
    doc = tomlkit.parse(text)
    holder = doc.get(section)
    found = holder[model_id] if isinstance(holder, dict) and model_id in holder else None
    kept = found.unwrap() if found is not None else {}
    said = _comments(found)  # the user's comments on its values, and on an inline table (they were dropped)
    if kept and holder is not None:
        del holder[model_id]
        if not holder:
            del doc[section]
    doc = tomlkit.parse(tomlkit.dumps(doc).rstrip("\n") + "\n")
    table = tomlkit.table()
    if "" in said:
        table.add(tomlkit.comment(said[""]))
    for key, value in kept.items():
        if key != "provenance":
            table[key] = value
            if key in said:  # kept on a value tune leaves as it is; a value it changes loses it (put)
                table[key].comment(said[key])
    _super(doc, section)[model_id] = table
    return put(doc)


def _comments(found) -> dict[str, str]:
    """{key: the comment on its line} of a model's table (dotted keys), "" for one after an inline table."""
    out = {k: v.trivia.comment.lstrip("#").strip() for k, v in getattr(found, "items", dict)()
           if getattr(getattr(v, "trivia", None), "comment", "")}
    if isinstance(found, InlineTable) and (c := found.trivia.comment.lstrip("#").strip()):
        out[""] = c
    return out


def set_thresholds(text: str, model_id: str, values: dict[str, float], provenance: dict) -> str:
    return _edited(text, "thresholds", model_id, lambda doc: _put_thresholds(doc, model_id, values, provenance))


def _put_thresholds(doc, model_id: str, values: dict[str, float], provenance: dict) -> str:
    t = _model_table(_super(doc, "thresholds"), model_id,
                     "tuned by `recall-eval tune` (cross-validated); provenance below")
    for k, v in values.items():
        old = t.get(k)
        if isinstance(old, int | float) and not isinstance(old, bool) and float(old) == float(v):
            # unchanged: the value and the user's comment on it stay; a comment tune writes is said
            # again from the value (an older tune's `neg_weight = 8.0 # no floor` stayed on 8.0)
            said = getattr(getattr(old, "trivia", None), "comment", "")
            if _said_by_tune(said) and said.lstrip("#").strip() != _stand_in(k, float(v)):
                _say_stand_in(t, k, float(v))
            continue
        t[k] = tomlkit.item(float(v))
        # tomlkit keeps the replaced value's comment: a changed value drops it (`top_floor = 0.2304
        # # hand-set` was left so), and only to_config's stand-ins say what they stand for
        # (`neg_weight = 8.0 # no floor` was written on every key of 3 or more: an outside tester, stop 58)
        _say_stand_in(t, k, float(v))
    _provenance(t, provenance)
    return tomlkit.dumps(doc)


def _say_stand_in(t: Table, key: str, value: float) -> None:
    """``key``'s comment: what ``value`` stands for when it is a stand-in, else none."""
    t[key].trivia.comment, t[key].trivia.comment_ws = "", ""
    if (said := _stand_in(key, value)) is not None:
        t[key].comment(said)


def _said_by_tune(comment: str) -> bool:
    """Whether ``comment`` is one ``_stand_in`` writes (on any key: an older tune wrote them on others)."""
    return comment.lstrip("#").strip() in STAND_IN_WORDS


NO_FLOOR, NEVER_FULL = "no floor", "never full: gaps lie within [-2, 2]"
STAND_IN_WORDS = (NO_FLOOR, NEVER_FULL)


def _stand_in(key: str, value: float) -> str | None:
    """What ``value`` stands for when it is one of ``recall_eval.tuning.tune.to_config``'s stand-ins:
    a floor below every score (-3), a full gap above every gap (3); else None."""
    if key in ("gap_floor", "top_floor") and value <= -3.0:
        return NO_FLOOR
    if key == "full_gap" and value >= 3.0:
        return NEVER_FULL
    return None


def set_learned(text: str, model_id: str, table: dict, provenance: dict, kind: str | None = None) -> str:
    """Write the learned selector's numbers; ``kind`` ("gap"/"learned") also sets selector.kind."""
    return _edited(text, "learned", model_id, lambda doc: _put_learned(doc, model_id, table, provenance, kind))


def _put_learned(doc, model_id: str, table: dict, provenance: dict, kind: str | None) -> str:
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


# What tune may change in a config: its model's tables and the selector's kind.
TUNED = (("thresholds",), ("learned",), ("selector", "kind"))


def _leaves(data: object, at: tuple[str, ...] = ()) -> dict[tuple[str, ...], object]:
    if isinstance(data, dict):
        return {k: v for key, value in data.items() for k, v in _leaves(value, (*at, str(key))).items()}
    return {at: data}


def _moved(old: str, new: str) -> list[str]:
    """The settings ``new`` sets, drops or changes beside what tune may change (``TUNED``)."""
    before, after = _leaves(tomllib.loads(old)), _leaves(tomllib.loads(new))
    changed = before.keys() ^ after.keys() | {k for k in before.keys() & after.keys() if before[k] != after[k]}
    return sorted(".".join(k) for k in changed if not any(k[: len(t)] == t for t in TUNED))


def _changed_elsewhere(old: str, new: str) -> str | None:
    """Why the rewritten text means more than new thresholds (a setting moved, dropped or made
    up, a file the core refuses), or None. tomlkit edits some shapes of TOML wrongly: dotted keys
    under ``[thresholds]`` got their provenance written as a table of the root, which every
    recall command then refused, and root dotted keys after ``[thresholds]`` were moved under
    the provenance table, the user's settings silently back to the defaults (an outside
    tester's AH11, AH12). The meaning is compared, whatever the text's shape."""
    import tempfile

    from recall.config.load import load_config
    from recall.config.settings import ConfigError
    from recall_eval.files import write_private

    if moved := _moved(old, new):
        return f"it would also have changed {', '.join(moved[:3])}"
    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / "config.toml"
        write_private(probe, new)
        try:
            load_config(probe, calibrated_layer=False)
        except ConfigError as exc:
            return f"recall would refuse the result ({str(exc).split(': ', 1)[-1][:160]})"
    return None


def _unwritable(path: Path, why: str) -> str:
    return (f"{path} was not changed: tune cannot write its thresholds into the form its [thresholds] or "
            f"[learned] table has there ({why}); write them as a plain [thresholds.\"<model id>\"] table "
            "(the report holds the values), or move that table aside, and tune again")


def diff(path: Path, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(path), str(path) + " (tuned)"))


def check(path: Path, dry_run: bool = False) -> str:
    """The text of the config ``path`` tune would rewrite ("" when absent), or one line saying why it
    cannot be (a pipe, a folder, too large, not TOML): said before the tuning runs, not after. A
    dry run of ``RECALL_CONFIG=/dev/null`` (the defaults alone) shows what would be written over
    none (it was refused, though it writes nothing: AH10)."""
    from recall.config.load import check_config_file, is_devnull
    from recall.config.settings import ConfigError
    from recall.privacy.decoding import settings_text
    from recall.privacy.paths import read_bytes

    if dry_run and is_devnull(path):
        return ""
    check_config_file(path)
    try:  # as the core reads it (a byte-order mark says the encoding: one was refused as not TOML, stop 58)
        raw = settings_text(read_bytes(path)) if path.exists() else ""
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 (byte {exc.start}): save it as UTF-8, then tune again; it was "
                          "not changed") from None
    try:
        tomlkit.parse(raw.replace("\r\n", "\n"))
    except tomlkit.exceptions.TOMLKitError as exc:
        raise ConfigError(f"{path} is not valid TOML ({str(exc).splitlines()[0][:120]}): fix it (`recall config` "
                          "says where), then tune again; it was not changed") from None
    if raw.strip():  # a file recall itself refuses (an unknown key): said as recall says it, before the tuning
        from recall.config.load import load_config

        try:
            load_config(path, calibrated_layer=False)
        except ConfigError as exc:
            raise ConfigError(f"{exc} (tune writes into it: fix it first; it was not changed)") from None
    return raw


def update(path: Path, change, dry_run: bool = False) -> str:
    """Apply ``change(text) -> text`` to ``path`` (created if missing); return the diff. The file
    is replaced atomically (``recall_eval.files.write_private``: a failed write, a full disk,
    leaves the old one whole), 0600, in its line endings (a CRLF file stays CRLF); a config kept
    behind a link (a dotfiles folder) is written through it, with its byte-order mark if it had one
    and its mode (a 0644 config stayed 0600: an outside tester's). A file TOML cannot read is one line."""
    from recall.config.settings import ConfigError
    from recall_eval.files import write_private

    raw = check(path, dry_run)
    old, crlf = raw.replace("\r\n", "\n"), "\r\n" in raw
    try:
        new = change(old or HEADER).rstrip("\n") + "\n"
    except tomlkit.exceptions.TOMLKitError as exc:
        raise ConfigError(f"{path} is not valid TOML ({str(exc).splitlines()[0][:120]}): fix it (`recall config` "
                          "says where), then tune again; it was not changed") from None
    except (ValueError, TypeError, KeyError) as exc:  # a shape tomlkit cannot edit (an inline table's table)
        raise ConfigError(_unwritable(path, str(exc))) from None
    if (why := _changed_elsewhere(old, new)) is not None:
        raise ConfigError(_unwritable(path, why))
    if not dry_run and new != old:
        import codecs

        from recall.privacy.paths import read_bytes

        target = path.resolve() if path.is_symlink() else path  # the link stays, its target gets the values
        bom = "\ufeff" if target.exists() and read_bytes(target).startswith(codecs.BOM_UTF8) else ""
        write_private(target, bom + new, newline="\r\n" if crlf else None, keep_mode=True)
    return diff(path, old, new)
