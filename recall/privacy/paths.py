"""Where recall keeps its files, and where Claude Code keeps the user's.

Long because: every path recall opens goes through here (where it is, how it is opened, what a
failure to open it tells the user), and the hook imports this one stdlib-only module for it.

Everything recall writes lives under one folder, ``RECALL_HOME`` (env var), default a
per-user data folder. Tests point it at a temp dir. Folders are 0700 and files 0600:
the index holds the user's notes, and nobody else should read them.

This module is imported by the hook: stdlib only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
from pathlib import Path

from recall.privacy.regular import FILE_MODE, NotAFile, file_kind, open_regular, read_regular

DIR_MODE = 0o700


def home_folder() -> Path:
    """The user's home folder; ``recall.errors.HomeUnusable`` (one line, with the repair) where
    Python cannot tell it: no HOME, and a user id with no entry in the password database (a
    container run as an arbitrary uid). ``Path.home()`` raised RuntimeError, a traceback from
    every command (stop 47, an outside tester)."""
    try:
        return Path.home()
    except (RuntimeError, KeyError):
        from recall.errors import HomeUnusable

        raise HomeUnusable("recall cannot tell your home folder: HOME is not set and your user id has no entry in "
                           "the password database; set HOME (`export HOME=/path/to/your/home`), or RECALL_HOME and "
                           "CLAUDE_CONFIG_DIR") from None


def expand_user(value: str | Path, what: str) -> Path:
    """``value`` with a leading ``~`` or ``~user`` made absolute; ``HomeUnusable`` naming
    ``what`` (the setting it came from) when that home cannot be told (``~nosuchuser/x``)."""
    value = Path(value)
    if not str(value).startswith("~"):
        return value
    if str(value) == "~" or str(value).startswith("~/"):
        return home_folder() / str(value)[2:]
    try:
        return value.expanduser()
    except (RuntimeError, KeyError):
        from recall.errors import HomeUnusable

        raise HomeUnusable(f"{what} {str(value)!r} names the home folder of a user this machine does not know; "
                           "write the folder's full path there") from None


DB_NAME = "recall.db"  # the store: notes, chunks, index runs (recall.store), at the top of the home


def store_file() -> Path:
    """The store's file in the home: where nothing is indexed yet, it is not there."""
    return recall_home() / DB_NAME


def recall_home() -> Path:
    env = os.environ.get("RECALL_HOME")
    if env and env != env.strip():
        # Pasted with a space or a line end (an agent's `env` setting): it named a new, empty home
        # beside the real one, the space unseen (an outside tester's, stop 60).
        from recall.errors import HomeUnusable

        raise HomeUnusable(f"RECALL_HOME {env!r} begins or ends with white space, so it names another folder "
                           f"than the one meant: set it without (export RECALL_HOME=\"{env.strip()}\")")
    home = expand_user(env, "RECALL_HOME") if env else default_home()
    if not home.is_absolute():  # a relative RECALL_HOME or HOME: read from where the command runs,
        home = home.absolute()  # once: the daemon it starts (in run/) and every child see the same
        os.environ["RECALL_HOME"] = str(home)  # folder, not a second home inside the first
    return home


def default_home(plain: bool = False) -> Path:
    """The home without RECALL_HOME; ``plain``: without XDG_DATA_HOME and LOCALAPPDATA too, the home
    an agent started from a desktop launcher or an IDE finds (``recall install`` pins any other)."""
    if sys.platform == "darwin":
        return home_folder() / "Library" / "Application Support" / "recall"
    if sys.platform == "win32":
        local = None if plain else os.environ.get("LOCALAPPDATA")
        return Path(local or home_folder() / "AppData" / "Local") / "recall"
    xdg = "" if plain else os.environ.get("XDG_DATA_HOME", "")  # a relative one is ignored (the XDG spec)
    return (Path(xdg) if os.path.isabs(xdg) else home_folder() / ".local" / "share") / "recall"


