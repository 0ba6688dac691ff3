"""Which request a line of JSON-RPC names, read without parsing it whole: the ``id`` of a line too
long to read (``over_cap_id``), of a reply the server writes (``answered_id``)."""

from __future__ import annotations

import re
from typing import Any

# A line too long to read still has its id answered: at its start (as most clients write it) or
# its end (the MCP TypeScript SDK writes `{...request, jsonrpc, id}`: Claude Code's hook waited
# its 5 s timeout for an answer; an outside tester's AG01). The readers keep both ends.
ID_SCAN_BYTES = 64 << 10
_TRAILING_ID = re.compile(r'"id"[ \t\r\n]*:[ \t\r\n]*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")[ \t\r\n]*\}[ \t\r\n]*$')
# A string runs to its closing quote or, unclosed (a line cut at ``ID_SCAN_BYTES``), to the end: a
# pattern that needed the quote failed at the end and began again at the next quote, scanning to
# the end each time (a line of 32,000 escaped quotes held the server 18 s; an outside tester's D3).
# Possessive: linear, whatever the line.
_KEY_OR_BRACKET = re.compile(r'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]', re.DOTALL)
_ID_VALUE = re.compile(r'[ \t\r\n]*:[ \t\r\n]*(-?\d{1,18}(?![\d.eE])|"(?:[^"\\]|\\.){0,200}")')


def leading_id(prefix: str) -> Any:
    """The ``id`` of the message whose first characters are ``prefix``: the value of an ``"id"``
    key of the outer object (not one nested in ``params``), if it is an integer or a string
    and stands in ``prefix`` whole; else None. Without recursion, in one scan."""
    import json

    depth = 0
    for m in _KEY_OR_BRACKET.finditer(prefix):
        token = m.group()
        if token in "[{":
            depth += 1
        elif token in "]}":
            depth -= 1
        elif depth == 1 and token == '"id"' and (value := _ID_VALUE.match(prefix, m.end())):
            try:
                return json.loads(value.group(1))
            except (ValueError, RecursionError):
                return None
    return None


def over_cap_id(raw: bytes) -> Any:
    """The id of a line too long to read, from what the readers kept of it (its start, and its
    end after ``MAX_LINE_BYTES + 1`` bytes): the outer object's ``id`` at the start
    (``leading_id``), else one that is the outer object's last member."""
    import json

    found = leading_id(raw[:ID_SCAN_BYTES].decode("utf-8", errors="replace"))
    if found is not None:
        return found
    end = _TRAILING_ID.search(raw[-ID_SCAN_BYTES:].decode("utf-8", errors="replace"))
    try:
        return json.loads(end.group(1)) if end else None
    except (ValueError, RecursionError):
        return None


def answered_id(reply: str) -> Any:
    """The id a reply answers: read from its first characters, else from the whole reply (an id
    longer than they hold: a string of 300 characters, an integer of 19 digits was never seen
    answered, and a closed input waited ``DRAIN_S`` for it; an outside tester's, stop 55)."""
    import json

    found = leading_id(reply[:1024])
    if found is not None:
        return found
    try:
        message = json.loads(reply)
    except (ValueError, RecursionError):
        return None
    return message.get("id") if isinstance(message, dict) else None
