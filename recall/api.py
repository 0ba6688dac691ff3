"""The operations the CLI, the daemon and the evaluation harness share. ``Recall`` ties the
settings (``recall.config.settings.Settings``, as ``Recall.config``), a store, an embedder and a
searcher together; every file it touches lives under one ``RECALL_HOME``."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from recall.config.load import apply_calibration_file, load_config
from recall.config.settings import Rule, Settings
from recall.config.snapshot import too_short
from recall.embedding.gemini import messages_allowed
from recall.embedding.models import QUERY_CHARS_MAX, Embedder, backend_of, get_embedder
from recall.errors import EmbedderError, IndexDamaged
from recall.indexing.kinds import carved
from recall.indexing.known import drop_stale, exact_repo, known_sources, listed, lost_folders, newer_elsewhere, unnested
from recall.indexing.ondisk import Behind, on_disk
from recall.privacy.claude_memory import memory_source
from recall.privacy.masking import RULES_VERSION
from recall.privacy.paths import DB_NAME, make_tree_private, recall_home
from recall.privacy.safetext import whole
from recall.privacy.trust import require_home
from recall.ranking import pasted
from recall.ranking.scope import Scope
from recall.ranking.search import Searcher
from recall.ranking.selector import GAP_RANKS, Decision, Hit, Ranking, decide
from recall.store.indexes import check_indexes, missing_indexes, remove_damaged, remove_other_models
from recall.store.sqlite import Store

if TYPE_CHECKING:  # the indexer (and YAML) is imported when indexing: a cold daemon answers sooner
    from recall.indexing.indexer import Indexer, SourceSpec, SyncStats
    from recall.indexing.progress import IndexProgress


@dataclass
class QueryResult:
    hits: list[Hit]
    decision: Decision
    timings: dict[str, float]
    rule: Rule  # the thresholds and [selector] settings the decision applied
    behind: list[Behind] = field(default_factory=list)  # ranked notes whose file is gone or changed since the index


@dataclass
class Status:
    """What is indexed, as ``recall status`` and the MCP server's ``recall_status`` report it."""

    home: Path
    model: dict[str, str]  # recall.embedding.models.describe(): spec, model_id, backend, platform
    counts: dict
    runs: list[tuple]  # (model_id, generation, built at in epoch seconds, chunks), one per index built
    generation: int | None  # the live index generation of the configured model
    problems: list[str]  # the indexes that cannot be loaded, one line each
    indexing: dict | None = None  # an index running or interrupted (recall.indexing.progress.read_progress)


