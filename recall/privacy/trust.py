"""Whose files, whose daemon: the checks made before recall trusts anything under RECALL_HOME.

Two questions, one module, so every front end asks them the same way:

* **May a client trust this daemon?** (``run_files_problem``, ``peer_creds``; used by
  ``recall.ipc.client`` for every request, so by the hook, the MCP tool, ``status``, ``stop``.)
  The run folder, the status file, the socket, the lock and the secret must be this user's
  and closed to others; the process at the other end of the socket must run as this user
  (SO_PEERCRED / LOCAL_PEERCRED, from the kernel). A planted ``daemon.json`` or socket in a
  shared or pre-created home is refused, and the prompt never leaves this process.
* **Can recall use this home?** (``home_problem``, ``require_home``; used by ``Recall``, the
  daemon's start and ``recall serve``.) The home must be this user's, on a writable file
  system, and hold nothing another user owns (what one ``sudo recall serve`` leaves). The
  answer is one line that says what is wrong and the command that repairs it
  (``recall.errors.HomeUnusable``).

Imported by the hook on every message: standard library only, and ``pwd`` only for a message.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import struct
import sys
from pathlib import Path

# Write or read bits for group and others.
OTHERS_WRITE = 0o022
OTHERS_ANY = 0o077
# The folders under RECALL_HOME a front end walks for entries another user owns (recall writes
# there); the user's own files beside them (config.toml, notes) are checked one level deep.
WALKED = ("run", "logs", "index")

# Linux: struct ucred {pid_t pid; uid_t uid; gid_t gid}
_UCRED = struct.Struct("3i")
# macOS/BSD: struct xucred {u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]}
_XUCRED_PREFIX = struct.Struct("2I")
_XUCRED_SIZE = 4 + 4 + 2 + 2 + 16 * 4  # with the padding after cr_ngroups
SOL_LOCAL, LOCAL_PEERCRED = 0, 1


def my_uid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else 0


def user_name(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def peer_creds(conn: socket.socket) -> tuple[int | None, int | None]:
    """(pid, uid) of the process at the other end of a UNIX socket, from the kernel; the pid
    is None where the kernel does not say (macOS), both None when it cannot be read."""
    try:
        if hasattr(socket, "SO_PEERCRED"):  # Linux
            raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
            pid, uid, _gid = _UCRED.unpack(raw)
            return int(pid), int(uid)
        raw = conn.getsockopt(SOL_LOCAL, LOCAL_PEERCRED, _XUCRED_SIZE)  # macOS, BSD (getpeereid)
        return None, int(_XUCRED_PREFIX.unpack(raw[: _XUCRED_PREFIX.size])[1])
    except (OSError, struct.error):
        return None, None


def peer_uid(conn: socket.socket) -> int | None:
    return peer_creds(conn)[1]


def tcp_peer_uid(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The uid that owns the TCP socket at ``client`` connected to ``server`` on this machine
    (Linux: ``/proc/net/tcp`` and ``tcp6``, whose tables every process may read), or None
    when no such connection is listed (another machine, or not Linux)."""
    import ipaddress

    want = (ipaddress.ip_address(client[0]), client[1], ipaddress.ip_address(server[0]), server[1])
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            parts = row.split()
            if len(parts) > 7 and (*_proc_address(parts[1]), *_proc_address(parts[2])) == want:
                return int(parts[7])
    return None


_SOCK_DIAG_BY_FAMILY, _NETLINK_SOCK_DIAG, _NO_COOKIE = 20, 4, 0xFFFFFFFF


def tcp_socket_uid(local: tuple[str, int], remote: tuple[str, int]) -> int | None:
    """The uid that owns this machine's IPv4 TCP socket at ``local`` connected to ``remote``,
    asked of the kernel for that one socket (Linux's sock_diag, ~0.1 ms whatever the number of
    connections: ``tcp_peer_uid`` reads the whole table), or None where it cannot say."""
    if not hasattr(socket, "AF_NETLINK"):
        return None
    try:
        sockid = (struct.pack(">HH", local[1], remote[1]) + socket.inet_aton(local[0]) + bytes(12)
                  + socket.inet_aton(remote[0]) + bytes(12) + struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE))
        body = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as nl:
            nl.settimeout(0.2)
            nl.sendto(struct.pack("=IHHII", 16 + len(body), _SOCK_DIAG_BY_FAMILY, 1, 1, 0) + body, (0, 0))
            reply = nl.recv(65536)
        if struct.unpack_from("=H", reply, 4)[0] != _SOCK_DIAG_BY_FAMILY:
            return None  # an error: no such socket, or no sock_diag in this kernel
        return int(struct.unpack_from("=I", reply, 16 + 4 + 48 + 12)[0])  # inet_diag_msg's idiag_uid
    except (OSError, ValueError, struct.error):
        return None


