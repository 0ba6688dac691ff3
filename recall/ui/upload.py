"""Upload a file from the page (``recall ui --allow-writes --upload-dir DIR``): it lands
in DIR, then DIR is indexed in a process of its own (``python -m recall.ui.reindex DIR``),
as ``recall index DIR`` would.

Only with both flags: the page is read-only by default, and a file lands only in the
folder the user named. The POST carries the launch's CSRF field (``security.py`` already
refused other origins and requests without the token). The name is the file's own base
name, cut to what a file system takes (no folder part, no leading dot, no control
characters); it never replaces a file already there ("name (2).pdf"). Only formats recall
indexes are taken, and no more than ``[documents] max_file_mb``, said by the request's size before
a byte of it is read (a 3 GB upload was spooled whole to the system's temp folder first). The bytes go to a hidden
temporary file in DIR (0600), then a rename: the watcher and the indexer see the whole file
or nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall.privacy.paths import FILE_MODE, ensure_private_dir

if TYPE_CHECKING:
    from starlette.datastructures import UploadFile

NAME_MAX = 200  # bytes of a saved name, UTF-8 (file systems take 255; " (2)" may follow its stem)
CHUNK = 1 << 20
FORM_OVERHEAD = 64 << 10  # what a form adds around its file: the CSRF field, the parts' headers
# A form without a file: /try's message, 16,000 characters, percent-encoded UTF-8 (up to 12 bytes each).
SMALL_FORM_BYTES = 16_000 * 12


class Refused(Exception):
    """Why an upload was not saved: the one line the page shows, and its HTTP status."""

    def __init__(self, line: str, status: int = 400) -> None:
        super().__init__(line)
        self.status = status


def safe_name(filename: str) -> str:
    """The base name an upload is saved under; ``Refused`` when none is left."""
    base = re.split(r"[\\/]", filename or "")[-1]
    base = _shown_chars(base).strip().lstrip(".")
    if not base:
        raise Refused("the file has no usable name")
    stem, dot, ext = base.rpartition(".")
    if dot and len(ext) <= 10:
        return _cut(stem, NAME_MAX - len(ext.encode()) - 1) + "." + ext
    return _cut(base, NAME_MAX)


def _shown_chars(name: str) -> str:
    """``name`` with what recall never shows as it is dropped (``recall.privacy.safetext.visible``:
    C0, DEL, C1, direction and zero-width characters, every format character, the fillers drawn as
    nothing; and variation selectors, ``HIDDEN``): ``x\u202edm.md`` reads "xmd.md" backwards in a
    listing (stop 57). A space of another width (U+00A0, U+3000) is a space."""
    import unicodedata

    from recall.privacy.safetext import HIDDEN, visible

    return "".join(" " if unicodedata.category(c) == "Zs" else c for c in name
                   if unicodedata.category(c) == "Zs" or (visible(c) and not HIDDEN.match(c)))


def _cut(text: str, max_bytes: int) -> str:
    """``text`` cut to ``max_bytes`` of UTF-8, never inside a character: a name of 190 "é" is 380
    bytes, past what a file system takes (the page answered 500; an outside tester's, stop 55)."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")


def accepted(name: str) -> bool:
    """Whether recall indexes a file of this name (a markdown note, or a format of recall.notes.documents)."""
    from recall.config.load import load_config
    from recall.notes.documents import format_of

    return name.lower().endswith(".md") or format_of(Path(name), load_config().documents) is not None


def free_path(folder: Path, name: str) -> Path:
    """``folder/name``, or ``name (2)``, ``name (3)``... : never a file already there."""
    path = folder / name
    stem, suffix = path.stem, path.suffix
    n = 2
    while path.exists() or path.is_symlink():
        path = folder / f"{stem} ({n}){suffix}"
        n += 1
    return path


async def save(folder: Path, upload: UploadFile, limit_bytes: int) -> Path:
    """Write ``upload`` into ``folder`` (see the module doc); returns where it landed."""
    name = safe_name(upload.filename or "")
    if not accepted(name):
        raise Refused(f"{name}: not a format recall indexes (notes, PDF, Office, HTML, EPUB, text, images, videos)")
    ensure_private_dir(folder)
    tmp = folder / f".upload-{os.getpid()}-{time.monotonic_ns()}.part"
    written = 0
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            while block := await upload.read(CHUNK):
                written += len(block)
                if written > limit_bytes:
                    raise Refused(f"{name}: over {limit_bytes / 1e6:g} MB ([documents] max_file_mb)")
                fh.write(block)
            fh.flush()
            os.fsync(fh.fileno())
        target = free_path(folder, name)
        os.link(tmp, target)  # fails rather than replace a file that appeared meanwhile
        return target
    finally:
        tmp.unlink(missing_ok=True)


def request_indexing(launch: Any, folder: Path | None) -> None:
    """Index ``folder`` (None: every indexed folder) in a process of its own: now where no job
    runs, else once the running one ends (its pass may have listed the folder already, and the
    button's holds only the folders indexed when it started). The page keeps the queue and a
    thread per job starts the next: a marker file the job read once before it exited lost an
    upload made in its last half second, and one into a folder the button's job did not hold
    (the flaky-test hunt, stop 57)."""
    with launch.jobs:
        if launch.reindex is not None and launch.reindex.poll() is None:
            if folder not in launch.queued:
                launch.queued.append(folder)
            return
        _start(launch, folder)


def _start(launch: Any, folder: Path | None) -> None:
    """Start a job for ``folder``, and a thread that starts the next one asked for when it ends
    (called with ``launch.jobs`` held)."""
    import threading

    job = launch.reindex = start_indexing(folder)
    launch.reindex_started = time.time()

    def follow() -> None:
        job.wait()
        with launch.jobs:
            if launch.reindex is job and launch.queued:
                _start(launch, launch.queued.pop(0))

    threading.Thread(target=follow, name="recall-ui-reindex", daemon=True).start()


def start_indexing(folder: Path | None = None) -> subprocess.Popen:
    """``recall index FOLDER`` (no folder: every indexed one) in its own process (the page never
    loads a model); what it says goes to ``logs/ui-reindex.log`` (0600), which the page shows."""
    from recall.privacy.paths import ensure_private_dir, private_open

    log = reindex_log()
    ensure_private_dir(log.parent)
    with private_open(log, "w", encoding="utf-8") as out:
        return subprocess.Popen([sys.executable, "-P", "-m", "recall.ui.reindex", *([str(folder)] if folder else [])],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))


