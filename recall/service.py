"""The operations the CLI, the daemon and the evaluation harness share.

``Recall`` ties a config, a store, an embedder and a searcher together; every file it
touches lives under one ``RECALL_HOME``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .config import Config, load_config
from .embedders import Embedder, get_embedder
from .indexer import Indexer, SourceSpec, SyncStats
from .paths import encode_project_path, ensure_private_dir, memory_dir, project_root, recall_home
from .search import Scope, Searcher
from .secrets import RULES_VERSION
from .selector import Decision, Hit, Settings, decide
from .store import Store

DB_NAME = "recall.db"


@dataclass
class QueryResult:
    hits: list[Hit]
    decision: Decision
    timings: dict[str, float]
    settings: Settings


def project_key(cwd: Path | str) -> str:
    return encode_project_path(project_root(cwd))


def default_scope(cwd: Path | str) -> Scope:
    return Scope(project=project_key(cwd))


class Recall:
    def __init__(self, home: Path | None = None, config: Config | None = None,
                 embedder: Embedder | None = None) -> None:
        self.home = ensure_private_dir(home or recall_home())
        self.config = config or load_config()
        self._embedder = embedder
        self._store: Store | None = None
        self._searcher: Searcher | None = None

    # lazily built parts: `recall status` needs neither model nor index
    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.home / DB_NAME)
        return self._store

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder(self.config.model)
        return self._embedder

    @property
    def searcher(self) -> Searcher:
        if self._searcher is None:
            self._searcher = Searcher(self.embedder, self.home,
                                      lexical_weight=float(self.config.get("search.lexical_weight", 0.0)),
                                      fusion_depth=int(self.config.get("search.fusion_depth", 50)))
        return self._searcher

    def settings(self) -> Settings:
        return Settings.from_config(self.config, self.embedder.model_id)

    # --- indexing ------------------------------------------------------------
    def default_sources(self, cwd: Path | str) -> list[SourceSpec]:
        specs = [SourceSpec("memory", memory_dir(cwd), project_key(cwd))]
        specs += [SourceSpec("rule", d) for d in self.config.rule_dirs()]
        return specs

    def index(self, sources: Sequence[SourceSpec],
              progress: Callable[[int, str], None] | None = None,
              conversations_of: Path | str | None = None) -> SyncStats:
        """Sync each source into the store, then rebuild and swap the index."""
        t0 = time.perf_counter()
        indexer = Indexer(self.store, self.embedder, self.config.chunking, progress)
        total = SyncStats()
        for spec in sources:
            total.merge(indexer.sync_source(spec))
        if conversations_of is not None and self.config.get("sources.conversations", True):
            from .conversations import sync_conversations

            total.merge(sync_conversations(indexer, conversations_of,
                                           keep_gone=bool(self.config.get("sources.keep_gone_titles", True)),
                                           prompts=bool(self.config.get("sources.prompt_titles", False))))
        self.store.drop_orphan_vectors()  # before: a race with another writer is healed below
        indexer.embed_missing_for_store(total)
        # Text that must not be kept was removed (a past prompt), or the store holds text
        # masked by older rules: rewrite the SQLite file and keep no older generation.
        scrub = bool(total.purged) or self.store.setting("mask_rules") != str(RULES_VERSION)
        if scrub:
            self.store.scrub()
        indexer.rebuild(int(self.config.get("index.approximate_from_chunks", 100_000)), keep_previous=not scrub)
        if scrub and not self.store.notes_masked_before(RULES_VERSION):
            self.store.set_setting("mask_rules", str(RULES_VERSION))  # every note re-read since
        if self._searcher is not None:
            self._searcher.refresh()
        total.seconds = time.perf_counter() - t0
        return total

    # --- querying ------------------------------------------------------------
    def query(self, text: str, scope: Scope | None = None, project: str | None = None) -> QueryResult:
        settings = self.settings()
        if len(text.strip()) < settings.min_prompt_chars:
            return QueryResult([], decide(text, [], settings), {}, settings)
        self.searcher.refresh()
        t0 = time.perf_counter()
        hits, timings = self.searcher.search(text, scope)
        decision = decide(text, hits, settings, project=project if project else (scope.project if scope else None))
        timings["total_ms"] = (time.perf_counter() - t0) * 1000
        return QueryResult(hits, decision, timings, settings)
