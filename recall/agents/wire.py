"""What the agents' hooks share on the wire: the event most agents send (a JSON object with
``prompt`` and ``cwd``), and the ``hookSpecificOutput.additionalContext`` envelope all four
print, each with its own event name and cap. Standard library and ``recall.privacy.safetext``
only: the hook imports this on every message."""

from __future__ import annotations

import json
import os
import select
import time
from collections.abc import Callable
from typing import NamedTuple

# An event larger than this is not a message someone typed (a pasted megabyte is still answered,
# cut to the model's window): parsing 50 MB of JSON alone took longer than the hook's whole
# budget (452 ms). It is drained unread until the hook's deadline, so the agent's write does not
# fail, and gets nothing.
MAX_EVENT_BYTES = 4 << 20
_DRAIN = 1 << 20
# How long a hook with no budget of its own (read tracking; a prompt hook whose settings cannot
# be read, which says nothing) waits for the end of its event: an agent writes it at once.
READ_WAIT_S = 5.0


def read_event_bytes(stream, deadline: float | None = None) -> bytes | None:
    """All of ``stream`` (a hook's stdin, binary) up to its end or to the end of a whole JSON
    object, or None when it holds more than ``MAX_EVENT_BYTES`` (the rest is read and dropped,
    never parsed) or neither end comes by ``deadline`` (``time.monotonic()``): a writer that
    stalls, or an endless stdin (``</dev/zero``), costs the hook its budget and no more; one
    that writes its whole event and keeps its end open is answered (it got nothing; stop 49, an
    outside tester's Z09)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's BytesIO): read as it is
        data = stream.read(MAX_EVENT_BYTES + 1)
        return data if len(data) <= MAX_EVENT_BYTES else None
    chunks: list[bytes] = []
    size = 0
    while _readable(fd, deadline):
        chunk = os.read(fd, _DRAIN)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_EVENT_BYTES:  # drained, so the agent's write does not fail, until the deadline
            while _readable(fd, deadline) and os.read(fd, _DRAIN):
                pass
            return None
        chunks.append(chunk)
        # A writer still holding its end once a whole object came (a writer that closed is at its
        # end at once, read above, and never parsed here: the hook parses each event once).
        if chunk.rstrip().endswith(b"}") and not _ready_now(fd) and _whole_json(data := b"".join(chunks)):
            return data
    return None


def _ready_now(fd: int) -> bool:
    """Whether ``fd`` has more data or its end right now."""
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def _whole_json(data: bytes) -> bool:
    """Whether ``data`` is one whole JSON value (an event whose writer has not closed its end)."""
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True


def _readable(fd: int, deadline: float | None) -> bool:
    """Whether ``fd`` has data or its end before ``deadline`` (None: wait as long as it takes)."""
    if deadline is None:
        return True
    left = deadline - time.monotonic()
    if left <= 0:  # an endless stdin is always ready: the clock stops it
        return False
    try:
        return bool(select.select([fd], [], [], left)[0])
    except (OSError, ValueError):  # a descriptor select cannot watch: read it as it is
        return True


# The event Claude Code, Codex and Gemini CLI send as a session starts (and resumes, and after
# /clear): `recall install` registers the hook there too where no MCP server starts the daemon
# (recall.agents.early).
SESSION_START = "SessionStart"


def starts_session(event: object) -> bool:
    """Whether ``event`` (a hook's parsed stdin) is a session's start: ``hook_event_name`` is
    ``SESSION_START``."""
    return isinstance(event, dict) and event.get("hook_event_name") == SESSION_START


class Message(NamedTuple):
    """One message as an agent's event gives it: the text typed, the folder it was typed in and
    the agent's session (``session_of``), or None."""

    prompt: str
    cwd: str
    session: str | None = None


# The longest session id taken as one: the agents' are UUIDs or a short prefix and a few dozen
# characters (OpenCode's "ses_..."); a longer value is no session id, and is not sent on.
MAX_SESSION_CHARS = 128


def session_of(value: object) -> str | None:
    """The agent's session id in ``value`` (an event's ``session_id``), or None, which is no
    session: a value that is not a string, is empty or longer than ``MAX_SESSION_CHARS``, holds a
    character that is not printable, or is a placeholder a hook's configuration left unreplaced
    (``${session_id}``: every session would read as one). The daemon's rule of repeats
    (``[hook] repeat_after``) reads it; nothing writes it anywhere."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_SESSION_CHARS:
        return None
    if not value.isprintable() or value.isspace() or "${" in value:
        return None
    return value


def read_prompt_event(event: object, name: str) -> Message | None:
    """``{"prompt": ..., "cwd": ..., "session_id": ...}``, the shape Claude Code, Codex, Gemini CLI
    and recall's OpenCode plugin send; None when there is no text prompt, or when the event names itself
    (``hook_event_name``) other than ``name``, the agent's prompt event: the hook registered under
    another event by hand would answer it with this event's envelope, which the agent refuses."""
    if not isinstance(event, dict) or event.get("hook_event_name", name) != name:
        return None
    prompt = event.get("prompt")
    if not isinstance(prompt, str):
        return None
    cwd = event.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        cwd = os.getcwd()
    return Message(prompt, cwd, session_of(event.get("session_id")))


def fit(text: str, max_chars: int) -> str:
    """``text`` cut at a line boundary to at most ``max_chars`` characters (the header stays)."""
    if len(text) <= max_chars:
        return text
    lines = text.split("\n")
    while len(lines) > 2 and len("\n".join(lines)) > max_chars:
        lines.pop()
    return "\n".join(lines)[:max_chars]


def agent_context(block: str, max_chars: int) -> str:
    """The core's block as an agent reads it: each of its lines one line of printable text
    (``recall.privacy.safetext.agent_block``, whoever built it), within ``max_chars``."""
    from recall.privacy.safetext import agent_block

    return fit(agent_block(block), max_chars)


def hook_specific_output(event: str, block: str, max_chars: int) -> str | None:
    """The line (without its newline) that hands ``block`` over as ``additionalContext`` of
    ``event``; None when nothing is left of it."""
    text = agent_context(block, max_chars)
    if not text:
        return None
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
                      ensure_ascii=False)


def envelope_bytes(event: str) -> int:
    """What the envelope of ``event`` adds to the block (a JSON string): its bytes and the newline."""
    empty = json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": ""}},
                       ensure_ascii=False)
    return len(empty.encode("utf-8")) - len('""') + 1


def prompt_event_reader(name: str) -> Callable[[object], Message | None]:
    """``read_event`` for an agent whose prompt event is ``name`` (``read_prompt_event``)."""
    return lambda event: read_prompt_event(event, name)


def additional_context(event: str, max_chars: int) -> tuple[Callable[[str], str | None], Callable[[], int]]:
    """``(output, envelope)`` for an agent that reads ``hookSpecificOutput.additionalContext`` of
    ``event``: the line for a block within ``max_chars``, and the bytes that envelope adds."""
    return (lambda block: hook_specific_output(event, block, max_chars)), (lambda: envelope_bytes(event))
