"""Documents converted in a child process, so that no file can take the indexer down.

The converters are other people's libraries (pypdf, markitdown, rapidocr, ffmpeg) reading
files anyone may have saved: a zip bomb, an image that OCR enlarges to tens of gigabytes, a
page of millions of drawing operators, a converter's own bug. Each file is converted in one
child process (started on the first file, reused for the next ones, started again after a
failure), under an address-space cap (``[documents] convert_max_mb``) and, for documents and
images, a time limit (``convert_timeout_s``; a recording, whose time grows with its length,
must show progress that often: frames written, frames read). Past
either, or on any error a converter raises, the file is one ``Unreadable`` line and the rest
of the folder is read. The child writes nothing to the terminal (a library's warnings and
prints go nowhere): recall's own line says what happened.

    with Converter(max_mb, timeout_s) as convert:
        extracted = convert(path, note_type, fmt, frame_every_s)

The child runs ``python -P -m recall.notes.documents.isolated`` and speaks pickled tuples
over its stdin and stdout (``multiprocessing.connection``): it trusts only its parent. Its
TMPDIR is a folder of its own in RECALL_HOME's run folder (0700): a converter's library writes
fixed names there (onnxruntime's ``$TMPDIR/.ses``), through which a link another user left in a
shared /tmp overwrote a file of the user's, and a pipe there held every document (stop 46).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from recall.notes.documents.convert import Extracted, TooSlow, Unavailable, Unreadable
from recall.notes.documents.images import NO_TELEMETRY
from recall.privacy.paths import ensure_private_dir, run_dir

# How long a child that was asked to stop may take before it is killed.
STOP_S = 2.0
TICK_S = 1.0  # a recording's progress is told at most this often
_cap_mb = 0  # the child's address-space cap (``main``), said when a conversion needs more


class Converter:
    """The parent's side: ``convert(path, note_type, fmt, frame_every_s)`` -> ``Extracted``."""

    def __init__(self, max_mb: float, timeout_s: float) -> None:
        self.max_mb = max_mb
        self.timeout_s = timeout_s
        self._proc: subprocess.Popen | None = None
        self._send: Connection | None = None
        self._recv: Connection | None = None
        self._tmp: str | None = None  # the child's TMPDIR while it runs

    def __enter__(self) -> Converter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, path: Path, note_type: str, fmt: str, frame_every_s: float) -> Extracted:
        send, recv = self._started()
        send.send((str(path), note_type, fmt, frame_every_s))
        late = "made no progress for" if note_type == "recording" else "took over"
        kind: str = "tick"
        value: Any = None
        while kind == "tick":  # a recording ticks as it goes: its limit is time without progress
            if not recv.poll(self.timeout_s):
                self.close(kill=True)
                raise TooSlow(f"{late} {self.timeout_s:g} s to convert ([documents] convert_timeout_s); skipped")
            try:
                kind, value = recv.recv()
            except (EOFError, OSError):  # the child died: out of memory, or a converter crashed
                self.close(kill=True)
                raise Unreadable(f"its converter crashed or ran out of memory ([documents] convert_max_mb = "
                                 f"{self.max_mb:g}); skipped") from None
        if kind == "ok":
            return value
        if kind == "import":
            raise ImportError(value, name=value)
        if kind == "unavailable":
            raise Unavailable(value)
        raise Unreadable(value)

    def _started(self) -> tuple[Connection, Connection]:
        if self._proc is None or self._proc.poll() is not None:
            self.close(kill=True)
            self._tmp = tempfile.mkdtemp(prefix="convert-", dir=ensure_private_dir(run_dir()))
            self._proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "recall.notes.documents.isolated", str(int(self.max_mb)),
                 str(os.getpid())], env={**os.environ, "TMPDIR": self._tmp, **NO_TELEMETRY},
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                start_new_session=True)  # Ctrl-C reaches the parent, which stops it
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._send = Connection(os.dup(self._proc.stdin.fileno()), readable=False)
            self._recv = Connection(os.dup(self._proc.stdout.fileno()), writable=False)
            self._proc.stdin.close()
            self._proc.stdout.close()
        assert self._send is not None and self._recv is not None
        return self._send, self._recv

    def interrupt(self) -> None:
        """From another thread: end the conversion under way (its child is killed; the call
        waiting for it says the converter crashed)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()

    def close(self, kill: bool = False) -> None:
        """Stop the child (at once with ``kill``; else it ends when its stdin closes)."""
        for conn in (self._send, self._recv):
            if conn is not None:
                conn.close()
        self._send = self._recv = None
        proc, self._proc = self._proc, None
        tmp, self._tmp = self._tmp, None
        if proc is not None:
            if kill:
                proc.kill()
            try:
                proc.wait(STOP_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _answer(path: str, note_type: str, fmt: str, frame_every_s: float,
            progress: Callable[[], None] | None = None) -> tuple[str, object]:
    from recall.notes.documents import extract_as

    try:
        return "ok", extract_as(Path(path), note_type, fmt, frame_every_s, progress)
    except Unavailable as exc:
        return "unavailable", str(exc)
    except Unreadable as exc:
        return "unreadable", str(exc)
    except ImportError as exc:
        if _installed(exc.name):  # there, but it failed to load: in the memory cap, or broken
            return "unavailable", (f"its converter ({exc.name}) failed to load within [documents] "
                                  "convert_max_mb; skipped")
        return "import", exc.name or str(exc)
    except MemoryError:  # the converter's own error may not say it: a converter wrapping it said "not an XLSX"
        return "unreadable", f"needs more memory to convert than [documents] convert_max_mb ({_cap_mb}) allows; skipped"
    except RecursionError:
        return "unreadable", "nested too deeply to convert; skipped"
    except OSError as exc:
        return "unavailable", f"unreadable ({exc.strerror or type(exc).__name__}); skipped"
    except Exception as exc:  # noqa: BLE001 - any converter's own error: one line, the rest is read
        return "unreadable", f"its converter failed ({type(exc).__name__}); skipped"


def _installed(name: str | None) -> bool:
    import importlib.util

    try:
        return name is not None and importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _die_with(parent: int) -> None:
    """Linux: end when ``parent`` does (a `recall index` killed, a daemon crashed): a converter
    left behind ran on at full CPU, its frames folder filling /tmp. SIGTERM, so that what it was
    doing unwinds (the frames' temporary folder removed, ffmpeg killed by ``subprocess.run``)."""
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the pipe's end still stops it between files
        pass
    if os.getppid() != parent:  # it died before the line above
        sys.exit(1)


def _ticker(send: Connection) -> Callable[[], None]:
    """``progress`` for a conversion: a ("tick", None) to the parent, at most once a second."""
    last = [0.0]

    def tick() -> None:
        if time.monotonic() - last[0] >= TICK_S:
            last[0] = time.monotonic()
            send.send(("tick", None))

    return tick


def main(max_mb: int, parent: int | None = None) -> None:
    """The child: end with its parent, cap the address space, silence fds 1 and 2, answer until
    stdin closes."""
    import warnings

    global _cap_mb
    _cap_mb = max_mb
    if parent is not None:
        _die_with(parent)
    tmp = Path(os.environ.get("TMPDIR", "/"))
    if tmp.name.startswith("convert-") and tmp.parent == run_dir():  # its own: gone with it, however it ends
        atexit.register(shutil.rmtree, tmp, True)

    try:  # POSIX; macOS may refuse an address-space cap: the time limit still holds there
        import resource

        cap = max_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):
        pass
    send = Connection(os.dup(1), readable=False)
    recv = Connection(os.dup(0), writable=False)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    warnings.simplefilter("ignore")  # a library's warning is not the user's business: our line is
    while True:
        try:
            request = recv.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        path, note_type, fmt, every_s = request
        send.send(_answer(path, note_type, fmt, every_s, _ticker(send)))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else None)
