"""Who is calling: the peer's uid from the kernel; only this user may ask."""

from __future__ import annotations

import os
import socket
import struct

# Test-only: a uid the daemon expects instead of its own, to exercise refusal
# without a second user account. Only ever makes the daemon refuse more.
EXPECTED_UID_ENV = "RECALL_DAEMON_EXPECTED_UID"


# Linux: struct ucred {pid_t pid; uid_t uid; gid_t gid}
_UCRED = struct.Struct("3i")
# macOS/BSD: struct xucred {u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]}
_XUCRED_PREFIX = struct.Struct("2I")
_XUCRED_SIZE = 4 + 4 + 2 + 2 + 16 * 4  # with the padding after cr_ngroups
SOL_LOCAL, LOCAL_PEERCRED = 0, 1


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end of a UNIX socket, from the kernel."""
    try:
        if hasattr(socket, "SO_PEERCRED"):  # Linux
            raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
            return int(_UCRED.unpack(raw)[1])
        raw = conn.getsockopt(SOL_LOCAL, LOCAL_PEERCRED, _XUCRED_SIZE)  # macOS, BSD (getpeereid)
        return int(_XUCRED_PREFIX.unpack(raw[: _XUCRED_PREFIX.size])[1])
    except (OSError, struct.error):
        return None


def expected_uid() -> int:
    override = os.environ.get(EXPECTED_UID_ENV)
    return int(override) if override else os.getuid()


def check_peer(uid: int | None, expected: int | None = None) -> bool:
    """Only this user may ask. An unknown uid is refused (fail closed)."""
    return uid is not None and uid == (expected_uid() if expected is None else expected)

