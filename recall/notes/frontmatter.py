"""A note's front matter: the YAML header between ``---`` lines, read safely and as text
(``split_front_matter``), or line by line where YAML cannot read it (``_salvaged``)."""

from __future__ import annotations

import re

import yaml


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader (libyaml's, ~10x faster, where present) reading each plain value as the text
    it is: YAML 1.1 reads ``NO`` (Norway) as False, ``1:30`` as 90, ``0777`` as 511. ``~`` is null."""


_Loader.yaml_implicit_resolvers = {
    first: kept for first, resolvers in _Loader.yaml_implicit_resolvers.items()
    if (kept := [(tag, rx) for tag, rx in resolvers if tag == "tag:yaml.org,2002:null"])}

# Front matter is a few lines. Past this it is not front matter (and a YAML document that
# size could be built to exhaust memory): the file is read as plain text.
MAX_FRONT_MATTER_BYTES = 64_000
_SALVAGE_LINES = 200  # a header YAML cannot read: its name and description are in its first lines


def split_front_matter(text: str) -> tuple[dict | None, str, str | None]:
    """Return (front matter dict or None, body, error message or None); a header typed with a
    Japanese input method on (``ーーー``, ``name：``) is read as its ASCII spelling (``_ime_typed``).

    A header YAML cannot read (a colon in a description, a tab, aliases, over 64 KB, no
    closing line, cut by the 1 MB cap) still names the note: its top-level ``name``,
    ``description`` and ``type`` lines are read line by line (``_header_lines``). A header
    opened otherwise than by ``---`` on the first line (``_misplaced``) or in TOML between
    ``+++`` lines (``_toml``) is read too."""
    if (typed := _ime_typed(text)) is not None:
        data, body, error = _split(typed)
        if data:
            error = (f"{error}; " if error else "") + IME_FIX
        return data, body, error
    return _split(text)


def _split(text: str) -> tuple[dict | None, str, str | None]:
    if not text.startswith("---"):
        return _toml(text) if text.startswith("+++") else _misplaced(text)
    lines = text.splitlines(keepends=True)
    if lines[0].strip() != "---":
        return _misplaced(text)
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            header = "".join(lines[1:i])
            body = "".join(lines[i + 1 :])
            if len(header) > MAX_FRONT_MATTER_BYTES:
                return _salvaged(lines[1:i], text, "front matter over 64 KB", "reading the file as plain text")
            data, error = _parse_header(header)
            if error:
                return _salvaged(lines[1:i], body, error, "using file name as title")
            if data is None:
                return {}, body, None
            if not isinstance(data, dict):
                return None, body, "front matter is not a mapping; using file name as title"
            return data, *_second_block(body, i + 2)
    return _salvaged(lines[1:], text, "front matter has no closing '---'", "reading the file as plain text")


# What a Japanese input method types for a header's syntax: dashes (the long vowel mark, full-width
# and other dashes), a key in full-width letters, a full-width colon, an ideographic space.
_IME_DASHES = re.compile(r"[-\u30fc\uff0d\u2015\u2014\u2013\u2010\u2212]{3,}[ \t\u3000]*")
_IME_KEY = re.compile(r"([a-zA-Z\uff41-\uff5a\uff21-\uff3a]+)[ \u3000]*([:\uff1a])[ \t\u3000]*")
IME_FIX = ("front matter typed with full-width characters (ーーー, ：, ｎａｍｅ or an ideographic space) read: "
           "write its dashes as '---', and its keys, colons and the space after them in ASCII, so other tools "
           "read it too")


def _ime_typed(text: str) -> str | None:
    """``text`` with its header's syntax in ASCII, or None where there is none to fix: delimiter
    lines of three or more dashes of any kind, and each line's key (``name``, ``description``,
    ``type``, ``questions``, ``metadata``), its colon and the space after it; values, other lines
    and the body stay as written."""
    import unicodedata

    lines = text.splitlines(keepends=True)
    if not lines or not _IME_DASHES.fullmatch(lines[0].lstrip("\ufeff").rstrip("\r\n")):
        return None
    end = next((i for i in range(1, min(len(lines), _SALVAGE_LINES))
                if _IME_DASHES.fullmatch(lines[i].rstrip("\r\n"))), None)
    if end is None:
        return None
    fixed, typed, keys = ["---\n"], not (lines[0] + lines[end]).isascii(), False
    for line in lines[1:end]:
        m = _IME_KEY.match(line)
        key = unicodedata.normalize("NFKC", m.group(1)) if m else ""
        keys = keys or key in _NOTE_KEYS
        if m and key in _NOTE_KEYS and not m.group(0).isascii():
            fixed.append(f"{key}: {line[m.end():]}")
            typed = True
        else:
            fixed.append(line)
    # nothing typed full-width in its syntax, or no note's key (two rules of dashes around prose):
    # as it is (an ASCII '----' is _misplaced's)
    return "".join(fixed) + "---\n" + "".join(lines[end + 1 :]) if typed and keys else None


# A line before a header that other tools would not have there: blank (a BOM, a zero-width
# space), or a YAML directive (``%YAML 1.2``).
_BEFORE_HEADER = re.compile(r"[\s\ufeff\u200b]*|%(?:YAML|TAG)\b.*")
_DASHES = re.compile(r"-{3,}[ \t]*")
_NOTE_KEYS = {"name", "description", "type", "metadata", "questions"}


def _misplaced(text: str) -> tuple[dict | None, str, str | None]:
    """A header that does not open the file with ``---`` (an outside tester's: the note was
    named by its file, described as ``---``, its header indexed as its body): blank lines or a
    ``%YAML`` line above it, or ``----``. Read when it is a YAML mapping, said with the edit
    that fixes it; else the file is plain text (None, ``text``, None)."""
    lines = [line.lstrip("\ufeff\u200b") for line in text.splitlines(keepends=True)]
    start = next((i for i, line in enumerate(lines[:50]) if not _BEFORE_HEADER.fullmatch(line.rstrip("\r\n"))), None)
    if start is None or not _DASHES.fullmatch(lines[start].rstrip("\r\n")):
        return None, text, None
    end = next((i for i in range(start + 1, len(lines)) if _DASHES.fullmatch(lines[i].rstrip("\r\n"))
                or lines[i].rstrip("\r\n") == "..."), None)
    header = "".join(lines[start + 1 : end]) if end is not None else ""
    if end is None or len(header) > MAX_FRONT_MATTER_BYTES:
        return None, text, None
    data, error = _parse_header(header)
    if error or not isinstance(data, dict) or not _NOTE_KEYS & set(data):  # a rule, then prose: plain text
        return None, text, None
    fixes = []
    if start:
        fixes.append(f"delete the {start} line(s) above its opening '---'" if not any(
            line.startswith("%") for line in lines[:start]) else "delete the lines above its opening '---' (a "
            "'%YAML' directive among them)")
    if lines[start].strip() != "---" or lines[end].strip() not in ("---", "..."):
        fixes.append("write its lines of dashes as exactly '---'")
    return data, "".join(lines[end + 1 :]), (f"front matter read, but other tools read it only when '---' is the "
                                             f"file's first line: {' and '.join(fixes)}")


def _toml(text: str) -> tuple[dict | None, str, str | None]:
    """Hugo's and Zola's TOML front matter between ``+++`` lines, read as TOML (its description
    was ``+++``, its header indexed as the body)."""
    import tomllib

    lines = text.splitlines(keepends=True)
    if lines[0].strip() != "+++":
        return None, text, None
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "+++"), None)
    if end is None:
        return None, text, "TOML front matter has no closing '+++'; reading the file as plain text"
    body = "".join(lines[end + 1 :])
    try:
        data = tomllib.loads("".join(lines[1:end]))
    except tomllib.TOMLDecodeError as exc:
        return None, body, f"broken TOML front matter ({exc}): fix the TOML there; using file name as title"
    return data, body, None


def _second_block(body: str, line: int) -> tuple[str, str | None]:
    """(the body, None), or, when the header is followed by a second YAML block naming the note
    (``---`` / ``name: A`` / ``---`` / ``name: B`` / ``---``), the body after it and what to fix:
    its ``name: B`` was the note's description."""
    lines = body.splitlines(keepends=True)
    end = next((i for i, text in enumerate(lines[:_SALVAGE_LINES]) if text.strip() == "---"), None)
    if end is None or not _HEADER_LINE.match(lines[0] if lines else ""):
        return body, None
    data, error = _parse_header("".join(lines[:end]))
    if error or not isinstance(data, dict) or not _NOTE_KEYS & set(data):
        return body, None
    return "".join(lines[end + 1 :]), (f"a second front-matter block follows the first (lines {line}-{line + end}):"
                                       " not read; merge the two into one block between one pair of '---' lines")


