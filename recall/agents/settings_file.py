"""An agent's JSON settings file written back as the user wrote it: atomically, through a
symlink, with its owner and mode (``replace_file``), in the file's own style (indentation,
line ends, escapes, values on one line), its numbers as written, and the empty containers the
user had put back (``keep_containers``)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

# A number with a fraction or an exponent is kept as the file wrote it: read as a float,
# 1e400 became inf and was written back as Infinity, which is not JSON (an outside tester's
# Claude Code then ignored the whole file, its permission rules included), and 1E5 as
# 100000.0. It is held as a marked string while recall edits the file (the mark holds a
# nonce no file can know), and written back as the number it was.
_NONCE = os.urandom(8).hex()
_KEPT = re.compile(r'"\\u0000' + _NONCE + r':(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\\u0000"')


def as_written(literal: str) -> str:
    return f"\x00{_NONCE}:{literal}\x00"


class Style(NamedTuple):
    """How a settings file was written, kept when recall writes it again: install + uninstall
    gave every file back in two-space indentation with LF line ends and its escapes decoded,
    a diff of every line in a dotfiles repository (an outside tester's AF05). A new file is
    written as Claude Code writes its own."""

    indent: str | None = "  "  # None: one line
    newline: str = "\n"
    ascii: bool = False  # non-ASCII written as \u escapes
    compact: bool = False  # one line with no space after ',' and ':'
    final: str = "\n"


def style_of(text: str) -> Style:
    """``text``'s ``Style`` (a nested value written on one line is spread like its siblings)."""
    body = text.rstrip()
    if not body:
        return Style()
    one_line = "\n" not in body
    lined = re.search(r"\n([ \t]+)\S", body)
    return Style(indent=None if one_line else (lined.group(1) if lined else ""),
                 newline="\r\n" if "\r\n" in text else "\n", ascii=text.isascii() and "\\u" in text,
                 compact=one_line and not re.search(r"[,:] ", body), final="\n" if "\n" in text[len(body):] else "")


def settings_bytes(settings: dict[str, Any], style: Style | None = None, text: str = "") -> bytes:
    """The file's new bytes in its own ``style`` (a value ``text``, the file as it was, holds on
    one line stays on one line), its numbers as it wrote them (``as_written``); a string holding
    a lone surrogate (``"\\ud800"`` in the file, valid JSON) is written escaped as it was, not
    refused halfway through an install."""
    style, lines = style or Style(), _one_liners(text)
    try:
        out = _dumps(settings, style, lines)
        out.encode("utf-8")
    except UnicodeEncodeError:
        out = _dumps(settings, style._replace(ascii=True), lines)
    return (out + style.final).replace("\n", style.newline).encode("utf-8")


_MEMBER = re.compile(r'"(?:[^"\\]|\\.)*"\s*:\s*(.+)')


def _one_liners(text: str) -> dict[str, str]:
    """Every object or array ``text`` writes whole on one line of its own (a member's value or an
    element), as written, by its compact form: ``{ "allow": [ "x" ] }`` (Prettier's spacing)
    came back spread over lines, though recall never touched it (an outside tester's D11)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip().removesuffix(",")
        member = _MEMBER.fullmatch(line)
        value = member.group(1) if member else line
        if value[:1] not in ("{", "[") or value[-1:] not in ("}", "]"):
            continue
        try:
            parsed = json.loads(value, parse_float=as_written)
        except (ValueError, RecursionError):
            continue
        if isinstance(parsed, (dict, list)) and parsed:
            out.setdefault(_compact(parsed), value)
    return out


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _dumps(value: Any, style: Style, lines: dict[str, str], level: int = 0) -> str:
    """``json.dumps`` in ``style``, keeping a value on one line where the file had it so."""
    def one_line(separators: tuple[str, str]) -> str:
        return _KEPT.sub(r"\1", json.dumps(value, ensure_ascii=style.ascii, separators=separators))

    if style.indent is None or not isinstance(value, (dict, list)) or not value:
        return one_line((",", ":") if style.compact else (", ", ": "))
    if level and (line := lines.get(_compact(value))) is not None:
        return line
    pad = "\n" + style.indent * (level + 1)
    if isinstance(value, dict):
        items = [f"{json.dumps(k, ensure_ascii=style.ascii)}: {_dumps(v, style, lines, level + 1)}"
                 for k, v in value.items()]
    else:
        items = [_dumps(v, style, lines, level + 1) for v in value]
    ends = "{}" if isinstance(value, dict) else "[]"
    return ends[0] + pad + ("," + pad).join(items) + "\n" + style.indent * level + ends[1]


def _containers(data: dict[str, Any], at: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Each value reached through object keys (three deep, parents first) with where it is."""
    for key, value in data.items():
        yield (*at, key), value
        if isinstance(value, dict) and len(at) < 2:
            yield from _containers(value, (*at, key))


def _at(data: Any, at: tuple[str, ...]) -> Any:
    for key in at:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _was(at: tuple[str, ...], form: str) -> str:
    return f"was {json.dumps(list(at))} {form}"


def _put_back(before: dict[str, Any], after: dict[str, Any], at: tuple[str, ...], value: Any) -> None:
    """``value`` at ``at`` in ``after``, where ``before`` had it (its folders made again, empty)."""
    parent = after
    for depth, key in enumerate(at):
        if key not in parent:
            order = [k for k in _at(before, at[:depth]) if k in parent or k == key]
            rebuilt = {k: parent.get(k, value if depth == len(at) - 1 else {}) for k in order}
            rebuilt.update((k, v) for k, v in parent.items() if k not in rebuilt)
            parent.clear()
            parent.update(rebuilt)
        parent = parent[key]


def keep_containers(path: Path, before: dict[str, Any], after: dict[str, Any]) -> None:
    """Give back the empty containers the user wrote: uninstall drops each one its removal left
    empty, and a user's own ``"hooks": {}`` (``[]``, ``null``) went with it (an outside tester's
    AF05). When install fills a container it found empty or null, that is recorded; when a
    write then drops it, it is put back as it was, where it was. One that install made goes."""
    from recall.agents.records import state_note, we_added

    for at, was in _containers(before):
        now = _at(after, at)
        if (was is None or was == {} or was == []) and isinstance(now, (dict, list)) and now:
            state_note(path, _was(at, "null" if was is None else "empty"), True)
        elif now is None and isinstance(was, (dict, list)) and not _at_key(after, at):
            for form, value in (("null", None), ("empty", type(was)())):
                if we_added(path, _was(at, form)):
                    state_note(path, _was(at, form), False)
                    _put_back(before, after, at, value)
                    break


def _at_key(data: dict[str, Any], at: tuple[str, ...]) -> bool:
    parent = _at(data, at[:-1])
    return isinstance(parent, dict) and at[-1] in parent


def write_settings(path: Path, settings: dict[str, Any]) -> None:
    """Write in the file's own style (``Style``), as ``replace_file`` writes."""
    from recall.agents.writes import current_text

    try:
        text = current_text(path) or ""
    except (OSError, ValueError):
        text = ""
    try:
        before = json.loads(text, parse_float=as_written) if text.strip() else {}
    except (ValueError, RecursionError):
        before = {}
    keep_containers(path, before if isinstance(before, dict) else {}, settings)
    if (blank := _blank_again(path, text, settings)) is not None:
        replace_file(path, blank)
        return
    replace_file(path, settings_bytes(settings, style_of(text), text.replace("\r\n", "\n")))


BLANK = "was blank: "  # the note of a file that held nothing (or only white space) before install


def _blank_again(path: Path, text: str, settings: dict[str, Any]) -> bytes | None:
    """An empty (or white-space only) settings file given back as it was once recall's entries
    are out again: it came back as ``{}`` (an outside tester's D11). The bytes, or None."""
    from recall.agents.records import noted, state_note
    from recall.agents.writes import current

    if settings and not text.strip() and current(path) is not None:
        state_note(path, BLANK + json.dumps(text), True)
    elif not settings and (kept := noted(path, BLANK)):
        for key in kept:
            state_note(path, key, False)
        return str(json.loads(kept[0][len(BLANK):])).encode("utf-8")
    return None


def replace_file(path: Path, data: bytes) -> None:
    """An agent's file written whole, as its owner keeps it (``recall.agents.writes``): through a
    symbolic link (a file in a dotfiles folder stays linked there), atomically (a complete copy,
    then a rename) with the file's mode and owner (`sudo recall install` left root's file where
    the user's was); in place where other hard links share it (a rename leaves them the old
    text), its old bytes written back if that fails. A file its owner made read-only is refused:
    one line, nothing written (an outside tester's, stop 56). Inside an install or uninstall it
    is written with the edit's other files, all or none."""
    from recall.agents.writes import stage

    stage(path, data)
