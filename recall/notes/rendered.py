"""A markdown note as a reader of the rendered file sees it (GitHub, VS Code, Obsidian): what no
renderer shows is no headline and no text of the note."""

from __future__ import annotations

import html
import re

# What no markdown renderer shows, taken out of a note's headline and text: an HTML comment (an
# outside tester's orders in one reached the hook's block as a description; stop 44); markup a
# browser never draws (a processing instruction, a declaration, CDATA: CommonMark passes each
# through as HTML); a link reference definition, the usual markdown comment (``[//]: # (...)``,
# ``[comment]: <> (...)``), its title on its line or the next (as CommonMark reads it); an element a
# browser hides (``hidden``, ``aria-hidden``, a style that hides it, ``hiding_style``, as
# ``recall.notes.documents.shown`` for HTML files), an element no browser draws (``<template>``,
# ``<style>``, ``<noscript>``, ``<datalist>``...): each became the headline or a search's snippet
# (stop 49, an outside tester's AC02; stop 55, its nested, quoted, unquoted and encoded forms).
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_UNDRAWN = re.compile(r"<\?.*?(?:\?>|\Z)|<!\[CDATA\[.*?(?:\]\]>|\Z)|<![A-Za-z][^>]*+(?:>|\Z)", re.S)
_TITLE = r"(?:\"(?:[^\"\n]++|\n(?![ \t]*+\n))*+\"|'(?:[^'\n]++|\n(?![ \t]*+\n))*+'|\([^()\n]*+\))"
_REFERENCE = re.compile(r"^ {0,3}\[[^\]\n]+\]:[ \t]*+\n?[ \t]*+(?:<[^<>\n]*+>|[^\s<]\S*+)"
                        rf"(?:(?:[ \t]++|[ \t]*+\n[ \t]*+){_TITLE})?[ \t]*+(?:\n|\Z)", re.M)
# A style that hides its element: not drawn (display, visibility), drawn as nothing (type too small
# to read, next to no opacity, a transparent colour, clipped to nothing, scaled to nothing), drawn
# off the page (an offset of a thousand pixels, a hundred ems, ten viewport widths the wrong way),
# or collapsed to nothing with its overflow hidden (an outside tester's off-screen text was a
# page's headline; AC03). Read after its comments are taken out (``display:/**/none``).
_CSS_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.S)
_HIDDEN_STYLE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)"
    r"|(?<![-\w])color\s*:\s*(?:transparent|(?:rgb|hsl)a?\([^)]*[,/]\s*0(?:\.0*)?%?\s*\)|#(?:[0-9a-f]{3}0|[0-9a-f]{6}00)\b)"
    r"|clip\s*:\s*rect\(\s*0[^)]*?0\s*\)|clip-path\s*:\s*(?:inset\(\s*50%|(?:circle|ellipse)\(\s*0(?![.\d]*[1-9]))"
    r"|(?:left|top|right|bottom|text-indent|margin-left|margin-top)\s*:\s*-\s*"
    r"(?:\d{4,}|\d{3,}(?:\.\d+)?\s*(?:r?em|%)|\d{2,}(?:\.\d+)?\s*v(?:w|h|min|max))", re.I)
# Numbers under which a reader sees nothing: opacity, a scale, a size of type (in its unit).
_TINY = re.compile(r"(opacity|font-size|transform\s*:[^;]*?scale[xyz3d]*\()\s*:?\s*(\d*\.?\d+)\s*(%|px|pt|r?em)?",
                   re.I)
_UNREADABLE = {"opacity": 0.05, "scale": 0.05, "px": 4.0, "pt": 3.0, "em": 0.25, "rem": 0.25, "%": 25.0}
_COLLAPSED = re.compile(r"(?:max-)?(?:height|width)\s*:\s*0(?![.\d]*[1-9])", re.I)
_OVERFLOW_HIDDEN = re.compile(r"overflow(?:-[xy])?\s*:\s*(?:hidden|clip)", re.I)


def hiding_style(declarations: str) -> bool:
    """Whether CSS ``declarations`` (a style attribute, a rule's body) hide their element."""
    if "/*" in declarations:
        declarations = _CSS_COMMENT.sub("", declarations)
    return bool(_HIDDEN_STYLE.search(declarations) or any(_tiny(m) for m in _TINY.finditer(declarations))
                or _COLLAPSED.search(declarations) and _OVERFLOW_HIDDEN.search(declarations))