def masked_file_text(text: str) -> str:
    """A note file's text with its secrets masked as the index masks the note: its whole text
    (``mask_secrets``), and its name and description as the one text they read as
    (``mask_together``): "name: Staging database password" then "description: X" kept X in the
    prompt an agent CLI was sent and in `recall-eval export-beir`'s corpus, while the index masked
    it (an outside tester's, stop 56)."""
    from recall.privacy.masking import mask_secrets, mask_together

    out = mask_secrets(text)
    meta, _body, _error = split_front_matter(text)
    name, description = ((meta or {}).get(k) for k in ("name", "description"))
    if isinstance(name, str) and isinstance(description, str) and name and description:
        for before, after in zip((name, description), mask_together(name, description), strict=True):
            if after != before and before in out:
                out = out.replace(before, after)
    return out


# An escape in a double-quoted value that spells a printable ASCII character ("\x41", "\u0041"):
# text a reviewer of the file cannot read, which YAML would hand the agent as plain words.
_ESCAPED_ASCII = re.compile(r"\\(?:x(?:[2-6][0-9a-fA-F]|7[0-9a-eA-E])|u00(?:[2-6][0-9a-fA-F]|7[0-9a-eA-E])"
                            r"|U0000(?:[2-6][0-9a-fA-F]|7[0-9a-eA-E]))")


