"""A markdown note as a reader of the rendered file sees it (GitHub, VS Code, Obsidian): what no
renderer shows is no headline and no text of the note."""

from __future__ import annotations

import re

# What no markdown renderer shows, taken out of a note's headline and text: an HTML comment (an
# outside tester's orders in one reached the hook's block as a description; stop 44); a link
# reference definition, the usual markdown comment (``[//]: # (...)``, ``[comment]: <> (...)``);
# an element a browser hides (``hidden``, ``aria-hidden``, a style that hides it, ``hiding_style``, as
# ``recall.notes.documents.shown`` for HTML files), ``<template>``, ``<style>``, ``<script>``:
# each became the headline or a search's snippet (stop 49, an outside tester's AC02).
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_REFERENCE = re.compile(r"^ {0,3}\[[^\]\n]+\]:[ \t]*(?:<[^<>\n]*>|[^\s<]\S*)"
                        r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*(?:\n|\Z)", re.M)
# A style that hides its element: not drawn (display, visibility), drawn as nothing (no size of
# type, no opacity, a transparent colour, clipped to nothing, scaled to nothing), drawn off the
# page (an offset of a thousand pixels or a hundred ems the wrong way), or collapsed to nothing
# with its overflow hidden (an outside tester's off-screen text was a page's headline; AC03).
_HIDDEN_STYLE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|(?:font-size|opacity)\s*:\s*0(?![.\d]*[1-9])"
    r"|(?<![-\w])color\s*:\s*(?:transparent|rgba\([^)]*,\s*0(?:\.0*)?\s*\))"
    r"|clip\s*:\s*rect\(\s*0[^)]*?0\s*\)|clip-path\s*:\s*inset\(\s*50%|transform\s*:\s*scale\(\s*0\s*\)"
    r"|(?:left|top|right|bottom|text-indent|margin-left|margin-top)\s*:\s*-\s*(?:\d{4,}|\d{3,}(?:\.\d+)?\s*r?em)", re.I)
_COLLAPSED = re.compile(r"(?:max-)?(?:height|width)\s*:\s*0(?![.\d]*[1-9])", re.I)
_OVERFLOW_HIDDEN = re.compile(r"overflow(?:-[xy])?\s*:\s*(?:hidden|clip)", re.I)


def hiding_style(declarations: str) -> bool:
    """Whether CSS ``declarations`` (a style attribute, a rule's body) hide their element."""
    return bool(_HIDDEN_STYLE.search(declarations)
                or _COLLAPSED.search(declarations) and _OVERFLOW_HIDDEN.search(declarations))


_HIDDEN_ATTRIBUTE = re.compile(r"(?:^|\s)hidden(?=[\s=/>]|$)|aria-hidden\s*=\s*[\"']?true", re.I)
# Whether a text may hold an element to take out at all (most notes: no pass over their tags).
_HIDES = re.compile(rf"{_HIDDEN_ATTRIBUTE.pattern}|style\s*=|<(?:template|style|script)\b", re.I)
_STYLE_ATTRIBUTE = re.compile(r"style\s*=\s*(?:\"([^\"]*)\"|'([^']*)')", re.I)
# An opening tag, its attributes on its line (no ``<`` in them): each scan ends at the next ``<``,
# so a pass over the note is linear whatever it holds.
_OPENING_TAG = re.compile(r"<([A-Za-z][\w-]{0,40})\b([^<>\n]{0,500})>")


_BLANK_LINE = re.compile(r"\n[ \t]*\n")
# Code a renderer shows as written (a fenced block, an inline span): nothing in it is taken out,
# so a note about HTML keeps its `<p hidden>` examples. Runs of backticks are bounded: linear.
_CODE = re.compile(r"^( {0,3})(`{3,}+|~{3,}+)[^\n]*+\n.*?(?:^ {0,3}\2[`~]*[ \t]*$|\Z)|(`{1,16})[^`\n]+?\3", re.S | re.M)


def _without_hidden_elements(text: str) -> str:
    out, at = [], 0
    for m in _OPENING_TAG.finditer(text):
        if m.start() < at:
            continue
        name = m.group(1).lower()
        attributes = m.group(2)
        style = _STYLE_ATTRIBUTE.search(attributes)
        if name not in ("template", "style", "script") and not _HIDDEN_ATTRIBUTE.search(attributes) \
                and not (style and hiding_style(style.group(1) or style.group(2) or "")):
            continue
        out.append(text[at:m.start()])
        # Never closed: hidden to the end of its block (a blank line ends an HTML block in
        # markdown), not of the note.
        stop = _BLANK_LINE.search(text, m.end())
        limit = stop.start() if stop else len(text)
        end = re.compile(rf"</{re.escape(name)}\s*>", re.I).search(text, m.end(), limit)
        at = end.end() if end else limit
    out.append(text[at:])
    return "".join(out)


def _shown_prose(text: str) -> str:
    if "<!--" in text:
        text = _COMMENT.sub("", text)
    if "<" in text and _HIDES.search(text):
        text = _without_hidden_elements(text)
    return _REFERENCE.sub("", text) if "]:" in text else text


def shown_markdown(body: str) -> str:
    """``body`` as a reader of the rendered note sees it: what no renderer shows taken out of
    its prose, its code as written."""
    if "<" not in body and "]:" not in body:
        return body
    if "`" not in body and "~~~" not in body:
        return _shown_prose(body)
    out, at = [], 0
    for m in _CODE.finditer(body):
        out.append(_shown_prose(body[at:m.start()]))
        out.append(m.group(0))
        at = m.end()
    out.append(_shown_prose(body[at:]))
    return "".join(out)
