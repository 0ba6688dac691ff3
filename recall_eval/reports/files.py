"""How a report reaches the disk: secrets masked, the user's only.

A report holds the messages of a question set (a user's own, with ``recall-eval generate
--backend file``) and the notes' names: every string in it is masked like indexed text
(``recall.privacy.masking.mask_secrets``) before anything is written, and the folders and
files a run creates are 0700 / 0600 whatever the umask (another user could otherwise
rewrite a report.html the user opens, or the results.json the page renders).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recall.privacy.masking import mask_secrets
from recall.privacy.paths import private_open


def masked(value: Any) -> Any:
    """``value`` (a results dict) with every string in it, keys too, masked."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, dict):
        return {masked(k) if isinstance(k, str) else k: masked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(v) for v in value]
    return value


def write_private(path: Path, data: str | bytes) -> None:
    """``data`` to ``path``, 0600 whatever the umask (``recall.privacy.paths.private_open``)."""
    with private_open(path, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)