def reindex_log() -> Path:
    from recall.privacy.paths import recall_home

    return recall_home() / "logs" / "ui-reindex.log"


def last_warnings(keep: int = 5) -> list[str]:
    """The warnings of the page's last re-index (a skipped upload, with why), masked as made."""
    from recall.privacy.paths import read_text

    try:
        lines = read_text(reindex_log(), errors="replace").splitlines()
    except OSError:
        return []
    return [line.removeprefix("warning: ") for line in lines if line.startswith("warning: ")][:keep]


def limit_bytes() -> int:
    from recall.config.load import load_config

    return int(load_config().documents.max_file_mb * 1_000_000)


def _check_size(declared: str, limit: int, what: str = "the upload", rule: str = "([documents] max_file_mb)") -> None:
    """``Refused`` for a request that does not say its size (chunked: a browser's form always says
    it) or says more than ``limit`` and a form's own parts."""
    try:
        size = int(declared)
    except ValueError:
        raise Refused(f"{what} did not say its size (Content-Length): send it from the page's form", 411) from None
    if size > limit + FORM_OVERHEAD:
        raise Refused(f"{what} is {size / 1e6:,.1f} MB, over {limit / 1e6:g} MB {rule}", 413)


async def small_form(request: Any) -> Any:
    """The fields of a form that holds no file (every form of the page but the upload's: /try,
    /reindex, /questions), or ``Refused``: a body that does not say its size, or says more than
    ``SMALL_FORM_BYTES``, before a byte of it is read; a file part, or a field past the limit,
    before it is spooled to the temp folder (starlette's ``max_files=0``, ``max_part_size``)."""
    from starlette.exceptions import HTTPException

    _check_size(request.headers.get("content-length", ""), SMALL_FORM_BYTES, "the form",
                "(a message is at most 16,000 characters)")
    try:
        return await request.form(max_files=0, max_fields=8, max_part_size=SMALL_FORM_BYTES)
    except HTTPException as exc:  # a file part, too many fields, a field too long, a body cut
        raise Refused(f"the form holds what it cannot ({exc.detail}): send it from the page", 400) from None


async def handle(pages: Any, request: Any, job: Callable[[Any], str]) -> Any:
    """GET: the form (or how to enable it); POST: save, start indexing, back to the form.
    ``job``: the indexing job's state in words (``app.reindex_state``)."""
    from starlette.responses import RedirectResponse

    launch = pages.launch
    folder = launch.upload_dir
    if request.method == "GET":
        return pages.page(request, "upload.html", nav="upload", folder=folder, saved=request.query_params.get("saved"),
                          job=job(launch), error=None)
    if not launch.allow_writes or folder is None:
        return pages.page(request, "missing.html", 403, nav="upload",
                          what="uploads need `recall ui --allow-writes --upload-dir DIR`")
    limit = limit_bytes()
    try:
        _check_size(request.headers.get("content-length", ""), limit)  # before a byte is read or spooled
        form = await request.form(max_files=1, max_fields=4)
        try:
            if not pages.csrf_ok(form):
                raise Refused("this form is from another launch: reload")
            upload = form.get("file")
            if upload is None or isinstance(upload, str):
                raise Refused("no file chosen")
            saved = await save(folder, upload, limit)
        finally:
            await form.close()
    except Refused as exc:
        return pages.page(request, "upload.html", exc.status, nav="upload", folder=folder, saved=None,
                          job=job(launch), error=str(exc))
    request_indexing(launch, folder)
    from urllib.parse import quote

    from recall.privacy.masking import mask_path

    # the name as the page shows it: masked (it stays in the browser's history), as the index keeps it
    return RedirectResponse(f"/upload?saved={quote(mask_path(saved.name))}", status_code=303)
