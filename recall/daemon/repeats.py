"""What each agent session was handed lately: a note handed over in a session is not handed over
again for that session's next ``[hook] repeat_after`` messages (the agent has its headline in its
context already; an outside tester saw the same headline on every message about one topic).

The session is the agent's ``session_id`` as the hook (``recall.agents.wire.session_of``) or the
MCP tool sends it. Held in the daemon's memory only and never written or logged: each session
under a keyed hash of its id (the key made at random by each daemon, so the id itself is held
nowhere), at most ``MAX_SESSIONS`` sessions (the one asked least recently dropped) and
``MAX_NOTES`` notes each (the one handed over longest ago dropped), all lost when the daemon
ends (a new daemon hands each note over once more). Every message the daemon is asked about in a
session counts, those that got nothing too; a message that never reaches the daemon (too short,
a turn nobody typed) does not.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from typing import NamedTuple

MAX_SESSIONS = 512  # sessions held at once: an agent's sessions of a day or two, in well under a MB
MAX_NOTES = 128  # notes held per session: 3 headlines a message for 40 messages
MAX_UNSENT = 256  # answers whose notes are taken back if the hook says it could not hand them over


class Turn(NamedTuple):
    """One message of a session: whose (the session's hashed key) and its number in the session."""

    key: bytes
    number: int


class Repeats:
    """The notes each session was handed, by message number. Thread-safe: the daemon's workers
    answer several messages at once."""

    def __init__(self, max_sessions: int = MAX_SESSIONS, max_notes: int = MAX_NOTES) -> None:
        self.max_sessions = max_sessions
        self.max_notes = max_notes
        self._secret = os.urandom(16)
        self._lock = threading.Lock()
        # hashed session -> [messages asked, {note: the message number it was handed over on}]
        self._sessions: OrderedDict[bytes, tuple[list[int], OrderedDict[str, int]]] = OrderedDict()
        self._sent: OrderedDict[str, tuple[Turn, tuple[str, ...]]] = OrderedDict()

    def __len__(self) -> int:
        """Sessions held (``recall.daemon.handlers.Commands.cmd_status``)."""
        with self._lock:
            return len(self._sessions)

    def turn(self, session: str) -> Turn:
        """Count one more message of ``session``; the session becomes the most recent one."""
        key = hashlib.blake2b(session.encode("utf-8", "surrogatepass"), key=self._secret, digest_size=16).digest()
        with self._lock:
            entry = self._sessions.pop(key, None) or ([0], OrderedDict())
            self._sessions[key] = entry
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
            entry[0][0] += 1
            return Turn(key, entry[0][0])

    def held(self, turn: Turn, notes: list[str], repeat_after: int) -> dict[str, int]:
        """Of ``notes``, those handed over in the session within the last ``repeat_after``
        messages before ``turn``: note -> how many messages ago."""
        with self._lock:
            entry = self._sessions.get(turn.key)
            given = entry[1] if entry is not None else {}
            ago = {note: turn.number - given[note] for note in notes if note in given}
        return {note: n for note, n in ago.items() if 0 < n <= repeat_after}

    def gave(self, turn: Turn, notes: list[str], ref: str = "") -> None:
        """``notes`` were handed over on ``turn`` (``ref``: the answer's, for ``taken_back``)."""
        if not notes:
            return
        with self._lock:
            entry = self._sessions.get(turn.key)
            if entry is None:  # dropped meanwhile by a flood of other sessions
                return
            given = entry[1]
            for note in notes:
                given.pop(note, None)
                given[note] = turn.number
            while len(given) > self.max_notes:
                given.popitem(last=False)
            if ref:
                self._sent[ref] = (turn, tuple(notes))
                while len(self._sent) > MAX_UNSENT:
                    self._sent.popitem(last=False)

    def taken_back(self, ref: str) -> None:
        """The answer ``ref`` never reached the agent (``unsent``): its notes count as not handed over."""
        with self._lock:
            sent = self._sent.pop(ref, None)
            entry = None if sent is None else self._sessions.get(sent[0].key)
            if sent is None or entry is None:
                return
            turn, notes = sent
            for note in notes:
                if entry[1].get(note) == turn.number:
                    del entry[1][note]
