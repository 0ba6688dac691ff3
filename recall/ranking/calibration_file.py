"""``$RECALL_HOME/calibration.toml``: the thresholds ``recall.ranking.calibration`` fitted, one
table per model with its provenance, a layer between the packaged defaults and the user's
config.toml (``recall.config.load.apply_calibration_file`` reads it)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from recall.privacy.paths import private_open, read_text
from recall.privacy.strays import replace_aside

if TYPE_CHECKING:
    from recall.ranking.calibration import Calibration

FILE = "calibration.toml"


def write(home: Path, cal: Calibration) -> Path:
    """Write (or replace this model's table in) ``$RECALL_HOME/calibration.toml``."""
    import tomlkit

    path = home / FILE
    try:
        doc = tomlkit.parse(read_text(path)) if path.exists() else tomlkit.document()
    except Exception:  # noqa: BLE001 - a damaged calibration file is rewritten, it holds nothing else
        doc = tomlkit.document()
    if not doc.get("thresholds"):
        doc.add(tomlkit.comment("Written by `recall calibrate` (and `recall index`): thresholds fitted on this "
                                "RECALL_HOME's own notes."))
        doc.add(tomlkit.comment("Do not edit: set a value in config.toml instead, which always wins."))
        doc["thresholds"] = tomlkit.table(is_super_table=True)
    table = tomlkit.table()
    for key, value in cal.thresholds().items():
        table[key] = round(value, 6)
    prov = tomlkit.table()
    prov["calibrated"] = cal.when
    prov["mode"] = cal.mode
    prov["target_silence"] = cal.target_silence
    if cal.aimed is not None:
        prov["aimed_silence_on_negatives"] = round(cal.aimed, 4)
    prov["positives"] = cal.positives
    prov["negatives"] = cal.negatives
    prov["negatives_by_origin"] = cal.negatives_by_origin
    if cal.injected is not None:
        prov["calib_injected_hit_rate"] = round(cal.injected, 4)
    prov["calib_silence_rate"] = round(cal.silence, 4)
    if cal.hidden_notes is not None and cal.written is not None:
        prov["hidden_notes_silence"] = round(cal.hidden_notes, 4)
        prov["written_negatives_silence"] = round(cal.written, 4)
    prov["questions_set_aside"] = cal.muted
    if cal.near_misses is not None:
        prov["near_misses"] = cal.near_misses
    table["provenance"] = prov
    doc["thresholds"][cal.model_id] = table  # type: ignore[index]
    tmp = path.with_name(path.name + ".tmp")
    with private_open(tmp, "w") as fh:
        fh.write(tomlkit.dumps(doc))
    replace_aside(tmp, path)
    return path
