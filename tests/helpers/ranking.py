"""Ask a fresh index one message with ``[search]`` set for the test: the order's parts measured
one at a time (BM25 nearly off, no sentences, no headers, the hash model)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from recall.api import QueryResult, Recall
from recall.config.load import load_config
from recall.embedding.models import get_embedder
from recall.indexing.indexer import SourceSpec


def order_app(home: Path, **search) -> Recall:
    """A ``Recall`` on ``home`` whose ``[search]`` is the defaults with ``search`` over them."""
    config = load_config()
    settings = dataclasses.replace(config.search.with_lexical_weight(0.01), sentence_weight=0.0,
                                   header_weight=0.0, **search)
    return Recall(home=home, config=dataclasses.replace(config, search=settings), embedder=get_embedder("hash"))


def ask_once(home: Path, notes: Path, message: str, **search) -> QueryResult:
    """``message``'s answer from ``notes`` indexed into ``home`` (``order_app``)."""
    app = order_app(home, **search)
    app.index([SourceSpec("dir", notes)])
    got = app.query(message)
    app.store.close()
    return got