def tcp_listener_problem(sock: socket.socket) -> str | None:
    """Why the process that accepted ``sock`` (connected to a TCP port on this machine) cannot be
    trusted, or None: another uid owns the port (a dead daemon's port taken by another local user
    got the prompt and the secret: an outside tester's H4). Where the kernel's tables say nothing
    (not Linux), None: the reply's signature is then the only check."""
    if sys.platform == "win32":
        return None
    try:
        server, me = sock.getpeername()[:2], sock.getsockname()[:2]
    except OSError:
        return None
    uid = tcp_socket_uid(server, me)  # the kernel, for this one socket; else its whole table
    uid = tcp_peer_uid(server, me) if uid is None else uid
    if uid is None or uid == my_uid():
        return None
    return (f"the process on recall's port {server[1]} runs as {user_name(uid)}, not as you "
            f"({user_name(my_uid())}), so nothing was sent to it; repair: `recall serve` (a new daemon, a new port)")


def process_start(pid: int) -> str | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/PID/stat``), or None where that
    cannot be read: a daemon's status file records its own, so a pid reused by another process
    is not taken for the daemon."""
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError, ValueError):
        return None


def _proc_address(field: str) -> tuple:
    """``0100007F:1F90`` (or 32 hex digits for IPv6) as (address, port); a v4-mapped IPv6
    address as its IPv4 one."""
    import ipaddress  # here, not at the top: this module is on the hook's path

    hexaddr, hexport = field.split(":")
    raw = bytes.fromhex(hexaddr)
    if sys.byteorder == "little":  # 32-bit words, each printed in host order
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    addr = ipaddress.ip_address(raw)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr, int(hexport, 16)


def not_mine(path: Path | str, st: os.stat_result, *, private: bool) -> str | None:
    """Why ``path`` (its ``lstat``) cannot be trusted, or None: another user's, a link, open
    to others (writable for a folder; any access for a private file or socket)."""
    if sys.platform == "win32":
        return None
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link, so recall will not use it; repair: `rm {path}` (recall makes it again)"
    if st.st_uid != my_uid():
        from recall.privacy.paths import recall_home

        return (f"{path} belongs to {user_name(st.st_uid)}, not to you, {user_name(my_uid())}, so recall "
                f"will not use it; {repair_for(Path(path), st.st_uid, recall_home())}")
    if st.st_mode & (OTHERS_ANY if private else OTHERS_WRITE):
        return (f"{path} is open to other users (mode {stat.S_IMODE(st.st_mode):o}), so recall will not use it; "
                f"repair: `chmod go-rwx {path}`")
    return None


def run_files_problem(run: Path, *names: str) -> str | None:
    """Why the daemon's files in ``run`` cannot be trusted, or None. Missing files are no
    problem here (no daemon); the folder itself must exist to be trusted."""
    try:
        problem = not_mine(run, os.stat(run), private=False)  # the folder may be reached by a link
    except OSError as exc:
        return f"{run}: {exc.strerror}"
    if problem:
        return problem
    for name in names:
        try:
            st = os.lstat(run / name)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"{run / name}: {exc.strerror}"
        problem = not_mine(run / name, st, private=True)
        if problem and not closed_up(run / name, st):
            return problem
    return None


def closed_up(path: Path, st: os.stat_result) -> bool:
    """Whether ``path`` (its ``lstat``), this user's own file that others could read but never
    write (a ``chmod -R go+rX`` of the home, a backup restored, a copy made under another umask),
    is now closed to them: nobody else could have changed it, so it is taken as it is, as the CLI
    takes it, instead of a hook refusing it without a word and never starting a daemon (an outside
    tester's, stop 55). A file others could write stays refused: its content may be theirs."""
    if sys.platform == "win32" or stat.S_ISLNK(st.st_mode) or st.st_uid != my_uid() or st.st_mode & OTHERS_WRITE:
        return False
    try:
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~OTHERS_ANY)
    except OSError:
        return False
    return True