def _parse_header(header: str) -> tuple[object, str | None]:
    """(what the YAML header holds, None), or (None, what is wrong with it). A header whose text
    a reviewer would not read as the agent gets it is refused (then read line by line, as
    written): a tag (``!!binary`` decodes base64), an escape spelling plain letters, a key given
    twice (the second silently replaces the first)."""
    try:
        if "*" in header and _has_alias(header):
            # An alias repeats a node: nested ones grow exponentially (a "billion laughs"
            # reaches gigabytes). Notes never need them.
            return None, "front matter uses YAML aliases (*name): write the value out where each alias is"
        if "!" in header and _has_tag(header):
            return None, "front matter uses YAML tags (!!binary, !name): read as written"
        if "\\" in header and _ESCAPED_ASCII.search(header):
            return None, "front matter spells letters in escapes (\\x41): read as written"
        loader = _Loader(header)
        try:
            node = loader.get_single_node()
            if twice := _key_twice(node):
                return None, f"front matter names '{twice}' twice: the first is read"
            return (loader.construct_document(node) if node is not None else None), None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 2}" if mark is not None else "its YAML"
        return None, (f"broken front matter ({where}): fix the YAML at {'that line' if mark else 'it'} (a value "
                      "holding ': ' or ' #' needs quotes)")
    except RecursionError:
        return None, "front matter nested too deep"
    except Exception:  # noqa: BLE001 - a value the loader cannot build (a 5,000-digit integer)
        return None, "broken front matter (a value that cannot be read)"


# The value runs to the line's end; its trailing white space is cut after the match (a lazy
# value before "[ \t]*$" took quadratic time on a long run of spaces: 40 KB, 44 s).
_HEADER_LINE = re.compile(r"(name|description|type):[ \t]*+([^\s\[{&*!|>#][^\n]*)")


def _header_lines(lines: list[str]) -> dict[str, str]:
    """The top-level ``name:``, ``description:`` and ``type:`` lines of a header YAML could not
    read, each value as written (surrounding quotes removed); flow values and blocks skipped."""
    found: dict[str, str] = {}
    for line in lines[:_SALVAGE_LINES]:
        if line.strip() in ("---", "..."):
            break
        m = _HEADER_LINE.match(line.lstrip("\t") if line.startswith("\t") else line)
        if m and m.group(1) not in found:
            value = m.group(2).rstrip(" \t\r")
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            found[m.group(1)] = value.strip()
    return {k: v for k, v in found.items() if v}


def _salvaged(header: list[str], body: str, what: str, otherwise: str) -> tuple[dict | None, str, str]:
    found = _header_lines(header)
    if not found:
        return None, body, f"{what}; {otherwise}"
    if otherwise.startswith("reading"):
        return found, body, f"{what}; {otherwise} (name, description and type read line by line)"
    return found, body, f"{what}; name, description and type read line by line"


def _has_tag(header: str) -> bool:
    """Whether a node of the YAML text carries an explicit tag (parse events only)."""
    return any(getattr(event, "tag", None) is not None for event in yaml.parse(header, Loader=_Loader))


def _key_twice(node: object) -> str | None:
    """A top-level key the header's mapping holds twice, if any."""
    if not isinstance(node, yaml.MappingNode):
        return None
    seen: set[str] = set()
    for key, _value in node.value:
        name = str(getattr(key, "value", ""))
        if name in seen:
            return name[:40]
        seen.add(name)
    return None


def _has_alias(header: str) -> bool:
    """Whether the YAML text uses an alias (parse events only: nothing is built)."""
    return any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(header, Loader=_Loader))
