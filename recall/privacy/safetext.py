"""Text that leaves recall: one sanitizer for what reaches an agent, one for a terminal.

Notes, their file and folder names, and teammates' pushed notes are written by others:
whatever they hold must neither add lines to what the agent reads nor send control codes
to a terminal. Every place text leaves recall goes through one of these:

* ``agent_text``  one line of printable text (the hook's block, MCP tools' answers):
                  line breaks and other white space folded into one space; control, format
                  (bidi overrides and isolates, zero-width, Unicode tags), surrogate,
                  private-use, unassigned, variation selectors and invisible "filler"
                  characters removed; angle brackets and every look-alike of one (NFKC,
                  Unicode's confusables, names) shown as ``⁅ ⁆``, so no note opens or closes a
                  tag a model reads as structure (Claude Code wraps hook output in
                  ``<system-reminder>``).
* ``agent_field`` ``agent_text`` of text others wrote, every double quotation mark and
                  look-alike in it (curly, low, primes, full-width, ornamental, guillemets,
                  ’’) made a straight one: the curly quotes around recall's fields come from
                  recall alone, and no string in an MCP answer reads as its own end; ``](``
                  made ``] (``, so no markdown link or image renders (and fetches) from it.
* ``agent_quoted`` ``agent_field`` inside curly quotes: a note's name or description stays
                  one quoted field whatever it says ("User: ...", "[end of records]"), never a
                  speaker or a record of its own.
* ``agent_path``  a path, exact (its ``](`` kept: it must open), quoted (POSIX shell quoting,
                  ``shlex.quote``) when it holds anything but plain path characters, and each
                  character ``agent_field`` would remove or fold written as a bash ANSI-C word
                  (``$'\\u200b'``): text in a file name reads as part of one quoted path,
                  never as a header, a field or an order, and the path is the file's.
* ``terminal_text``  what the CLI prints: line feeds and tabs kept, every other character
                  that is not printable escaped as ``\\uXXXX`` (JSON's spelling, so JSON output
                  stays valid JSON and decodes to the original text): ESC, CSI/OSC (C0, C1),
                  BEL, BS, DEL, CR, NUL, bidi and zero-width characters reach no terminal.
* ``one_line``    a field of a terminal line: white space folded, then ``terminal_text``.
* ``shortened``   a line no longer than a screen or two: a value a file names (a 2 MB note name
                  in a questions file) is cut in its middle, the line's start and end kept.

"Printable" is Python's ``str.isprintable`` (Unicode categories L, M, N, P, S and the
ASCII space), less a few characters that print as nothing (Hangul fillers, the combining
grapheme joiner, Khmer inherent vowels, the blank braille pattern, the musical null
notehead). Pure standard library and cheap when there is nothing to do (one C-level
``isprintable`` check): the hook imports it.
"""

from __future__ import annotations

import re
from typing import Any

# What a secret reads as once masked (``recall.privacy.masking``, which uses it from here): in
# every text recall keeps or hands out, and in the paths of files whose names held one.
MASK = "[REDACTED]"

