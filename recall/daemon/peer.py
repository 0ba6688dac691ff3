"""Who is calling: the peer's uid from the kernel; only this user may ask."""

from __future__ import annotations

import os

from recall.privacy.trust import peer_uid

__all__ = ["check_peer", "expected_uid", "peer_uid"]

# Test-only: a uid the daemon expects instead of its own, to exercise refusal
# without a second user account. Only ever makes the daemon refuse more.
EXPECTED_UID_ENV = "RECALL_DAEMON_EXPECTED_UID"


def expected_uid() -> int:
    override = os.environ.get(EXPECTED_UID_ENV)
    return int(override) if override else os.getuid()


def check_peer(uid: int | None, expected: int | None = None) -> bool:
    """Only this user may ask. An unknown uid is refused (fail closed)."""
    return uid is not None and uid == (expected_uid() if expected is None else expected)

