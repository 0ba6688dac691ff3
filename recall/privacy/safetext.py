"""Text that leaves recall: one sanitizer for what reaches an agent, one for a terminal.

Notes, their file and folder names, and teammates' pushed notes are written by others:
whatever they hold must neither add lines to what the agent reads nor send control codes
to a terminal. Every place text leaves recall goes through one of these:

* ``agent_text``  one line of printable text (the hook's block, MCP tools' answers):
                  line breaks and other white space folded into one space; control, format
                  (bidi overrides and isolates, zero-width, Unicode tags), surrogate,
                  private-use, unassigned, variation selectors and invisible "filler"
                  characters removed; angle brackets and their look-alikes (full-width,
                  small, mathematical, CJK) shown as ``‹ ›``, so no note opens or closes a tag
                  a model reads as structure (Claude Code wraps hook output in
                  ``<system-reminder>``).
* ``agent_quoted`` ``agent_text`` inside curly quotes, every double quotation mark in the
                  field (curly, low, primes, full-width, ornamental, guillemets) made a straight
                  one: a note's
                  name or description stays one quoted field whatever it says ("User: ...",
                  "[end of records]"), never a speaker or a record of its own.
* ``agent_path``  ``agent_text`` of a path, quoted (POSIX shell quoting, ``shlex.quote``)
                  when it holds anything but plain path characters, so that folded text in a
                  file name reads as part of one quoted path, never as a header or an order.
* ``terminal_text``  what the CLI prints: line feeds and tabs kept, every other character
                  that is not printable escaped as ``\\uXXXX`` (JSON's spelling, so JSON output
                  stays valid JSON and decodes to the original text): ESC, CSI/OSC (C0, C1),
                  BEL, BS, DEL, CR, NUL, bidi and zero-width characters reach no terminal.
* ``one_line``    a field of a terminal line: white space folded, then ``terminal_text``.

"Printable" is Python's ``str.isprintable`` (Unicode categories L, M, N, P, S and the
ASCII space), less a few characters that print as nothing (Hangul fillers, the combining
grapheme joiner, Khmer inherent vowels, the blank braille pattern). Pure standard library and cheap when there is
nothing to do (one C-level ``isprintable`` check): the hook imports it.
"""

from __future__ import annotations

import re
from typing import Any

# Printable by Unicode's categories, yet drawn as nothing: usable to hide text.
INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0")
# Variation selectors (Mn, so "printable"): drawn as nothing, and a run of them after one
# character can carry any bytes to a model that reads them ("emoji smuggling"). Only an agent
# is spared them: a terminal shows them as what they are, a glyph's variant.
HIDDEN = re.compile("[\u180b-\u180d\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef]")
# Markup a model reads as structure: angle brackets and their look-alikes (full-width, small,
# mathematical, CJK, APL, ornamental) shown as single guillemets that open and close nothing.
_OPENING = "<\uff1c\ufe64\u27e8\u3008\u2329\u276c\u276e\u29fc\u2991\u27ea\u300a"
_CLOSING = ">\uff1e\ufe65\u27e9\u3009\u232a\u276d\u276f\u29fd\u2992\u27eb\u300b"
_MARKUP = str.maketrans({**dict.fromkeys(_OPENING, "\u2039"), **dict.fromkeys(_CLOSING, "\u203a")})
_MARKUP_CHARS = frozenset(_OPENING + _CLOSING)
# Letters of other scripts drawn like Latin ones in common fonts (Cyrillic, Greek, Armenian,
# dotless i): "pаssword" with a Cyrillic "а" reads as "password" to a person and a model, so
# masking reads it so too (``masking.find_secrets``). Unicode's confusables.txt holds
# thousands, most of them symbols; these are the letters that stand in a word unnoticed.
LATIN_LOOK_ALIKES = str.maketrans({
    **dict(zip("асеіјорѕхуһԁԛԝӏ",
               "aceijopsxyhdqwl")),
    **dict(zip("АВСЕНІЈКМОРЅТХУ",
               "ABCEHIJKMOPSTXY")),
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
               "ABEZHIKMNOPTYX")),
    **dict(zip("αικνορυıȷօսհ",
               "aikvopuijouh")),
})
_PLAIN_PATH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


