"""The reports' HTML: jinja2 templates in ``recall_eval/reports/templates/`` (autoescaped),
one page layout with the CSS inline, figures inlined as base64 PNG or SVG, so that a page is one
self-contained file (no external ``src``/``href``): it can be mailed or attached to an issue."""

from __future__ import annotations

import base64
from functools import lru_cache

import jinja2


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("recall_eval.reports", "templates"),
                              autoescape=True, trim_blocks=True, lstrip_blocks=True,
                              undefined=jinja2.StrictUndefined)


def png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def svg_data_uri(svg: str) -> str:
    """An inline SVG (the page's, which HTML needs no namespace for) as an image of its own."""
    if "xmlns=" not in svg.split(">", 1)[0]:
        svg = svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def render(template: str, **context: object) -> str:
    """One page from ``templates/<template>``."""
    return _environment().get_template(template).render(**context) + "\n"