def peer_problem(conn: socket.socket) -> str | None:
    """Why the daemon at the other end of ``conn`` cannot be trusted, or None."""
    if sys.platform == "win32":
        return None
    pid, uid = peer_creds(conn)
    if uid == my_uid():
        return None
    who = "an unknown user" if uid is None else user_name(uid)
    stop = f"`sudo kill {pid}`" if uid == 0 else f"`kill {pid}` as its user"
    return (f"the daemon on recall's socket (pid {pid}) runs as {who}, not as you ({user_name(my_uid())}), so "
            f"nothing was sent to it; repair: stop it ({stop}), then `recall serve`")


# --- can recall use this home? ------------------------------------------------------------


def repair_for(problem_path: Path, owner: int | None, home: Path) -> str:
    """The command that repairs a home holding ``problem_path`` owned by ``owner``."""
    me = user_name(my_uid()).split(" ")[0]
    sudo = "sudo " if my_uid() != 0 else ""
    if owner is not None and owner != my_uid() and (owner == 0 or Path(problem_path) != Path(home)):
        # root's files (a `sudo recall ...`), or another user's inside your own home
        return f"repair: `{sudo}chown -R {me} {home}`"
    if owner is not None and owner != my_uid():  # the home itself is someone else's
        return ("repair: give recall a folder of your own (`export RECALL_HOME=$HOME/.local/share/recall`) "
                "or unset RECALL_HOME")
    return f"repair: `chmod -R go-rwx {home}`"


def _walk_foreign(home: Path) -> tuple[Path, int] | None:
    """The first entry under ``home`` (one level, and all of ``WALKED``) owned by another user."""
    me = my_uid()
    try:
        top = list(os.scandir(home))
    except OSError:
        return None
    for entry in top:
        try:
            uid = entry.stat(follow_symlinks=False).st_uid
        except OSError:
            continue
        if uid != me:
            return Path(entry.path), uid
        if entry.name in WALKED and entry.is_dir(follow_symlinks=False):
            for dirpath, dirnames, filenames in os.walk(entry.path, followlinks=False):
                for name in (*dirnames, *filenames):
                    try:
                        uid = os.lstat(os.path.join(dirpath, name)).st_uid
                    except OSError:
                        continue
                    if uid != me:
                        return Path(dirpath, name), uid
    return None


def _writable_problem(home: Path) -> str | None:
    try:
        st = os.statvfs(home)
        if st.f_flag & getattr(os, "ST_RDONLY", 1):
            return (f"RECALL_HOME {home} is on a read-only file system, and recall writes its index, log and "
                    f"socket there; repair: remount it read-write, or point RECALL_HOME at a writable folder "
                    f"(`export RECALL_HOME=$HOME/.local/share/recall`)")
    except (OSError, AttributeError):
        pass
    effective = os.access in os.supports_effective_ids  # the ids recall writes with
    if not os.access(home, os.W_OK | os.X_OK, effective_ids=effective):
        return f"RECALL_HOME {home} is not writable by you; repair: `chmod u+rwx {home}`"
    return None