def home_arg(argv: list[str]) -> None:
    """``--home PATH`` on the command line of the hook, the read tracker or the MCP server (what
    ``recall install`` pins there, ``recall.agents.install.pinned_home``): RECALL_HOME for this
    process and its children, whatever the agent's environment says."""
    for i, arg in enumerate(argv[:-1]):
        if arg == "--home" and os.path.isabs(argv[i + 1]):
            os.environ["RECALL_HOME"] = argv[i + 1]
            return


def relative_home() -> str | None:
    """``RECALL_HOME`` when it is a relative path (``rh``, ``./notes-home``): a home that depends on
    where the reader runs. A command reads it from there, but an agent runs the hook and the MCP
    server in each project, where it names a folder of its own (an outside tester's, stop 56)."""
    env = os.environ.get("RECALL_HOME", "")
    return env if env and not env.startswith("~") and not os.path.isabs(env) else None


RELATIVE_HOME = ("RECALL_HOME is {home!r}, a relative path: an agent runs recall's hook and MCP server in each "
                 "project's folder, where it names another folder; set it to a full path (export "
                 "RECALL_HOME=\"$PWD/{home}\") and run `recall install` again")


def user_config_path() -> Path:
    """The user's config file: ``RECALL_CONFIG``, else ``RECALL_HOME/config.toml``. A relative
    ``RECALL_CONFIG`` is read from where the command runs, once, as ``RECALL_HOME`` is: the
    daemon it starts (in run/) and every child read the same file."""
    env = os.environ.get("RECALL_CONFIG")
    if not env:
        return recall_home() / "config.toml"
    path = expand_user(env, "RECALL_CONFIG")
    if not path.is_absolute():
        path = path.absolute()
        os.environ["RECALL_CONFIG"] = str(path)
    return path


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and any missing parents) 0700, whatever the umask was; an existing
    ``path`` is made 0700 too, unless it is a home that holds more than recall's own
    (``shared_home``)."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(parents=True, exist_ok=True)
    if sys.platform != "win32":
        for p in {path, *missing}:
            if p in missing or not shared_home(p):
                os.chmod(p, DIR_MODE)
    return path


def shared_home(path: Path) -> bool:
    """Whether ``path`` is recall's home and holds anything recall does not keep there
    (``HOME_ENTRIES``): RECALL_HOME pointed at an existing folder, whose own mode is left."""
    try:
        return path == recall_home() and not all(recalls(n) for n in os.listdir(path))
    except OSError:
        return False


