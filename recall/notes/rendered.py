"""A markdown note as a reader of the rendered file sees it (GitHub, VS Code, Obsidian): what no
renderer shows is no headline and no text of the note."""

from __future__ import annotations

import re

# What no markdown renderer shows, taken out of a note's headline and text: an HTML comment (an
# outside tester's orders in one reached the hook's block as a description; stop 44); a link
# reference definition, the usual markdown comment (``[//]: # (...)``, ``[comment]: <> (...)``);
# an element a browser hides (``hidden``, ``aria-hidden``, a ``display:none``-like style, as
# ``recall.notes.documents.shown`` for HTML files), ``<template>``, ``<style>``, ``<script>``:
# each became the headline or a search's snippet (stop 49, an outside tester's AC02).
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_REFERENCE = re.compile(r"^ {0,3}\[[^\]\n]+\]:[ \t]*\S[^\n]*(?:\n|\Z)", re.M)
_HIDING = (r"(?:^|\s)hidden(?=[\s=/>]|$)|aria-hidden\s*=\s*[\"']?true|style\s*=\s*[\"'][^\"'>]*(?:display\s*:\s*none|"
           r"visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d]*[1-9])|opacity\s*:\s*0(?![.\d]*[1-9]))")
_HIDES = re.compile(rf"{_HIDING}|<(?:template|style|script)\b", re.I)
_HIDING_RE = re.compile(_HIDING, re.I)
# An opening tag, its attributes on its line (no ``<`` in them): each scan ends at the next ``<``,
# so a pass over the note is linear whatever it holds.
_OPENING_TAG = re.compile(r"<([A-Za-z][\w-]{0,40})\b([^<>\n]{0,500})>")


def _without_hidden_elements(body: str) -> str:
    out, at = [], 0
    for m in _OPENING_TAG.finditer(body):
        if m.start() < at:
            continue
        name = m.group(1).lower()
        if name not in ("template", "style", "script") and not _HIDING_RE.search(m.group(2)):
            continue
        end = re.compile(rf"</{re.escape(name)}\s*>", re.I).search(body, m.end())
        out.append(body[at:m.start()])
        if end is None:  # never closed: hidden to the end, as a browser hides it
            return "".join(out)
        at = end.end()
    out.append(body[at:])
    return "".join(out)


def shown_markdown(body: str) -> str:
    """``body`` as a reader of the rendered note sees it: what no renderer shows taken out."""
    if "<!--" in body:
        body = _COMMENT.sub("", body)
    if "<" in body and _HIDES.search(body):
        body = _without_hidden_elements(body)
    return _REFERENCE.sub("", body) if "]:" in body else body
