"""Whether the last calibration still stands: ``recall index`` fits the thresholds again only
when something the fit reads changed (an outside tester: with nothing changed, every session
start's index spent 8.6 of its 12.7 s at 3,000 notes calibrating again, and rewrote
``calibration.toml``, ``negatives.npz`` and ``calibration-cache.npz``).

What ``recall.ranking.calibration.calibrate`` reads, hashed: the model, the ``[selector]``
settings it is given, the negatives (the folders' files as read, and the shipped bank), the
generic requests, and every note's chunks as ``chunks_of`` reads them (note, role, text hash,
name, description; a chunk without a vector for the model is not read). The hash is kept in the
store's settings with the size and time of each file the fit wrote: a file removed or written
by another (``recall calibrate``) makes the next index fit again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from recall import __version__
from recall.ranking import negatives as negs
from recall.ranking.calibration_file import FILE
from recall.store.vectors import index_dir

if TYPE_CHECKING:
    from recall.config.settings import SelectorSettings
    from recall.notes.problems import Problem
    from recall.store.sqlite import Store

# Raised when the fit changes what it reads or how (a key written by another version never matches).
FIT_VERSION = 1
SETTING = "calibrated:"  # + model id
WRITTEN = ("negatives.npz", "calibration-cache.npz")  # in the model's index folder, beside calibration.toml

_READ = (
    "SELECT c.note_id, c.role, c.text_hash, n.name, n.description FROM chunks c"
    " JOIN vectors v ON v.text_hash = c.text_hash AND v.model_id = ?"
    " JOIN notes n ON n.id = c.note_id JOIN sources s ON s.id = n.source_id"
    " WHERE s.kind != 'conversation' AND c.role != 'header' ORDER BY c.note_id, c.ord"
)


def negatives_files(store: Store, roots: Sequence[tuple[Path, Path]]) -> list[Path]:
    """The negatives files the fit reads: each source's (``roots``: its folder, its file), then
    each other folder the store knows."""
    named = {root.resolve() for root, _file in roots}
    return [
        *(file for _root, file in roots),
        *(
            Path(root) / negs.NEGATIVES_FILE
            for _id, kind, root, _p in store.sources()
            if kind != "conversation" and Path(root) not in named
        ),
    ]


def fit_settings(selector: SelectorSettings, target: float | None) -> tuple[float, float, bool, bool]:
    """``calibrate``'s settings after its negatives files: the silence aimed at (``target``, else
    ``[selector] target_silence``), the near misses' margin, set_aside, hide_notes."""
    target = selector.target_silence if target is None else target
    return target, selector.near_miss_margin, selector.set_aside_questions, selector.fit_on_hidden_notes


def inputs_key(store: Store, model_id: str, files: Sequence[Path], settings: Sequence) -> tuple[str, list[Problem]]:
    """The hash of what a fit reads, and the negatives files' problems (said again when it is skipped)."""
    found, problems = negs.collect(files)
    h = hashlib.sha256()
    head = [
        FIT_VERSION,
        __version__,
        model_id,
        list(settings),
        [(n.text, n.origin) for n in found],
        negs.generic_requests(),
    ]
    h.update(json.dumps(head, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    for row in store.db.execute(_READ, (model_id,)):
        h.update(json.dumps(row, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return h.hexdigest(), problems


def _written(home: Path, model_id: str) -> str:
    stamps = []
    for path in (home / FILE, *(index_dir(model_id, home) / name for name in WRITTEN)):
        try:
            st = path.stat()
            stamps.append(f"{st.st_size}/{st.st_mtime_ns}")
        except OSError:
            stamps.append("-")
    return ",".join(stamps)


def still_current(store: Store, home: Path, model_id: str, key: str) -> bool:
    """Whether the last fit read what ``key`` says and its files are still the ones it wrote."""
    return store.setting(SETTING + model_id) == f"{key}:{_written(home, model_id)}"


def remember(store: Store, home: Path, model_id: str, key: str) -> None:
    """Record the fit just made from ``key`` (after its files were written)."""
    store.set_setting(SETTING + model_id, f"{key}:{_written(home, model_id)}")