class Recall:
    def __init__(self, home: Path | None = None, config: Settings | None = None,
                 embedder: Embedder | None = None) -> None:
        # Another user's home, a read-only one, or one holding root's files after a `sudo recall`:
        # one line (HomeUnusable) with the repair, before anything is read or written.
        self.home = require_home(home or recall_home())
        make_tree_private(self.home)  # 0700/0600 whatever someone did to them since
        self.config = config or load_config()
        self._embedder = embedder
        self._store: Store | None = None
        self._searcher: Searcher | None = None
        self._rule: Rule | None = None
        self.calibration = None  # the last recall.ranking.calibration.Calibration this object ran
        self._calibration_stamp: tuple | None = None

    # lazily built parts: `recall status` needs neither model nor index
    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.home / DB_NAME)
        return self._store

    def close(self) -> None:
        """Close the store's connection if this object opened one (it belongs to its thread)."""
        if self._store is not None:
            self._store.close()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._backend()  # an unknown name: where it was set
            # the cloud model reads this object's [gemini] settings; one client per Recall
            self._embedder = get_embedder(self.config.model, gemini=self.config.gemini)
        return self._embedder

    def _backend(self) -> str:
        """The configured model's backend; an unknown name says where it was set."""
        try:
            return backend_of(self.config.model)
        except EmbedderError as exc:
            origin = self.config.origins.get(("model",), "packaged")
            raise EmbedderError(f"{exc} (model is set by {origin}: fix it there)") from None

    @property
    def searcher(self) -> Searcher:
        if self._searcher is None:
            searcher = Searcher(self.embedder, self.config.search, self.home)
            if searcher.index is None:  # none on disk: none built, or its folder deleted
                missing = missing_indexes(self.home, self.store.index_runs(), self.embedder.model_id)
                if missing:
                    from recall.store.vectors import index_dir

                    raise IndexDamaged(index_dir(self.embedder.model_id, self.home), missing[0][1])
            self._searcher = searcher
        return self._searcher

    def rule(self) -> Rule:
        """The selector's input for this model (thresholds + ``[selector]``), built once per
        settings: again only after a new calibration."""
        if self._rule is None:
            self._rule = self.config.rule(self.embedder.model_id)
        return self._rule

    def replace_settings(self, config: Settings) -> None:
        """Use other settings from now on (the same store and model): e.g. eval's dense-only
        run, ``dataclasses.replace(app.config, search=app.config.search.with_lexical_weight(0))``."""
        self.config = config
        self._rule = None
        if self._searcher is not None:
            self._searcher.settings = config.search

    # --- indexing ------------------------------------------------------------
    def default_sources(self, cwd: Path | str) -> list[SourceSpec]:
        from recall.indexing.indexer import SourceSpec

        return [SourceSpec("memory", *memory_source(cwd)), *listed(self.config.sources)]

    def indexer(self, store: Store | None = None, progress: Callable[[int, str], None] | None = None,
                defer: bool = False) -> Indexer:
        """The one write path into the local store (``recall.indexing.indexer``); ``store``: another
        connection to it (SQLite connections belong to the thread that opened them);
        ``defer``: notes are written, their embedding left to ``Indexer.embed_phased``."""
        from recall.backends.local import LocalStore
        from recall.indexing.indexer import Indexer

        local = LocalStore(store or self.store, self.embedder.model_id, home=self.home,
                           approximate_from=self.config.index.approximate_from_chunks)
        return Indexer(local, self.embedder, self.config.chunking, progress, documents=self.config.documents,
                       defer=defer, delay_s=self.config.index.debug_delay_ms / 1000)

    def set_aside_damaged_store(self) -> tuple[Path | None, list[tuple[str, str, str | None]]]:
        """For ``recall index --rebuild``: when the store file is damaged, move it aside
        (``recall.store.salvage``); returns where, and the sources still readable from it."""
        from recall.store.salvage import set_aside

        if self._store is not None:
            return None, []
        return set_aside(self.home / DB_NAME)

    def index(self, sources: Sequence[SourceSpec],
              progress: Callable[[int, str], None] | None = None,
              conversations_of: Path | str | None = None, rebuild: bool = False,
              salvaged: Sequence[tuple[str, str, str | None]] = (),
              plan: Callable[[str, int], None] | None = None) -> SyncStats:
        """Sync each source into the store, embed what has no vector, rebuild and swap the index, then calibrate.

        Notes are written first and embedded after, every note's text before any question
        (``Indexer.embed_phased``): notes become searchable as their text is embedded (a
        new generation every ``[index] publish_every_s``), and an index interrupted at any
        point is resumed by the next one, which embeds only what is missing. Its progress
        is in ``$RECALL_HOME/indexing.PID.json`` while it runs (``recall.indexing.progress``);
        ``progress(n, phase)`` is told of each batch, ``plan(phase, passages)`` of each phase.

        ``rebuild``: write a fresh generation that replaces all others, even when the current
        one is damaged. With ``rebuild``, no ``sources`` (a model switch), an interrupted index
        to resume or a store that lost its folders, every folder known (to the store, a store set
        aside, ``salvaged``, or the index on disk) is synced too; one gone is dropped by every run
        (``recall.indexing.known``)."""
        from recall.indexing.progress import IndexProgress, interrupted
        from recall.store.errors import still_there, store_identity

        resuming = interrupted(self.home)
        every = rebuild or not sources or resuming or lost_folders(self.store, self.home)
        report = IndexProgress.opened(self.home, progress, plan, self.store, self.embedder.model_id, resuming)
        opened = store_identity(self.home / DB_NAME)
        try:
            total = self._index(sources, report, conversations_of, every, rebuild, salvaged)
            still_there(self.home, self.home / DB_NAME, opened)  # not "added 300" for a store unlinked meanwhile
        except BaseException:
            report.stop()  # the file stays: `recall status` says the index was interrupted
            raise
        report.finish(resumed=every)
        return total

    def _index(self, sources: Sequence[SourceSpec], report: IndexProgress, conversations_of: Path | str | None,
               every: bool, rebuild: bool, salvaged: Sequence[tuple[str, str, str | None]]) -> SyncStats:
        t0 = time.perf_counter()
        indexer = self.indexer(progress=lambda n, _: report.advance(n), defer=True)
        sources, total = self._sync_sources(indexer, sources, conversations_of, every, salvaged)
        self.store.drop_orphan_vectors()  # before: a race with another writer is healed below
        model_id = self.embedder.model_id

        def publish() -> None:  # what is embedded so far becomes searchable
            indexer.rebuild()
            report.published(self.store.notes_searchable(model_id), self.store.counts()["notes"])

        # This run's notes, vectors new to this model, what an interrupted index left: text first.
        report.notes = self.store.counts()["notes"]
        indexer.embed_phased(self.store.unembedded(model_id), total, report, publish,
                             self.config.index.publish_every_s)
        # Text that must not be kept was removed (a past prompt), or the store holds text
        # masked by older rules: rewrite the SQLite file and keep no older generation.
        scrub = bool(total.purged) or self.store.setting("mask_rules") != str(RULES_VERSION)
        if scrub:  # every other model's files hold the text as it was: removed
            remove_other_models(model_id, self.home)
            self.store.forget_index_runs(model_id)
            self.store.scrub()
        if rebuild:
            remove_damaged(self.embedder.model_id, self.home)
        indexer.rebuild(keep_previous=not (scrub or rebuild))
        report.published(self.store.notes_searchable(model_id), self.store.counts()["notes"])
        if scrub and not self.store.notes_masked_before(RULES_VERSION):
            self.store.set_setting("mask_rules", str(RULES_VERSION))  # every note re-read since
        if self.config.selector.calibrate:
            report.begin("calibrating", 0)
            t1 = time.perf_counter()
            self.calibration = self.calibrate(sources)
            total.calibrate_seconds = time.perf_counter() - t1
        if self._searcher is not None:
            self._searcher.refresh()
        total.seconds = time.perf_counter() - t0
        return total

    def _sync_sources(self, indexer: Indexer, sources: Sequence[SourceSpec], conversations_of: Path | str | None,
                      every: bool, salvaged: Sequence[tuple[str, str, str | None]]
                      ) -> tuple[list[SourceSpec], SyncStats]:
        """Write the sources' new and changed notes (and, with ``every``, every known
        source's); returns the sources synced and what was done."""
        from recall.indexing.indexer import SyncStats
        from recall.notes.files import misnamed

        total = SyncStats()
        keep_gone, prompts = self.config.sources.keep_gone_titles, self.config.sources.prompt_titles
        every = drop_stale(self.store, listed(self.config.sources), sources, total) or every
        named = [(s, misnamed(s.root)) for s in sources]
        total.problems += [p for _, p in named if p is not None]
        sources, inner, said = unnested(self.store, [s for s, p in named if p is None])
        total.problems += said
        conv_folders: dict[str, str | None] = {}
        if every:
            known = known_sources(self.store, self.home, sources, salvaged)
            sources, conv_folders = [*sources, *known.sources], known.conversations
            total.problems += known.said
        from recall.indexing.conversations import (
            conversations_dir,
            purge_prompt_titles,
            sync_conversation_folder,
            sync_conversations,
        )

        total.purged += purge_prompt_titles(self.store, prompts)  # every project's, at every index
        sources = carved(self.store, sources)  # a file in folders of two kinds: the deepest one's
        for spec in sources:
            total.merge(indexer.sync_source(spec))
        for source_id in inner:  # their notes are the outer folder's now (its vectors kept)
            self.store.delete_source(source_id)
        if self.config.sources.conversations:
            if conversations_of is not None:
                conv_folders.pop(str(conversations_dir(conversations_of)), None)
                total.merge(sync_conversations(indexer, conversations_of, keep_gone=keep_gone, prompts=prompts))
            for folder, project in conv_folders.items():
                total.merge(sync_conversation_folder(indexer, Path(folder), project, keep_gone, prompts))
        return list(sources), total

    def calibrate(self, sources: Sequence[SourceSpec] = (), target: float | None = None):
        """Fit the thresholds on the indexed notes, their questions and the negatives
        (``recall.ranking.calibration``); write ``calibration.toml`` and use it from now on.
        ``sources`` name negatives files in other places than their folders."""
        from recall.ranking.calibration import calibrate
        from recall.ranking.calibration_file import write
        from recall.ranking.negatives import NEGATIVES_FILE as NEGATIVES

        negatives_files = [spec.negatives_file() for spec in sources]
        named = {spec.root.resolve() for spec in sources}
        negatives_files += [Path(root) / NEGATIVES for _id, kind, root, _p in self.store.sources()
                     if kind != "conversation" and Path(root) not in named]
        target = self.config.selector.target_silence if target is None else target
        muted = self.store.muted(self.embedder.model_id)
        cal = calibrate(self.embedder, self.store, self.home, negatives_files, target,
                        self.config.selector.near_miss_margin, self.config.selector.set_aside_questions,
                        self.config.selector.fit_on_hidden_notes)
        if self.store.muted(self.embedder.model_id) != muted:
            self.indexer().rebuild()  # the questions set aside leave the index (recall.ranking.muting)
        if cal is not None:
            path = write(self.home, cal)
            self.replace_settings(self.config.with_calibration(cal.model_id, cal.thresholds(), str(path)))
            self._calibration_stamp = None
        return cal

    # --- querying ------------------------------------------------------------
    def refresh_calibration(self) -> bool:
        """Take the thresholds of a ``calibration.toml`` another process (``recall index``)
        wrote since this one last looked. One stat per call; the daemon calls it per question."""
        from recall.ranking.calibration_file import FILE

        path = self.home / FILE
        try:
            st = path.stat()
            stamp: tuple | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        if stamp == self._calibration_stamp:
            return False
        self._calibration_stamp = stamp
        applied = apply_calibration_file(self.config, path) if stamp is not None else None
        if applied is None:
            return False
        self.replace_settings(applied)
        return True

    def query(self, text: str, scope: Scope | None = None, project: str | None = None, *,
              k_notes: int = 20, search_short: bool = False, typed: bool = False) -> QueryResult:
        """Search ``text`` (of a long one, what was typed around its paste) in ``scope`` and decide
        what the hook would hand over: the one way every front end asks (CLI, daemon, MCP, UI
        through the daemon, eval). ``--repo NAME`` is matched on the folder names indexed.
        ``project``: whose notes come first (default: the scope's). ``k_notes``: notes ranked (at
        least the gap rule's ranks). ``search_short``: rank even a message shorter than
        ``selector.min_prompt_chars`` (an agent asking on purpose); the decision stays "nothing".
        ``typed``: the user typed ``text`` (``recall search``, ``recall query``). A cloud embedder
        that may not see the user's messages (``[gemini] send_messages``) is sent only typed
        text: anything else gets no hits, ``timings["withheld"]``, and nothing leaves the machine."""
        self.refresh_calibration()
        rule, said = self.rule(), whole(text)  # whole: a lone surrogate cannot be encoded for the model
        if not (text := pasted.asked(said, QUERY_CHARS_MAX)) and said.strip():  # a paste, nothing typed
            return QueryResult([], Decision("nothing", pasted.NOTHING_ASKED), {}, rule)
        if not search_short and too_short(text, rule.selector.min_prompt_chars):
            return QueryResult([], decide(text, [], rule), {}, rule)
        if not typed and not messages_allowed(self.embedder):
            return QueryResult([], decide(text, [], rule), {"withheld": 1.0}, rule)
        if newer_elsewhere(self.embedder.model_id, self.home):  # a switch back: this index predates the notes
            why = "the notes were indexed with another model since: `recall index` brings this one up to date"
            return QueryResult([], Decision("nothing", why), {"stale": 1.0}, rule)
        self.searcher.refresh()  # mostly done already by the daemon's reloader (two stats); else waited for
        if scope is not None and scope.repo is not None:  # the store is not opened for the hook's questions
            scope = exact_repo(scope, self.store)
        t0 = time.perf_counter()
        hits, timings = self.searcher.search(text, scope, k_notes=max(k_notes, GAP_RANKS[1]))
        hits, behind = on_disk(hits, getattr(self.searcher.index, "built_at", 0.0))  # a deleted note: never shown
        decision = decide(text, hits, rule, project=project if project else (scope.project if scope else None))
        timings["total_ms"] = (time.perf_counter() - t0) * 1000
        return QueryResult(hits, decision, timings, rule, behind)

    def rank(self, text: str, scope: Scope | None = None, *, k_notes: int = 20) -> Ranking:
        """The ranking ``query`` hands the selector (fusion, nearest negative), undecided: for a caller
        that applies its own rules to it (``recall-eval``'s grids). The text is the caller's own."""
        self.searcher.refresh()
        return self.searcher.search(text, scope, k_notes=max(k_notes, GAP_RANKS[1]))[0]

    def switched_from(self, runs: Sequence[tuple] | None = None) -> str | None:
        """The model id the notes were last indexed with, when it is not the configured model
        (``model`` changed in config.toml): this model has no index, or one from before the
        notes last changed (a switch back: it handed over notes deleted since). Then the
        folders must be read and embedded again and the thresholds fitted again, which
        ``index([])`` does. None otherwise (nothing indexed yet, or this model's index is
        the newest). Loads no model."""
        from recall.embedding.models import model_id_of

        runs = self.store.index_runs() if runs is None else runs
        newest = str(max(runs, key=lambda r: r[2])[0]) if runs else None
        return None if newest == model_id_of(self.config.model, self.config.gemini.dimensions) else newest

    def search(self, text: str, scope: Scope, k: int, typed: bool = False) -> dict:
        """The ``k`` best notes for ``text`` in ``scope``, with their snippets, and what the selector
        would hand over (``recall.ranking.answer``): `recall search`'s and the MCP tool ``recall_search``'s."""
        from recall.ranking.answer import search_answer

        res = self.query(text, scope, k_notes=k, search_short=True, typed=typed)  # asked on purpose: searched
        return search_answer(self.home, self.embedder.model_id, text, scope, k, res.hits, res.decision, res.timings)

    # --- status --------------------------------------------------------------
    def status(self) -> Status:
        """Model, counts, index runs and generation, damaged indexes; loads no model. Reads
        through its own store connection, so any thread may call it (the MCP server's do)."""
        from recall.embedding.models import describe
        from recall.indexing.progress import read_progress
        from recall.store.salvage import emptied_store
        from recall.store.vectors import current_marker

        store = Store(self.home / DB_NAME)
        try:
            counts, runs = store.counts(), store.index_runs()
        finally:
            store.close()
        self._backend()  # an unknown name: where it was set, as every command says it
        model = describe(self.config.model, self.config.gemini.dimensions)
        missing = [str(IndexDamaged(path, what)) for path, what in missing_indexes(self.home, runs)]
        missing += emptied_store(self.home, DB_NAME, counts, runs)
        return Status(self.home, model, counts, list(runs), current_marker(model["model_id"], self.home),
                      check_indexes(self.home) + missing, read_progress(self.home))
