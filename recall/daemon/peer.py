"""Who is calling: the peer's uid from the kernel; only this user may ask."""

from __future__ import annotations

import os
import socket

from recall.privacy.trust import peer_uid, tcp_socket_uid

__all__ = ["check_peer", "expected_uid", "peer_uid", "tcp_peer_allowed"]

# Test-only: a uid the daemon expects instead of its own, to exercise refusal
# without a second user account. Only ever makes the daemon refuse more.
EXPECTED_UID_ENV = "RECALL_DAEMON_EXPECTED_UID"


def expected_uid() -> int:
    override = os.environ.get(EXPECTED_UID_ENV)
    return int(override) if override else os.getuid()


def check_peer(uid: int | None, expected: int | None = None) -> bool:
    """Only this user may ask. An unknown uid is refused (fail closed)."""
    return uid is not None and uid == (expected_uid() if expected is None else expected)



def tcp_peer_allowed(sock: socket.socket) -> bool:
    """Whether a TCP peer is this user's, asked of the kernel before a byte is read (another
    user's wrong-secret requests each wrote a log line: an outside tester's H3); where the
    kernel cannot say (not Linux), the secret decides."""
    try:
        uid = tcp_socket_uid(sock.getpeername()[:2], sock.getsockname()[:2])
    except OSError:  # gone already
        return False
    return uid is None or check_peer(uid)
