"""What a long message asks: the lines typed around a paste, not the paste.

The model reads one window of a message (``QUERY_CHARS_MAX`` characters), so a question typed
after 40 KB of a build log was never read: the log's first 4 KB were searched, the question
lost, and whatever note was nearest to the log handed over (an outside tester: 5 of 5
questions after a log lost, 4 of 5 bare long pastes answered with a wrong headline). A
message longer than the window is read here line by line instead: lines inside a fenced
block, and lines that read as machine output (a stack frame, a log line with its time or
level, a diff, code indented or dense with punctuation, a line of symbols or one unbroken
token), are the paste; the rest were typed. What is searched is the typed lines: all of
them when they fit the window, else the first quarter's worth from the top (a question put
before the paste) and the rest from the bottom (one put after). A long message with no typed
line asks nothing: recall stays silent, as for a message too short to search.

A message that fits the window is searched whole, as before: none of the evaluation sets'
messages (all under 600 characters) is changed by this.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```|~~~)")
_MACHINE = re.compile(
    r"""^\s*(at\s+\S+[(.]|File\s+".*",\s+line\s+\d+|Traceback\b|Caused\s+by:|\.\.\.\s+\d+\s+more\b)   # stack frames
    |^\s*\[?\d{2,4}[-/.:]\d{1,2}[-/.:T ]\d{1,2}                                              # a time or date first
    |^\s*\[?(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL)\]?[:\s]               # a log level first
    |^(diff\s--git|index\s[0-9a-f]{6,}|@@\s|\+\+\+\s|---\s|[+-](?=[^\s+-]))               # a diff
    |^(\t|\ {4,})                                                                          # indented: code or output
    |^\s*[$#>%]\s                                                                          # a shell prompt
    |^\s*[\w.]*(Error|Exception|error|warning|panic)(\[\w+\])?:                               # a program's error
    |^.*\S\ {3,}\S                                                                           # columns: a table printed
    """, re.VERBOSE)
_CODE_MARKS = frozenset("{}[]()<>=;:/\\|_$@#*&^~`\"'")
HEAD_SHARE = 0.25  # of the window, for typed lines from the top; the rest from the bottom
NOTHING_ASKED = "a paste with no line typed around it: nothing asked"  # the decision's reason


def typed(line: str) -> bool:
    """Whether ``line`` reads as words someone typed rather than something a program wrote."""
    text = line.strip()
    if len(text) < 2 or _MACHINE.match(line):
        return False
    letters = sum(ch.isalpha() for ch in text)
    marks = sum(ch in _CODE_MARKS for ch in text)
    words = text.split()
    if letters < 0.6 * len(text.replace(" ", "")) or marks > 0.12 * len(text):
        return False
    return not (len(words) == 1 and len(text) > 40)  # one unbroken token: a hash, a path, base64


def asked(text: str, window: int) -> str:
    """What of ``text`` to search: ``text`` itself when it fits ``window`` characters, else its
    typed lines, cut to the window from both ends ("" when none was typed)."""
    if len(text) <= window:
        return text
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and typed(line):
            lines.append(line.strip())
    joined = "\n".join(lines)
    if len(joined) <= window:
        return joined
    head_chars = int(window * HEAD_SHARE)
    head, tail = [], []
    size = 0
    for line in lines:  # whole lines from the top, while they fit the head's share
        if size + len(line) + 1 > head_chars:
            break
        head.append(line)
        size += len(line) + 1
    rest = lines[len(head):]
    for line in reversed(rest):  # then whole lines from the bottom, while they fit
        if size + len(line) + 1 > window:
            break
        tail.append(line)
        size += len(line) + 1
    if not head and not tail:  # one typed line longer than the window: its start
        return lines[0][:window]
    return "\n".join(head + tail[::-1])