def _unreachable(home: Path, exc: OSError) -> str:
    """Why ``home`` cannot be reached, with the repair for that cause: a ``chmod`` of a path
    that runs through a file cannot work (stop 48, an outside tester's W01)."""
    if exc.errno == errno.ENOTDIR:
        blocker = next((p for p in reversed(home.parents) if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            return (f"RECALL_HOME {home} runs through {blocker}, which is a file, not a folder; repair: move it "
                    f"aside (`mv {blocker} {blocker}.old`), or point RECALL_HOME at a folder")
    if exc.errno == errno.EACCES:
        return (f"cannot reach RECALL_HOME {home}: a folder on its path is closed to you; repair: `ls -ld` the "
                "folders on the path and `chmod u+x` the one you own that lacks it, or point RECALL_HOME elsewhere")
    if exc.errno == errno.ELOOP:
        return (f"RECALL_HOME {home} runs through a loop of symbolic links; repair: remove the link, or point "
                "RECALL_HOME elsewhere")
    return f"cannot use RECALL_HOME {home} ({exc.strerror}); repair: point RECALL_HOME at a folder of yours"


def home_problem(home: Path) -> str | None:
    """One line saying why recall cannot use ``home`` and the command that repairs it, or
    None. A home that does not exist yet is no problem if it can be created."""
    if sys.platform == "win32":
        return None
    from recall.privacy.paths import utf8_name

    if not utf8_name(str(home)):  # the index files' paths go to FAISS, which takes UTF-8 only
        return (f"RECALL_HOME {ascii(str(home))} is not valid UTF-8, and recall writes files there whose path a "
                "library it uses takes in UTF-8 only; repair: point RECALL_HOME at a folder with a UTF-8 name")
    try:
        st = os.stat(home)
    except FileNotFoundError:
        parent = next((p for p in home.parents if p.exists()), None)
        if parent is None or _writable_problem(parent) is None:
            return None
        return (f"cannot create RECALL_HOME {home}: {parent} is not writable (read-only or not yours); "
                f"repair: `mkdir -p {home}` as its owner, or point RECALL_HOME at a writable folder")
    except OSError as exc:
        return _unreachable(home, exc)
    if not stat.S_ISDIR(st.st_mode):
        if not stat.S_ISREG(st.st_mode):  # /dev/null named as RECALL_HOME: moving a device breaks the system
            from recall.privacy.regular import file_kind

            return (f"RECALL_HOME {home} is {file_kind(st.st_mode)}, not a folder; repair: point RECALL_HOME at "
                    "a folder of yours (or unset it)")
        return f"RECALL_HOME {home} is not a folder; repair: move it aside (`mv {home} {home}.old`)"
    if st.st_uid != my_uid():
        return (f"RECALL_HOME {home} belongs to {user_name(st.st_uid)}, not to you, {user_name(my_uid())}, "
                f"so recall will not use it; {repair_for(home, st.st_uid, home)}")
    found = _walk_foreign(home)
    if found is not None:
        path, uid = found
        return (f"{path} belongs to {user_name(uid)}, not to you, {user_name(my_uid())}: recall cannot trust "
                f"or write it; {repair_for(path, uid, home)}")
    return _writable_problem(home)


def require_home(home: Path) -> Path:
    """``home``, created 0700 if missing, after ``home_problem`` found nothing; raises
    ``recall.errors.HomeUnusable`` with its line otherwise."""
    from recall.errors import HomeUnusable
    from recall.privacy.paths import ensure_private_dir

    problem = home_problem(home)
    if problem is None:
        try:
            return ensure_private_dir(home)
        except OSError as exc:
            problem = home_problem(home) or f"cannot create RECALL_HOME {home} ({exc.strerror})"
    raise HomeUnusable(problem)


def startable(program: str) -> bool:
    """Whether recall may start ``program``, a Python a file names that someone else may have
    written (a project's agent settings: a cloned repository's, a shared checkout's): an absolute
    path to a file named like a Python interpreter, which, as named and as it resolves, sits in
    folders that only this user or root could have changed, and is itself such a file (a folder
    open to others only with its sticky bit, as /tmp). ``recall status`` ran whatever such a file
    named, from the current folder too: another local user's program, as this user (an outside
    tester's H1)."""
    import re

    if sys.platform == "win32":
        return True
    if not os.path.isabs(program) or not re.fullmatch(r"python[0-9.]*", os.path.basename(program)):
        return False
    trusted = {my_uid(), 0}
    for path in dict.fromkeys([os.path.normpath(program), os.path.realpath(program)]):
        parts = path.split(os.sep)
        for i in range(1, len(parts) + 1):
            current = os.sep.join(parts[:i]) or os.sep
            try:
                st = os.lstat(current)
            except OSError:
                return False
            folder_shared = stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX
            if st.st_uid not in trusted or (st.st_mode & OTHERS_WRITE and not folder_shared
                                            and not stat.S_ISLNK(st.st_mode)):
                return False
    return True