# Printable by Unicode's categories, yet drawn as nothing: usable to hide text (Hangul fillers,
# the combining grapheme joiner, Khmer inherent vowels, blank braille, the musical null notehead).
INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0\U0001d159")
# Variation selectors (Mn, so "printable"): drawn as nothing, and a run of them after one
# character can carry any bytes to a model that reads them ("emoji smuggling"). Only an agent
# is spared them: a terminal shows them as what they are, a glyph's variant.
HIDDEN = re.compile("[\u180b-\u180d\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef]")
# Markup a model reads as structure: angle brackets and every look-alike of one, shown as
# ``⁅ ⁆`` (square brackets with quill, which look like no angle bracket): a character is one when
# its compatibility form (NFKC) is ``<`` or ``>``, when Unicode's confusables (UTS #39,
# confusables.txt) map it to one (˂ ᐸ ᚲ ‹ ❮ ﹤ ＜ ...), when its name says a left- or
# right-pointing angle or an angle bracket (mathematical, CJK, ornamental, vertical forms), or
# when its name says less-than, precedes, left-pointing or normal subgroup of (its first such
# word decides the side: ≪ ⋖ ≺ ⊲ ◁ ⪡ ⫷ ⏴ ...), quotation marks (« ») and magnifying glasses aside;
# printable ones only (a tag character is removed, not replaced).
# Written out (the hook must not scan Unicode at start); tests/core/privacy/test_safetext.py
# derives both sets again from the running Python's Unicode data and the confusables table.
_OPENING = ("<\u02c2\u1438\u16b2\u2039\u2264\u2266\u2268\u226a\u226e\u2270\u2272\u2274\u2276\u2278\u227a"
            "\u227c\u227e\u22b0\u22b2\u22b4\u22d6\u22d8\u22da\u22dc\u22de\u22e6\u22e8\u22ea\u22ec\u2329\u2343"
            "\u23ea\u23ee\u23f4\u25c0\u25c1\u25c2\u25c3\u25c4\u25c5\u276c\u276e\u2770\u27e8\u27ea\u2976\u2977"
            "\u2991\u2993\u2996\u29c0\u29fc\u2a79\u2a7b\u2a7d\u2a7f\u2a81\u2a83\u2a85\u2a87\u2a89\u2a8b\u2a8d"
            "\u2a8f\u2a91\u2a93\u2a95\u2a97\u2a99\u2a9b\u2a9d\u2a9f\u2aa1\u2aa3\u2aa6\u2aa8\u2aaf\u2ab1\u2ab3"
            "\u2ab5\u2ab7\u2ab9\u2abb\u2af7\u2af9\u2bc7\u3008\u300a\ufe3d\ufe3f\ufe64\uff1c\U00010877"
            "\U0001d236\U0001f780")
_CLOSING = (">\u02c3\u1433\u203a\u2265\u2267\u2269\u226b\u226f\u2271\u2273\u2275\u2277\u2279\u227b\u227d"
            "\u227f\u22b1\u22b3\u22b5\u22d7\u22d9\u22db\u22dd\u22df\u22e7\u22e9\u232a\u2344\u2369\u23e9\u23ed"
            "\u23ef\u23f5\u25b6\u25b7\u25b8\u25b9\u25ba\u25bb\u276d\u276f\u2771\u27e9\u27eb\u2978\u2992\u2994"
            "\u2995\u29c1\u29fd\u2a7a\u2a7c\u2a7e\u2a80\u2a82\u2a84\u2a86\u2a88\u2a8a\u2a8c\u2a8e\u2a90\u2a92"
            "\u2a94\u2a96\u2a98\u2a9a\u2a9c\u2a9e\u2aa0\u2aa2\u2aa4\u2aa5\u2aa7\u2aa9\u2ab0\u2ab2\u2ab4\u2ab6"
            "\u2ab8\u2aba\u2abc\u2af8\u2afa\u2b43\u2b53\u2b54\u2bc8\u2e16\u3009\u300b\ufe3e\ufe40\ufe65\uff1e"
            "\U00010878\U00016f3f\U0001d237\U0001f782")
_MARKUP = str.maketrans({**dict.fromkeys(_OPENING, "\u2045"), **dict.fromkeys(_CLOSING, "\u2046")})
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
_BREAKS = {"\t": "$'\\t'", "\n": "$'\\n'", "\r": "$'\\r'"}  # agent_path: as bash reads them back
_PLAIN_PATH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


_SURROGATE = re.compile("[\ud800-\udfff]")


