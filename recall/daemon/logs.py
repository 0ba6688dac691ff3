"""The daemon's log (0600, rotated): what was handed over, never a prompt."""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from recall.privacy.paths import daemon_log, ensure_private_dir, private_open
from recall.privacy.safetext import terminal_text

log = logging.getLogger("recall.daemon")


def log_path() -> Path:
    return daemon_log()


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log whose every file is 0600 (rotation renames, so backups keep it), opened
    again where it was deleted or replaced, its folder too: a daemon lives for days, and one
    whose log was deleted (by hand, a cleaner) wrote on into the unlinked file until its next
    rotation, so `recall log` and `--stats` saw nothing for weeks (AK02; what the standard
    library's WatchedFileHandler does, for a rotating log)."""

    _ident: tuple[int, int] | None = None

    def _open(self):  # type: ignore[override]
        path = Path(self.baseFilename)
        ensure_private_dir(path.parent)
        stream = private_open(path, "a", encoding=self.encoding)
        st = os.fstat(stream.fileno())
        self._ident = (st.st_dev, st.st_ino)
        return stream

    def emit(self, record: logging.LogRecord) -> None:
        self._reopen_if_gone()
        super().emit(record)

    def _reopen_if_gone(self) -> None:
        if self.stream is None:
            return
        try:
            st = os.stat(self.baseFilename)
            if (st.st_dev, st.st_ino) == self._ident:
                return
        except FileNotFoundError:
            pass
        except OSError:
            return  # unreadable now: written where it was
        self.stream.close()
        self.stream = None  # type: ignore[assignment]  # opened again by the next write

    def doRollover(self) -> None:
        """``backups = 0``: the log starts again empty (Python's handler, keeping no backup,
        never shrank it: the log grew without bound; stop 48, an outside tester's Y-09)."""
        super().doRollover()
        if self.backupCount == 0 and self.stream is not None:
            self.stream.truncate(0)


def setup_logging(config: Any, foreground: bool) -> None:
    ensure_private_dir(log_path().parent)
    log.handlers.clear()
    log.setLevel(logging.INFO)
    log.propagate = False
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    handler = PrivateRotatingFileHandler(
        log_path(), maxBytes=config.log.max_bytes,
        backupCount=config.log.backups, encoding="utf-8",
    )
    handler.setFormatter(fmt)
    log.addHandler(handler)
    if foreground:
        err = logging.StreamHandler(sys.stderr)
        err.setFormatter(fmt)
        log.addHandler(err)


def log_event(event: str, **fields: Any) -> None:
    # terminal_text: a note id from a file name cannot put escape codes in a `tail -f` (still JSON).
    log.info("%s %s", event, terminal_text(json.dumps(fields, ensure_ascii=False, sort_keys=True)))


def log_exception(where: str, exc: BaseException) -> None:
    # The type and the stack (file, line, code), never str(exc): a message may quote input.
    frames = "".join(traceback.format_tb(exc.__traceback__)).rstrip()
    log.error("%s failed: %s\n%s", where, type(exc).__name__, frames)