def file_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of ``path``, None when absent: a file or folder deleted, replaced or made
    again is another."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def folder_gone(root: str) -> bool:
    """Whether ``root`` is no folder any more: missing, or something else in its place, a loop of
    links among them (it crashed every index: an outside tester's, stop 56); a folder that cannot
    be looked at now, a permission or a disk's error, is not gone."""
    try:
        return not stat.S_ISDIR(os.stat(root).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError as exc:
        return exc.errno == errno.ELOOP


def make_missing_dirs(path: Path) -> Path:
    """Create ``path`` and any missing parents 0700 whatever the umask, leaving the folders that
    already exist as they are (an agent's settings folder: under umask 000 a plain ``mkdir``
    made ``~/.codex`` 0777, and anyone could plant a hook in it)."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(parents=True, exist_ok=True)
    if sys.platform != "win32":
        for p in missing:
            os.chmod(p, DIR_MODE)
    return path


_made_private: set[str] = set()

# What recall keeps at the top of its home. In a home that holds more (RECALL_HOME pointed at a
# project, ~), make_tree_private closes up these only: an outside tester's scripts lost their
# execute bits. tests/core/privacy/test_home_entries.py checks that the list is whole.
HOME_ENTRIES = frozenset({
    "config.toml", "calibration.toml", "hook.json", "recall.db", "recall.db-wal", "recall.db-shm", "recall.db-journal",
    "index", "logs", "run", "reports", "models", "usage", "team.key", "installed.json", "indexing.json",
    "questions-asked.json", "questions-bought.json", "questions.lock", "questions.log", "questions-offer.txt",
    "failed-documents.json"})


def recalls(name: str) -> bool:
    """Whether a top-level entry of a home named ``name`` is one recall keeps there (its
    temporary files included: ``.<name>.<pid>.tmp``, ``replace_private``)."""
    if name.startswith(".") and name.endswith(".tmp"):
        name = name[1:].rsplit(".", 2)[0]
    return name in HOME_ENTRIES


def make_tree_private(root: Path) -> int:
    """Close up what recall keeps under ``root`` that others could read or enter: folders to
    0700, files to 0600 (a home made 0777, files left 0666 by an old version or a copy). In a
    home of recall's own, everything and the home itself; in one that holds other things,
    only recall's entries (``HOME_ENTRIES``), the home's own mode and the rest left as they
    are. One walk per process, symlinks not followed (and left alone); returns how many were
    fixed."""
    key = str(root)
    if sys.platform == "win32" or key in _made_private or not root.is_dir():
        return 0
    try:
        names = os.listdir(root)
    except OSError:
        return 0
    own = all(recalls(n) for n in names)  # not shared_home(): root need not be RECALL_HOME
    fixed = _fix_mode(str(root), DIR_MODE) if own else 0
    for name in names:
        top = os.path.join(root, name)
        if not (own or recalls(name)):
            continue
        if not os.path.isdir(top) or os.path.islink(top):
            fixed += _fix_mode(top, FILE_MODE)
            continue
        for dirpath, _dirnames, filenames in os.walk(top, followlinks=False):
            fixed += _fix_mode(dirpath, DIR_MODE)
            fixed += sum(_fix_mode(os.path.join(dirpath, f), FILE_MODE) for f in filenames)
    _made_private.add(key)
    return fixed


def _fix_mode(name: str, mode: int) -> int:
    try:
        st = os.lstat(name)
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
            os.chmod(name, mode)
            return 1
    except FileNotFoundError:
        pass  # removed meanwhile (a daemon's socket, a temp file)
    return 0


MAX_OWN_FILE = 64 << 20  # a state, log or settings file of recall's or an agent's: far below this


# What recall says of a questions or negatives file linked out of its folder, and the repair.
LINK_REPAIR = "replace the link by a copy of its file: `cp --remove-destination \"$(readlink -f F)\" F`"
LINKED_OUT = f"symlink leads outside the folder; not read ({LINK_REPAIR})"


def leads_outside(path: Path, root: Path | None = None) -> bool:
    """Whether ``path`` is a symlink to something outside ``root`` (its own folder by default): a
    notes folder's ``questions.jsonl`` linked to ``~/.aws/credentials`` by a teammate is not read,
    nor a document or a note linked out of the folder indexed."""
    try:
        return path.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(
            os.path.realpath(root if root is not None else path.parent))
    except (OSError, ValueError):
        return True


def read_bytes(path: Path, max_bytes: int = MAX_OWN_FILE) -> bytes:
    """``Path.read_bytes`` for a file recall keeps or an agent's settings: ``read_regular``."""
    return read_regular(path, max_bytes)[0]


def read_text(path: Path, errors: str = "strict", max_bytes: int = MAX_OWN_FILE) -> str:
    """``Path.read_text`` (UTF-8) for a file recall keeps or an agent's settings: ``read_regular``."""
    return read_bytes(path, max_bytes).decode("utf-8", errors)


def private_open(path: Path, mode: str = "w", encoding: str | None = "utf-8"):
    """Open a file for writing that only the user can read (created 0600; ``open_regular``)."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else 0)
    fd = open_regular(path, flags, FILE_MODE)
    try:
        if "a" not in mode:
            os.ftruncate(fd, 0)
        if sys.platform != "win32":
            os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    if "b" in mode:
        return os.fdopen(fd, mode)
    return os.fdopen(fd, mode, encoding=encoding)


def replace_private(path: Path, data: str | bytes, keep_mode: bool = False) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically (a 0600 temporary file
    beside it, then a rename): a reader sees the old file or the new one, never half of one.
    ``keep_mode``: a file the user owns there, writable by nobody else, keeps its mode (a notes
    folder's ``questions.jsonl`` the user made 0644 for a shared repository), any other is 0600.
    The temporary files a writer killed before its rename left for this name go first (``_stale``)."""
    kept = None
    with contextlib.suppress(FileNotFoundError):  # a device, pipe or folder there is not ours to replace:
        if not stat.S_ISREG(mode := (st := os.lstat(path)).st_mode) and not stat.S_ISLNK(mode):  # root renamed a
            raise NotAFile(file_kind(mode), path)  # file over /dev/null (an outside tester's AI01)
        if keep_mode and stat.S_ISREG(mode) and st.st_uid == os.getuid() and not mode & 0o022:
            kept = stat.S_IMODE(mode) & 0o644
    _stale(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with private_open(tmp, "wb" if isinstance(data, bytes) else "w") as fh:
            fh.write(data)
            if kept is not None and sys.platform != "win32":
                os.fchmod(fh.fileno(), kept)
        os.replace(tmp, path)
    except OSError as exc:
        exc.filename = exc.filename or str(path)  # a write's error names no file: this one, for its line
        raise
    finally:
        with contextlib.suppress(OSError):  # gone once renamed; something else there is not ours to remove
            tmp.unlink()


def _stale(path: Path) -> None:
    """Remove the ``.NAME.PID.tmp`` files ``replace_private`` left beside ``path`` when a writer was
    killed between its write and its rename (SIGKILL, a power cut): only that pattern for this very
    name, only a regular file of the user's, only of a process no longer alive (they stayed for
    good in the user's notes folder, ~/.claude, beside config.toml)."""
    head = f".{path.name}."
    try:
        names = [n for n in os.listdir(path.parent) if n.startswith(head) and n.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        pid = name[len(head):-len(".tmp")]
        if not pid.isdigit() or int(pid) == os.getpid() or pid_exists(int(pid)):
            continue
        with contextlib.suppress(OSError):
            st = os.lstat(path.parent / name)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid():
                os.unlink(path.parent / name)


def pid_exists(pid: int, others: bool = True) -> bool:
    """Whether process ``pid`` exists, by a signal 0; one of another user's counts as ``others``
    says (recall.ipc.client.pid_alive: not ours, so not our daemon). On Windows, where a signal 0
    would end the process, always True. With ``others``, a pid that cannot be asked about counts
    as existing too (left alone); without, its error is raised."""
    if sys.platform == "win32":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return others
    except (OverflowError, OSError):
        if others:
            return True
        raise
    return True


def run_dir() -> Path:
    """Folder of the daemon's socket, lock and status file."""
    return recall_home() / "run"


def daemon_log(home: Path | None = None) -> Path:
    """The daemon's log (``recall.daemon.logs`` writes and rotates it)."""
    return (home or recall_home()) / "logs" / "daemon.log"


def daemon_logs(home: Path | None = None) -> list[Path]:
    """The daemon's log files, oldest first (backups .N ... .1, then the live file)."""
    live = daemon_log(home)
    backups = [p for p in live.parent.glob(live.name + ".*") if p.suffix[1:].isdigit()]
    return sorted(backups, key=lambda p: -int(p.suffix[1:])) + [live]


def claude_config_dir() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return expand_user(env, "CLAUDE_CONFIG_DIR") if env else home_folder() / ".claude"


_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")
PATH_MAX = 4096  # Linux's; macOS's is 1024


KEY_MAX = 200  # Claude Code cuts a longer key there and adds a hash of the path


def claude_key(path: str) -> str:
    """Claude Code's folder name for ``path``, as its JavaScript computes it on UTF-16 units:
    each unit not an ASCII letter or digit -> '-' (a character past U+FFFF is two), and a key
    longer than 200 cut there, ``-`` and the path's Java string hash in base 36 added. recall
    counted characters and never cut: a project with an emoji or a long path in its name had
    its memory folder looked for under another name, never indexed (stop 49, AA08)."""
    key = _NON_ALNUM.sub("-", path)
    if not path.isascii() and len(path.encode("utf-16-le", "surrogatepass")) // 2 != len(path):
        # characters past U+FFFF: two units each
        key = _NON_ALNUM.sub(lambda m: "-" * (2 if ord(m.group()) > 0xFFFF else 1), path)
    if len(key) <= KEY_MAX:
        return key
    data = path.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (h * 31 + (data[i] | data[i + 1] << 8)) & 0xFFFFFFFF
    h = abs(h - (1 << 32) if h >= 1 << 31 else h)
    digits = ""
    while True:
        h, r = divmod(h, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
        if not h:
            break
    return f"{key[:KEY_MAX]}-{digits}"


def encode_project_path(path: Path | str, resolve: bool = True) -> str:
    """Claude Code's key for a project: the absolute path, ``claude_key``.
    ``resolve=False``: ``path`` is resolved already (``project_root``'s answer), and is not
    looked at on the disk again (one on a hung mount never answers)."""
    return claude_key(str(Path(path).resolve() if resolve else path))


def shown_project_key(root: Path) -> str:
    """The key of the project at ``root`` (``project_root``'s answer) for a log line or a page:
    a secret in a folder's name masked before the path is encoded (encoded, a token's shape is
    lost, ``ghp_`` becoming ``ghp-``)."""
    from recall.privacy.masking import mask_path

    return claude_key(mask_path(str(root)))


def project_root(cwd: Path | str) -> Path:
    """The repository ``cwd`` is in (what Claude Code keys memory by): ``checkout_root``, or
    for a linked worktree its main worktree's (``recall.privacy.worktree``)."""
    from recall.privacy.worktree import main_worktree

    return main_worktree(checkout_root(cwd))


def checkout_root(cwd: Path | str) -> Path:
    """The git root above ``cwd`` (a linked worktree's own: where Claude Code keeps its
    sessions' transcripts), else ``cwd``.

    Walks up looking for ``.git`` instead of running git: the hook calls this on every
    message and a subprocess would cost ~5 ms. A ``cwd`` longer than any path the system
    takes (``PATH_MAX``) names no folder: no project, without walking it (every parent of a
    100,000-character path is a copy of most of it).
    """
    if len(str(cwd)) > PATH_MAX:
        return Path("/")
    try:
        here = candidate = Path(cwd).resolve()
        while True:
            if (candidate / ".git").exists():
                return candidate
            if candidate.parent == candidate:
                return here
            candidate = candidate.parent
    except (ValueError, OSError, RuntimeError):  # a NUL, a lone surrogate, a loop: no path, so no project
        return Path("/")


# The owner of a memory folder every project uses (an ``autoMemoryDirectory`` in the user's own
# settings): no project's key, which only ASCII letters, digits and '-' spell.
EVERY_PROJECT = "*"


def project_key(cwd: Path | str) -> str:
    """The key of the project ``cwd`` is in: its git root, encoded as Claude Code does."""
    return encode_project_path(project_root(cwd))


def projects_dir() -> Path:
    return claude_config_dir() / "projects"


def git_toplevel(cwd: Path | str) -> Path | None:
    """Ask git itself (used by the CLI, not the hook)."""
    import subprocess  # not at the top: the hook imports this module on every message

    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=cwd, capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def utf8_name(name: str) -> bool:
    """Whether a name from the file system decoded as UTF-8 (undecodable bytes come back as
    lone surrogates, which no store, JSON line, terminal or native library can carry)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def os_error_line(exc: OSError) -> str:
    """One line for a file or folder recall cannot use: which, what is wrong, what to do."""
    from recall.privacy.masking import mask_path

    # A rename onto a folder (``x.tmp`` -> ``x``) fails at its destination: name that one.
    where = exc.filename2 if exc.filename2 and exc.errno in (errno.EISDIR, errno.ENOTEMPTY) else exc.filename
    if isinstance(exc, NotAFile):
        shown = mask_path(str(where)) if where else "a file recall keeps"
        return f"{shown} is {exc}, not a file: move it aside (`mv {shown} {shown}.old`) and run the command again"
    path = mask_path(str(where)) if where else "a file under RECALL_HOME"
    if exc.errno == errno.EEXIST and where and os.path.islink(where) and not os.path.exists(where):
        return (f"{path} is a link to {mask_path(os.readlink(where))}, which does not exist: create what it "
                "points to (a drive not mounted?) or remove the link, then run the command again")
    aside = _move_aside(str(where) if where else "", exc.errno == errno.ENOTDIR)  # the command, not "`mv` it"
    repair = {
        errno.EISDIR: f"a folder is where recall keeps a file: move it aside ({aside}) and run the command again",
        errno.ENOTDIR: f"a file is where recall keeps a folder (is RECALL_HOME a file?): move it aside ({aside}) "
                       "or point RECALL_HOME at a folder",
        errno.EEXIST: "a file is where a folder should be (is RECALL_HOME or CLAUDE_CONFIG_DIR a file?): move it "
                      f"aside ({aside}) or point the variable at a folder",
        errno.EACCES: "you cannot read or write it: `ls -l` it, then `chown` or `chmod u+rw` it, or point "
                      "RECALL_HOME elsewhere",
        errno.EPERM: "the system refuses the change (immutable? `lsattr` it, `chattr -i` it)",
        errno.ELOOP: "a loop of symbolic links: remove the link",
        errno.EFBIG: "a file-size limit (`ulimit -f`) or a quota stopped the write: raise it, then run the command "
                     "again",
        errno.ENAMETOOLONG: "the path is longer than the system takes: use a shorter one (the folder named "
                            "on the command line, or RECALL_HOME)",
        errno.EMFILE: f"this process ran out of file descriptors ({_open_files_limit()}): raise it "
                      f"(`ulimit -n {_raised_open_files()}`) and run the command again; nothing is damaged",
        errno.ENFILE: "the system ran out of open files: close some programs (or raise fs.file-max), then run "
                      "the command again; nothing is damaged",
        errno.ENOMEM: "the system is out of memory: free some, then run the command again; nothing is damaged",
    }.get(exc.errno or 0, "`recall status` says what else is wrong")
    if exc.errno in SHORT_OF:  # the machine ran short, not that file: the file only says where
        return f"{repair[0].upper()}{repair[1:]} (while opening {path})"
    return f"{path}: {exc.strerror or type(exc).__name__}; {repair}"


# What the machine ran short of, not what a file holds: said as itself, never as damage (stop 58).
SHORT_OF = (errno.EMFILE, errno.ENFILE, errno.ENOMEM)


def _open_files_soft() -> int | None:
    """This process's soft limit on open files (``ulimit -n``), or None where it cannot be read."""
    try:
        import resource

        return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, ValueError, OSError):
        return None


def _raised_open_files() -> int:
    """A limit on open files worth raising to: 4,096, or twice the one in force where that is
    already as high (advising 4,096 under 20,000 told the user to lower it)."""
    soft = _open_files_soft()
    if soft is None:
        return 4096
    import resource

    return 4096 if soft == resource.RLIM_INFINITY or soft < 2048 else 2 * soft


def _open_files_limit() -> str:
    soft = _open_files_soft()
    return "`ulimit -n`" if soft is None else f"`ulimit -n` is {soft}"


def _move_aside(where: str, a_parent: bool) -> str:
    """The `mv` that moves ``where`` aside, quoted for a shell (a folder at `current` was "`mv` it":
    which, and where to: stop 57); ``a_parent``: the file in the way is the first of its parents
    that is not a folder (ENOTDIR names the path below it)."""
    import shlex

    from recall.privacy.masking import mask_path

    if a_parent:
        where = next((str(p) for p in reversed(Path(where).parents) if p.exists() and not p.is_dir()), where)
    if not where:
        return "`mv` it"
    shown = shlex.quote(mask_path(where))
    return f"`mv {shown} {shown}.old`"