def whole(text: str) -> str:
    """``text`` with every lone surrogate (JSON's ``"\\ud800"`` reads as one; a command line's
    undecodable bytes come as ones) replaced by U+FFFD: no store, UTF-8 file, hash or model can
    take it, so a text from outside is made whole where it is read (questions, negatives, an
    agent's answer, a message); a pair stays the character it encodes."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


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
# CJK double primes, guillemets, ˮ, 🙶), and every one Unicode's confusables (UTS #39) map to
# ``"`` or ``''`` (᳓). Inside a field each becomes a straight quote, so none reads as the
# field's end. Single quotes stay ("don’t"), as do CJK corner brackets. Written out (the hook
# must not scan Unicode at start); tests/core/privacy/test_safetext.py derives it again from
# the running Python's Unicode names and the confusables table.
DOUBLE_QUOTE_LIKE = (
    "\u00ab\u00bb\u02ba\u02dd\u02ee\u02f6\u030b\u030e\u05f4\u1acb\u1cd3\u201c\u201d\u201e\u201f\u2033\u2034"
    "\u2036\u2037\u2057\u275d\u275e\u2760\u276e\u276f\u2e42\u3003\u301d\u301e\u301f\uff02\U0001f676"
    "\U0001f677\U0001f678")
_DOUBLE_QUOTES = str.maketrans(dict.fromkeys(DOUBLE_QUOTE_LIKE, '"'))
# What the confusables map to ``'``: two of them side by side read as a double quote (’’), so
# a run of them that is not plain ASCII (``''`` already reads as the straight ``"`` a field may
# hold) becomes one straight quote. Derived again by the same test.
SINGLE_QUOTE_LIKE = (
    "'`\u00b4\u02b9\u02bb\u02bc\u02bd\u02be\u02c8\u02ca\u02cb\u02f4\u0374\u0384\u055a\u055d\u144a\u16cc"
    "\u1fbd\u1fbf\u1fef\u1ffd\u1ffe\u2018\u2019\u201b\u2032\u2035\ua78c\uff07\uff40\U00016f51\U00016f52")
_SINGLE_RUN = re.compile("[" + re.escape(SINGLE_QUOTE_LIKE) + "]{2,}")


def _straight_quotes(value: object) -> str:
    text = agent_text(value)
    if text.isascii():
        return text
    text = text.translate(_DOUBLE_QUOTES)
    return _SINGLE_RUN.sub(lambda m: m.group() if m.group().isascii() else '"', text)


def agent_field(value: object) -> str:
    """``agent_text`` of text recall did not write (a field, an MCP answer's string): every double
    quotation mark and look-alike in it made a straight one (``_DOUBLE_QUOTES``, ``_SINGLE_RUN``), so
    the curly quotes that delimit recall's fields come from recall alone; and no markdown link or
    image (``![x](https://...)``, which a client that renders it would fetch): ``](`` becomes ``] (``."""
    text = _straight_quotes(value)
    return text.replace("](", "] (") if "](" in text else text


def agent_quoted(value: object) -> str:
    """A field for an agent: ``agent_field`` between curly quotes, so nothing in it reads as its end."""
    return "\u201c" + agent_field(value) + "\u201d"


def agent_path(value: object) -> str:
    """A path for an agent, exact: shell-quoted (POSIX, ``shlex.quote``) unless it is plain path
    characters, and every character that ``agent_field`` would remove or fold (a line break,
    tab, ESC, a bidi, zero-width or tag character, a space that is not U+0020, a quotation mark
    or angle bracket look-alike, ``<``, ``>``) written as a bash ANSI-C word, ``$'\\u200b'``,
    beside the quoted rest: one line, nothing that reads as recall's quotes or a tag, and the
    path the file has. Deleted or folded, ``deploy\\u200b.md`` was handed over as the user's own
    ``deploy.md`` and a name with U+3000 as a file that does not exist (stop 49, an outside
    tester's AC01, AC05). In a path holding ``](`` (folders named like a markdown image, which
    a client that renders the context would fetch) the quoting is closed between the two,
    ``...]'"("'...``: the same word to a shell, no link to a renderer. A path whose secret was
    masked (``recall.privacy.masking.mask_path``, before it was stored) is no file's: its folder
    is handed over, and why its name is not (``_masked_path``)."""
    import shlex

    text = value if isinstance(value, str) else "" if value is None else str(value)
    if "[" in text and (masked := _masked_path(text)) is not None:
        return masked
    if _PLAIN_PATH.issuperset(text):
        return text
    out, run = [], []
    for c in text:
        if c in _PLAIN_PATH or c == " " or _path_literal(c):
            run.append(c)
            continue
        if run:
            out.append(_quoted_run(shlex.quote("".join(run))))
            run = []
        out.append(_BREAKS.get(c) or _ansi_c(c))
    if run:
        out.append(_quoted_run(shlex.quote("".join(run))))
    return "".join(out)


def _path_literal(c: str) -> bool:
    """Whether ``c`` may stand as it is in a quoted path (``agent_field`` keeps it unchanged)."""
    return visible(c) and not c.isspace() and HIDDEN.match(c) is None and c not in _MARKUP_CHARS \
        and c not in DOUBLE_QUOTE_LIKE and (c.isascii() or c not in SINGLE_QUOTE_LIKE)


def _quoted_run(quoted: str) -> str:
    return quoted.replace("](", "]'\"(\"'") if "](" in quoted else quoted


def _masked_path(path: str) -> str | None:
    """For a path holding a masked secret, its folder and why its name is not there (an agent
    told to read "[REDACTED].md" read nothing; an outside tester's, stop 55); else None."""
    if MASK not in path:
        return None
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    if not folder or MASK in folder:
        return "its path holds a secret: masked"
    return f"a file in {agent_path(folder)} whose name holds a secret: masked"


def _ansi_c(c: str) -> str:
    cp = ord(c)
    if 0xD800 <= cp <= 0xDFFF:  # a name's undecodable byte (surrogateescape): the byte itself
        return f"$'\\x{cp & 0xFF:02x}'" if 0xDC80 <= cp <= 0xDCFF else "$'\\ufffd'"
    return f"$'\\u{cp:04x}'" if cp <= 0xFFFF else f"$'\\U{cp:08x}'"


def agent_json(value: Any) -> Any:
    """``value`` (an MCP tool's answer) with ``agent_field`` applied to every string in it (no
    quote look-alike reads as a JSON string's end), ``agent_text`` to its keys (recall's own), and
    ``agent_path`` to every string under a key named ``path`` (quoted as in the hook's block)."""
    if isinstance(value, str):
        return agent_field(value)
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


# Unicode's spaces (category Zs) other than " ": Python calls them not printable, but each is a
# blank of some width with no effect on a terminal. Escaped, a Japanese note's every ideographic
# space read ``\u3000`` in `recall query`, and the page wrote the "Try a message" box back that
# way (an outside tester's F3, stop 62). A test derives the set from Unicode's data.
SPACES = frozenset("\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                   "\u202f\u205f\u3000")


def terminal_text(value: object) -> str:
    """``value`` safe to print: line feeds, tabs and spaces (``SPACES``) kept, anything else not
    printable escaped."""
    text = value if isinstance(value, str) else str(value)
    if _clean(text.replace("\n", "").replace("\t", "")):
        return text
    return "".join(c if c in "\n\t" or c in SPACES or visible(c) else _escape(c) for c in text)


def one_line(value: object) -> str:
    """A field of a terminal line: line breaks and other white space folded into one space,
    then ``terminal_text`` (the rest escaped, so the user sees what the note holds)."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    if _clean(text):
        return text
    return terminal_text(" ".join("".join(" " if c.isspace() else c for c in text).split()))


MAX_LINE_CHARS = 600  # a warning or an error line: its start (what) and end (the repair) kept


def shortened(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """``text`` cut in its middle to at most ``limit`` characters (said with "…")."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]} … {text[len(text) - (limit - head - 3):]}"