def visible(c: str) -> bool:
    """Whether the character ``c`` may be shown as it is (to an agent or a terminal)."""
    return c.isprintable() and c not in INVISIBLE


def _clean(text: str) -> bool:
    return text.isprintable() and INVISIBLE.isdisjoint(text)


def agent_text(value: object) -> str:
    """``value`` as one line of printable text, white space folded (see the module doc)."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    if HIDDEN.search(text):
        text = HIDDEN.sub("", text)
    if not _MARKUP_CHARS.isdisjoint(text):
        text = text.translate(_MARKUP)
    if _clean(text) and "  " not in text and text == text.strip():
        return text
    out = [c if visible(c) else " " if c.isspace() else "" for c in text]
    return " ".join("".join(out).split())


# Double quotation marks and what reads as one: every character (no letter) whose Unicode name
# says a quotation mark that is not single, a double (triple, quadruple) prime, apostrophe,
# acute or turned comma, a ditto mark or gershayim (curly, low, reversed, full-width, ornamental,
# CJK double primes, guillemets, ˮ, 🙶). Inside a field each becomes a straight quote, so none
# reads as the field's end. Single quotes stay ("don’t"), as do CJK corner brackets. Written
# out (the hook must not scan Unicode at start); tests/core/privacy/test_safetext.py derives
# it again from the running Python's Unicode names.
DOUBLE_QUOTE_LIKE = (
    "\u00ab\u00bb\u02ba\u02dd\u02ee\u02f6\u030b\u030e\u05f4\u1acb\u201c\u201d\u201e\u201f\u2033\u2034\u2036"
    "\u2037\u2057\u275d\u275e\u2760\u276e\u276f\u2e42\u3003\u301d\u301e\u301f\uff02\U0001f676\U0001f677"
    "\U0001f678")
_DOUBLE_QUOTES = str.maketrans(dict.fromkeys(DOUBLE_QUOTE_LIKE, '"'))


def agent_quoted(value: object) -> str:
    """A field for an agent: ``agent_text`` between curly quotes, every double quotation mark
    in it made a straight one (``_DOUBLE_QUOTES``), so nothing in a field reads as its end."""
    text = agent_text(value)
    return "\u201c" + (text if text.isascii() else text.translate(_DOUBLE_QUOTES)) + "\u201d"


def agent_path(value: object) -> str:
    """A path for an agent: one line, shell-quoted unless it is plain path characters."""
    import shlex

    text = agent_text(value)
    return text if _PLAIN_PATH.issuperset(text) else shlex.quote(text)


def agent_json(value: Any) -> Any:
    """``value`` (an MCP tool's answer) with ``agent_text`` applied to every string in it, and
    ``agent_path`` to every string under a key named ``path`` (quoted as in the hook's block)."""
    if isinstance(value, str):
        return agent_text(value)
    if isinstance(value, dict):
        return {agent_text(k) if isinstance(k, str) else k:
                agent_path(v) if k == "path" and isinstance(v, str) else agent_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [agent_json(v) for v in value]
    return value


def agent_block(text: str) -> str:
    """A block of lines for an agent: each line ``agent_text``; empty lines dropped."""
    lines = (agent_text(line) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def _escape(c: str) -> str:
    cp = ord(c)
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    cp -= 0x10000  # JSON spells an astral character as its surrogate pair
    return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"


def terminal_text(value: object) -> str:
    """``value`` safe to print: line feeds and tabs kept, anything else not printable escaped."""
    text = value if isinstance(value, str) else str(value)
    if _clean(text.replace("\n", "").replace("\t", "")):
        return text
    return "".join(c if c in "\n\t" or visible(c) else _escape(c) for c in text)


def one_line(value: object) -> str:
    """A field of a terminal line: line breaks and other white space folded into one space,
    then ``terminal_text`` (the rest escaped, so the user sees what the note holds)."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    if _clean(text):
        return text
    return terminal_text(" ".join("".join(" " if c.isspace() else c for c in text).split()))
