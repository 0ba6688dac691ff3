"""Text a run holds, placed in the Markdown the harness writes (report.md, compare.md, tune's
report, `versus --out`).

A run's strings are not the harness's own: a set named after its file, a notes folder, a
dataset's ``lang``, a model spec, a teammate's results.json re-rendered. Each goes into Markdown
through ``md_text`` alone, whether in a table cell, a heading or a line of prose, so that none
can be markup there: no HTML (``<img onerror=...>``, ``<script>``), no link or image
(``[click me](javascript:...)``, ``<https://...>``), no column of its own (``|``), no line of its
own (a heading, a list, a fence). Fixed-width text goes in a fence none of its lines can close
(``md_fence``).
"""

from __future__ import annotations

import html
import re

# "]" followed by "(" or "[" ends a link's text and opens its target or label: the second
# character escaped, the brackets stay text ([click me](javascript:...) reads as it is written).
_LINK = re.compile(r"\]([(\[])")


def md_text(value: object) -> str:
    """``value`` as literal text anywhere in a Markdown line: one line, its whitespace runs one
    space; backslashes escaped first (so none can undo an escape below), then ``& < >`` as HTML
    entities, a link's ``](`` / ``][`` broken, and ``|`` escaped (a table cell, or a line a
    renderer might read as a row)."""
    text = " ".join(str(value).split()).replace("\\", "\\\\")
    text = html.escape(text, quote=False)
    return _LINK.sub(r"]\\\1", text).replace("|", "\\|")


def md_table(head: list[str], rows: list[list[str]]) -> str:
    """A GitHub table, every cell (the header's too) through ``md_text``."""
    lines = ["| " + " | ".join(md_text(c) for c in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(md_text(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def md_fence(text: str) -> str:
    """``text`` verbatim in a code block whose fence is longer than any run of backticks in it,
    so no line of it closes the block (Markdown shows a fenced block's text, never its markup)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"