def _tiny(m: re.Match) -> bool:
    prop, number, unit = m.group(1).lower(), float(m.group(2)), (m.group(3) or "").lower()
    if prop == "opacity":
        return number < (_UNREADABLE["opacity"] * 100 if unit == "%" else _UNREADABLE["opacity"])
    if prop != "font-size":  # a scale
        return number < (_UNREADABLE["scale"] * 100 if unit == "%" else _UNREADABLE["scale"])
    return number < _UNREADABLE.get(unit, 0.0) or number == 0


_HIDDEN_ATTRIBUTE = re.compile(r"(?:^|\s)hidden(?=[\s=/>]|$)|aria-hidden\s*=\s*[\"']?true", re.I)
# Elements no browser draws, whatever their attributes: their text is no text of the note.
UNDRAWN_ELEMENTS = ("template", "style", "script", "noscript", "noembed", "noframes", "datalist", "head",
                     "title", "iframe", "object", "dialog")
# Whether a text may hold an element to take out at all (most notes: no pass over their tags): a
# hiding attribute or a style, an element never drawn, or a tag it cannot read (a quote in it).
_HIDES = re.compile(rf"{_HIDDEN_ATTRIBUTE.pattern}|style\s*=|<(?:{'|'.join(UNDRAWN_ELEMENTS)})\b|<[A-Za-z][^<>]*[\"']",
                    re.I)
_STYLE_ATTRIBUTE = re.compile(r"(?:^|\s)style\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s\"'=<>`]+))", re.I)
# An opening tag and its attributes, up to its ">" (or the next "<", or ATTRIBUTES_MAX characters:
# each scan ends there, so a pass over the note is linear whatever it holds). A tag whose quotes do
# not close before that ">" may hold a quoted ">" or "<" (``title="a>b" hidden``): it is read again
# with its quoted values (``_QUOTED_TAG``). One that still cannot be read is no tag inside a line
# (CommonMark's raw HTML is a whole tag: the text shows as written), and at a line's start, where a
# browser reads it as it can, it is taken as hiding its block.
ATTRIBUTES_MAX = 4000
_OPENING_TAG = re.compile(rf"<([A-Za-z][\w-]{{0,40}})(?=[\s/>])([^<>]{{0,{ATTRIBUTES_MAX}}}+)(>?)")
# ... each quoted value at most VALUE_MAX characters (as far as a hidden element's end is looked for)
VALUE_MAX = 65536
_VALUE = rf"(?:\"[^\"]{{0,{VALUE_MAX}}}+\"|'[^']{{0,{VALUE_MAX}}}+'|[^\s\"'=<>`]++)"
_QUOTED_TAG = re.compile(rf"<([A-Za-z][\w-]{{0,40}})((?:\s++[^\s\"'<>/=]++(?:\s*+=\s*+{_VALUE})?+)*+)\s*+/?>")
# Elements with no content and no end tag.
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
                   "wbr"})
# How far the end of a hidden element is looked for, and for how many names: past either, it ends
# at its block's blank line, as one never closed. Only the first few KB of a note are ever chunked
# (``[chunking]``), so nothing indexed lies beyond.
CLOSE_WITHIN = 65536
NAMES_MAX = 32
_STYLE_ELEMENT = re.compile(r"<style\b[^>]*+>(.*?)(?:</style\s*>|\Z)", re.I | re.S)
_CSS_RULE = re.compile(r"\{([^{}]*)\}")


_BLANK_LINE = re.compile(r"\n[ \t]*\n")
# Code a renderer shows as written (a fenced block, an inline span): nothing in it is taken out,
# so a note about HTML keeps its `<p hidden>` examples. Runs of backticks are bounded: linear.
_CODE = re.compile(r"^( {0,3})(`{3,}+|~{3,}+)[^\n]*+\n.*?(?:^ {0,3}\2[`~]*[ \t]*$|\Z)|(`{1,16})[^`\n]+?\3", re.S | re.M)


def _hides(name: str, attributes: str, readable: bool) -> bool:
    if name in UNDRAWN_ELEMENTS or not readable or _HIDDEN_ATTRIBUTE.search(attributes):
        return True
    style = _STYLE_ATTRIBUTE.search(attributes)
    return bool(style and hiding_style(html.unescape(style.group(1) or style.group(2) or style.group(3) or "")))


