"""Every model's index folder under a home, as a whole: which cannot be loaded (``recall
status``), a damaged one made ready for a rebuild, the others removed when the notes' text must
leave every file (a purge, a re-masking). One model's index is ``recall.store.vectors``."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from recall.errors import IndexDamaged
from recall.privacy.paths import recall_home
from recall.privacy.regular import not_a_file
from recall.privacy.strays import set_aside_folder
from recall.store.vectors import current_marker, index_dir, load_generation, read_current, set_aside_non_folders


def missing_indexes(home: Path, runs: Sequence[tuple], model_id: str | None = None) -> list[tuple[Path, str]]:
    """For each index ``recall.db`` says was built (``runs``: its index_runs rows) whose
    folder holds no generation now: (its folder, what is wrong); only ``model_id``'s when given."""
    return [(index_dir(m, home), f"missing, though recall.db records generation {g} built there")
            for m, g, *_ in runs if (model_id is None or m == model_id) and current_marker(m, home) is None]


def check_indexes(home: Path | None = None) -> list[str]:
    """One line per model index under ``home`` that cannot be loaded (empty: all sound)."""
    problems = []
    for root in sorted(((home or recall_home()) / "index").glob("*/")):
        gen = None
        try:
            gen = read_current(root, strict=True)
            if gen is not None:
                load_generation(root.name, gen, root / f"gen-{gen:06d}")
        except IndexDamaged as exc:
            problems.append(str(exc))
        negatives = root / "negatives.npz"  # recall.ranking.negatives.FILE: a folder there is read as absent
        if (kind := not_a_file(negatives)) is not None:
            problems.append(f"{negatives} is {kind}: the known unrelated messages go unused; `recall index "
                            "--rebuild` moves it aside and writes it again")
    return problems


def remove_damaged(model_id: str, home: Path | None = None) -> None:
    """Before a rebuild: a ``current`` that names no loadable generation goes (the next
    build writes a new one past every generation on disk)."""
    root = index_dir(model_id, home)
    set_aside_non_folders(root)
    try:
        read_current(root, strict=True)
    except IndexDamaged:
        if not set_aside_folder(root / "current"):
            (root / "current").unlink(missing_ok=True)


def remove_other_models(model_id: str, home: Path | None = None) -> list[str]:
    """Every other model's index folder removed (their generations hold the notes' text as it
    was: a title taken from a message, a secret masked by older rules); returns their names.
    A switch back to one of them embeds the notes again, as a first switch does. Stop 47, an
    outside tester: a purge and a re-masking left the previous default model's files as they were."""
    root = index_dir(model_id, home)
    gone: list[str] = []
    try:
        others = [p for p in root.parent.iterdir() if p.name != root.name and p.is_dir() and not p.is_symlink()]
    except OSError:
        return gone
    for other in others:
        shutil.rmtree(other, ignore_errors=True)
        gone.append(other.name)
    return gone