class _Ends:
    """Where each element of a name ends: its opening tags matched with its closing tags in one pass
    over the text per name (others of its name inside it counted), for at most NAMES_MAX names."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.by_name: dict[str, dict[int, int]] = {}

    def of(self, name: str, opened_at: int) -> int | None:
        """The end of the element whose opening tag starts at ``opened_at``, or None."""
        if name not in self.by_name:
            if len(self.by_name) >= NAMES_MAX:
                return None
            self.by_name[name] = self._match(name)
        end = self.by_name[name].get(opened_at)
        return end if end is not None and end - opened_at <= CLOSE_WITHIN else None

    def _match(self, name: str) -> dict[int, int]:
        ends, opened = {}, []
        for tag in re.finditer(rf"<(/?){re.escape(name)}(?=[\s/>])[^<>]*+>?", self.text, re.I):
            if not tag.group(1):
                opened.append(tag.start())
            elif opened:
                ends[opened.pop()] = tag.end()
        return ends


def _starts_line(text: str, at: int) -> bool:
    """Whether ``at`` begins a line, after at most three spaces (where markdown starts an HTML block)."""
    k = at
    while k > 0 and at - k < 3 and text[k - 1] == " ":
        k -= 1
    return k == 0 or text[k - 1] == "\n"


def _without_hidden_elements(text: str) -> str:
    out, at, skip, ends = [], 0, 0, _Ends(text)
    for m in _OPENING_TAG.finditer(text):
        if m.start() < max(at, skip):
            continue
        name, attributes, tag_end = m.group(1).lower(), m.group(2), m.end()
        readable = bool(m.group(3)) and attributes.count('"') % 2 == 0 and attributes.count("'") % 2 == 0
        if not readable and (quoted := _QUOTED_TAG.match(text, m.start())):
            attributes, tag_end, readable = quoted.group(2), quoted.end(), True
        if not readable and not _starts_line(text, m.start()):
            continue  # inside a line, no tag: shown as written ("x <y isn't valid")
        if not _hides(name, attributes, readable):
            skip = tag_end  # a tag inside its quoted values is none
            continue
        out.append(text[at:m.start()])
        end = tag_end if name in _VOID or text[tag_end - 2:tag_end] == "/>" else ends.of(name, m.start()) \
            if readable else None
        if end is None:  # never closed, or unreadable: hidden to the end of its block (a blank
            stop = _BLANK_LINE.search(text, tag_end)  # line ends an HTML block), not of the note
            end = stop.start() if stop else len(text)
        at = end
    out.append(text[at:])
    return "".join(out)


def _hiding_rules(text: str) -> bool:
    """Whether a ``<style>`` element of the note hides anything: what it hides is for its selectors
    to say (a class, a tag, every paragraph), so none of the note's text is taken as shown."""
    return any(hiding_style(rule) for style in _STYLE_ELEMENT.finditer(text)
               for rule in _CSS_RULE.findall(style.group(1)))


def _shown_prose(text: str) -> str:
    if "<!--" in text:
        text = _COMMENT.sub("", text)
    if "<?" in text or "<!" in text:
        text = _UNDRAWN.sub("", text)
    if "<" in text and _HIDES.search(text):
        text = _without_hidden_elements(text)
    return _REFERENCE.sub("", text) if "]:" in text else text


def shown_markdown(body: str) -> str:
    """``body`` as a reader of the rendered note sees it: what no renderer shows taken out of
    its prose, its code as written. A note whose own CSS (a ``<style>`` element in its prose) hides
    anything shows nothing: its selectors may reach any of its text (VS Code's preview gives every
    paragraph a class), so none of it is taken as shown."""
    if "<" not in body and "]:" not in body:
        return body
    parts: list[tuple[str, bool]] = []  # (text, is code)
    at = 0
    if "`" in body or "~~~" in body:
        for m in _CODE.finditer(body):
            parts += [(body[at:m.start()], False), (m.group(0), True)]
            at = m.end()
    parts.append((body[at:], False))
    prose = "".join(text for text, code in parts if not code)
    if "<style" in prose.lower() and _hiding_rules(prose):
        return ""
    return "".join(text if code else _shown_prose(text) for text, code in parts)
