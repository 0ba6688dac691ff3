"""The folders a store already knows, brought back in line with the disk by an index run.

An index is a copy of folders: whatever way a run starts, it must not leave the copy behind
them. Three rules (stop 46: an outside tester found every path that broke them):

* **A folder that is gone takes its notes with it**, at every index run, said in one line
  (its notes were handed over for good: `recall index --rebuild` skipped it in silence; the
  watcher already dropped them).
* **A folder named through a link that now leads elsewhere leaves for the new one**
  (``drop_repointed``: ``notes -> v2`` after ``v1``; v1's notes stayed beside v2's).
* **A run that finishes or redoes someone else's work reads every known folder again**
  (hash-checked: an unchanged file is read and hashed, not parsed or embedded): ``--rebuild``,
  the resume of an interrupted index (it embedded the old snapshot: a note deleted since came
  back) and a model switch, the daemon's included (``Recall.index([])``).

And a question is not answered from a model's index built before the notes were last read
(``newer_elsewhere``: a switch back to a model used before, which handed over notes deleted
since until something indexed again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from recall.indexing.kinds import drop_doubled
from recall.notes.problems import MAX_ALIKE_PROBLEMS, Problem
from recall.privacy.paths import DB_NAME, folder_gone
from recall.store.vectors import index_dir

if TYPE_CHECKING:  # the question path imports this module: the indexer's modules are loaded where they run
    from recall.config.settings import SourcesSettings
    from recall.indexing.indexer import SourceSpec, SyncStats
    from recall.ranking.scope import Scope
    from recall.store.sqlite import Store


@dataclass
class Known:
    """The known folders an index run syncs beside those it was given, and the conversation
    folders (folder -> project) it reads again."""

    sources: list[SourceSpec] = field(default_factory=list)
    conversations: dict[str, str | None] = field(default_factory=dict)
    said: list[Problem] = field(default_factory=list)  # folders read back from the index on disk, said


def drop_stale(store: Store, listed: Sequence[SourceSpec], given: Sequence[SourceSpec], stats: SyncStats) -> bool:
    """Before a run syncs: the known folders now a link, gone, no longer listed, or no longer where
    a name given leads (``drop_relinked``, ``drop_gone``, ``drop_unlisted``, ``drop_repointed``),
    each with its notes. True when a folder is known in another's place: the run syncs them all."""
    moved = drop_relinked(store, stats)
    moved = drop_doubled(store, stats) or moved
    drop_gone(store, stats)
    drop_unlisted(store, listed, given, stats)
    drop_repointed(store, given, listed, stats)
    return moved


def drop_relinked(store: Store, stats: SyncStats) -> bool:
    """A known folder whose path now leads elsewhere (the folder replaced by a link to its new
    place: ``notes -> notes.v2``): its notes, read again through the link, stood beside the new
    folder's, each note twice (an outside tester's, stop 56). It leaves with its notes, and the
    folder it leads to is known in its place, once: not where a known folder holds it, and in
    place of the known folders it holds (a link into or around another indexed folder listed
    those notes twice). Returns whether a folder is known in another's place."""
    import os

    moved = False
    for source_id, kind, root, project in store.sources():
        real = os.path.realpath(root)
        if kind == "conversation" or real == root or not os.path.isdir(real):
            continue
        n = len(store.note_hashes(source_id))
        store.delete_source(source_id)
        stats.removed += n
        others = [(sid, r) for sid, k, r, _p in store.sources() if k != "conversation"]
        held = any(real == r or real.startswith(r + os.sep) for _sid, r in others)
        if not held:
            store.source_id(kind, real, project)
            for sid, r in others:
                if r.startswith(real + os.sep):  # its notes are the outer folder's now, read this run
                    store.delete_source(sid)
            moved = True
        stats.problems.append(Problem(root, f"now leads to {real}: its {n} note(s) under this name were dropped "
                                            f"from the index, and {real} is indexed "
                                            + ("with the folder that holds it" if held else "in its place")))
    return moved


def drop_gone(store: Store, stats: SyncStats) -> None:
    """Remove every known note folder that is no longer a folder, with its notes: three said one
    by one, the rest in one line (30 gone folders were 30 lines)."""
    gone: list[tuple[str, int]] = []
    for source_id, kind, root, _project in store.sources():
        if kind == "conversation" or not folder_gone(root):
            continue
        gone.append((root, len(store.note_hashes(source_id))))
        store.delete_source(source_id)
        stats.removed += gone[-1][1]
    stats.problems += [Problem(root, f"the folder is gone: its {n} note(s) were dropped from the index "
                                     f"(`recall index {root}` indexes it again once it is back)")
                       for root, n in gone[:MAX_ALIKE_PROBLEMS]]
    if rest := gone[MAX_ALIKE_PROBLEMS:]:
        stats.problems.append(Problem(f"{len(rest):,} more folders (the last {rest[-1][0]})",
                                      f"gone too: their {sum(n for _, n in rest)} note(s) were dropped from the "
                                      "index (`recall index DIR` indexes one again once it is back)"))


def listed(sources: SourcesSettings) -> list[SourceSpec]:
    """The folders ``[sources]`` lists: shared rules and libraries."""
    from recall.indexing.indexer import SourceSpec
    from recall.privacy.paths import expand_user

    return [*(SourceSpec("rule", expand_user(d, "[sources] rules")) for d in sources.rules),
            *(SourceSpec("library", expand_user(d, "[sources] libraries")) for d in sources.libraries)]


LISTED = "config_sources"  # the store's setting: the folders [sources] listed at the last run


def drop_unlisted(store: Store, listed: Sequence[SourceSpec], given: Sequence[SourceSpec],
                  stats: SyncStats) -> None:
    """Remove the folders ``[sources]`` listed at the last run and lists no more (``listed``:
    its folders now), with their notes, unless this run was given them: a rules folder taken
    out of the config stayed indexed, and handed to every project, for good (stop 48, an
    outside tester's V02). A folder given on the command line is never in the list."""
    import json

    now = sorted({(s.kind, str(s.root.resolve())) for s in listed})
    try:
        before = {tuple(x) for x in json.loads(store.setting(LISTED) or "[]")}
    except (ValueError, TypeError):
        before = set()
    keep = set(now) | {(s.kind, str(s.root.resolve())) for s in given}
    for source_id, kind, root, _project in store.sources():
        if (kind, root) in before and (kind, root) not in keep:
            n = len(store.note_hashes(source_id))
            store.delete_source(source_id)
            stats.removed += n
            key = {"rule": "rules", "library": "libraries"}.get(kind, kind)
            stats.problems.append(Problem(root, f"no longer in [sources] {key}: its {n} note(s) were dropped from "
                                                f"the index (`recall index --kind {kind} {root}` keeps it on its own)"))
    if json.dumps(now) != (store.setting(LISTED) or "[]"):
        store.set_setting(LISTED, json.dumps(now))


LINKED = "linked_folders"  # the store's setting: a folder named through a link -> where it led, at the last run


def drop_repointed(store: Store, given: Sequence[SourceSpec], listed: Sequence[SourceSpec],
                   stats: SyncStats) -> None:
    """A folder given by a name that now leads elsewhere than at the last run (a symlink
    re-pointed, ``notes -> v2`` where it was ``v1``): the folder it led to before leaves with
    its notes, unless this run was given it or ``[sources]`` lists it. The index kept both, the
    old version beside the new, and their near tie kept the hook silent (outside tester's AJ06)."""
    import json
    import os

    from recall.privacy.masking import mask_path

    links = _links(store)
    before_links = dict(links)
    keep = {(s.kind, str(s.root.resolve())) for s in [*given, *listed]}
    for spec in given:
        name, now = os.path.abspath(spec.root), str(spec.root.resolve())
        led = links.pop(mask_path(name), None)  # kept as the store keeps names: masked
        if name != now:
            links[mask_path(name)] = now
        if led is None or led == now or (spec.kind, led) in keep:
            continue
        if any(os.path.realpath(other) == led for other in links):  # another name leads there still
            continue
        for source_id, kind, root, _project in store.sources():
            if (kind, root) == (spec.kind, led):
                n = len(store.note_hashes(source_id))
                store.delete_source(source_id)
                stats.removed += n
                stats.problems.append(Problem(name, f"now leads to {now}: the {n} note(s) of {led}, where it led "
                                                    f"before, were dropped from the index (`recall index {led}` "
                                                    "keeps that folder on its own)"))
    if links != before_links:
        store.set_setting(LINKED, json.dumps(links, ensure_ascii=False))


def _links(store: Store) -> dict[str, str]:
    """``LINKED``: each folder named through a link (masked, as the store keeps names) -> where it led."""
    import json

    try:
        return {str(k): str(v) for k, v in json.loads(store.setting(LINKED) or "{}").items()}
    except (ValueError, TypeError, AttributeError):
        return {}


def link_names(store: Store) -> dict[str, str]:
    """Where each folder named through a link led at the last run -> that name (``LINKED``): a
    watcher of every indexed folder looks where the name leads now (``recall.watch``)."""
    return {led: name for name, led in _links(store).items()}


def record_link(store: Store, name: str, now: str) -> None:
    """``name`` leads to ``now`` from now on (a watcher followed it): a later `recall index NAME`
    compares with this, not with where it led when it was indexed (it kept both: an outside
    tester's, stop 56)."""
    import json

    from recall.privacy.masking import mask_path

    links = _links(store)
    if links.get(mask_path(name)) != now:
        store.set_setting(LINKED, json.dumps({**links, mask_path(name): now}, ensure_ascii=False))


def known_sources(store: Store, home: Path, given: Sequence[SourceSpec],
                  salvaged: Sequence[tuple[str, str, str | None]] = ()) -> Known:
    """Every folder the store (or, when it was emptied, the index generations) knows, but
    those in ``given``."""
    from recall.indexing.indexer import SourceSpec

    taken = {(s.kind, str(s.root.resolve())) for s in given}
    known = [(k, r, p) for _, k, r, p in store.sources()] + list(salvaged)
    out = Known()
    if not known:  # a store emptied or deleted lost its folders: its index still names them
        from recall.store.salvage import index_sources

        known = index_sources(home)
        if known:
            out.said.append(Problem(str(home / DB_NAME), f"held no folder: {len(known)} read back from the index "
                                                         "on disk, and indexed again"))
    for kind, root, project in known:
        if kind == "conversation":
            out.conversations[root] = project
        elif (kind, root) not in taken and not folder_gone(root):
            taken.add((kind, root))
            out.sources.append(SourceSpec(kind, Path(root), project))
    return out


def lost_folders(store: Store, home: Path) -> bool:
    """The store knows no folder while the index on disk names some (it was emptied, deleted or
    replaced): any index then reads them all again (``known_sources``). `index DIR` wrote the
    store's list anew with DIR alone, and the other folders were lost to every later index,
    `--rebuild` included (an outside tester's, stop 56)."""
    from recall.store.salvage import index_sources

    return not store.sources() and bool(index_sources(home))


def newer_elsewhere(model_id: str, home: Path | None = None) -> bool:
    """Whether another model's index went live after this model's (its ``current`` written
    later: the notes were read again since this one was built), or this model has none and
    another has (a switch not embedded yet). A few stats per question: what
    ``Recall.switched_from`` reads in the store's index runs, read from the index files, which
    any thread may (a store's connection belongs to the thread that opened it)."""
    root = index_dir(model_id, home)
    try:
        others = [p / "current" for p in root.parent.iterdir() if p.name != root.name]
    except OSError:
        return False  # no index at all: nothing indexed yet
    try:
        mine = (root / "current").stat().st_mtime_ns
    except OSError:
        mine = -1
    try:
        return any(p.is_file() and p.stat().st_mtime_ns > mine for p in others)
    except OSError:
        return False


def unnested(store: Store, sources: Sequence[SourceSpec]) -> tuple[list[SourceSpec], list[int], list[Problem]]:
    """``sources`` with a folder inside a known folder of the same kind replaced by that
    folder, and the known folders of the same kind inside a source (their notes move to it:
    drop them once it is synced); one line each. A folder and its subfolder indexed both held
    the subfolder's notes twice, and a note deleted and indexed through one was handed over
    through the other (stop 46). A folder known under another kind is one folder too
    (``recall.indexing.kinds``): given without ``--kind`` it is read as what it is; given with
    one, it takes that kind and its old registration leaves."""
    from recall.indexing.indexer import SourceSpec

    known = [(sid, kind, Path(root), project) for sid, kind, root, project in store.sources() if kind != "conversation"]
    out: list[SourceSpec] = []
    inner: list[int] = []
    said: list[Problem] = []
    seen: set[tuple[str, Path]] = set()
    for spec in sources:
        root = spec.root.resolve()
        around = known_around(known, root)
        if spec.kind_given or any(r == root for _, _, r, _ in known):
            outer = sorted((o for o in around if o[0] == spec.kind), key=lambda o: len(o[1].parts))
        else:  # no --kind: the folder whose files these are, whatever its kind
            outer = sorted(around, key=lambda o: -len(o[1].parts))
        if outer:
            k, r, p = outer[0]
            said.append(Problem(str(root), f"inside {r}, indexed already: {r} was read again instead"))
            spec, root = replace(spec, kind=k, root=r, project=p), r
        spec = _one_kind(spec, root, known, inner, said)
        for sid, k, r, _ in known:
            if k == spec.kind and r != root and r.is_relative_to(root) and sid not in inner:
                inner.append(sid)
                said.append(Problem(str(r), f"inside {root}, now indexed with it"))
        for k, r, p in known_around(known, root):  # a folder of another kind around it: read again, carved
            if k != spec.kind and (k, r) not in seen:
                seen.add((k, r))
                out.append(SourceSpec(k, r, p))
        if (spec.kind, root) not in seen:
            seen.add((spec.kind, root))
            out.append(spec)
    return out, inner, said


def known_around(known: Sequence[tuple[int, str, Path, str | None]], root: Path) -> list[tuple[str, Path, str | None]]:
    """(kind, root, project) of the known folders strictly around ``root``."""
    return [(k, r, p) for _, k, r, p in known if r != root and root.is_relative_to(r)]


def _one_kind(spec: SourceSpec, root: Path, known: Sequence[tuple[int, str, Path, str | None]], inner: list[int],
              said: list[Problem]) -> SourceSpec:
    """``spec`` where its folder is known under another kind: read as that kind (no ``--kind``
    given), or the other registration leaves once it is synced (in ``inner``)."""
    for sid, k, r, p in known:
        if r != root or k == spec.kind or sid in inner:
            continue
        if not spec.kind_given:
            said.append(Problem(str(root), f"indexed as {k} already: read again as {k} (`recall index --kind "
                                           f"{spec.kind} {root}` indexes it as {spec.kind} instead)"))
            return replace(spec, kind=k, project=p if spec.project is None else spec.project, kind_given=True)
        inner.append(sid)
        said.append(Problem(str(root), f"indexed as {k} before: now indexed as {spec.kind}, each note once"))
    return spec


PROJECT_NAMES = "project_names"  # the store's setting: project key -> its folder's name (masked), JSON


def remember_project(store: Store, cwd: Path | str) -> None:
    """Record the folder name of the project at ``cwd`` beside its key (``recall index`` in a
    project): a key cannot tell `web-api` from `web/api`, so ``--repo`` matches on names."""
    import json

    from recall.privacy.masking import mask_path
    from recall.privacy.paths import encode_project_path, project_root

    root = project_root(cwd)
    key, name = encode_project_path(root, resolve=False), mask_path(root.name)
    names = project_names(store)
    if root.name and names.get(key) != name:
        store.set_setting(PROJECT_NAMES, json.dumps({**names, key: name}, ensure_ascii=False))


def project_names(store: Store) -> dict[str, str]:
    """What ``remember_project`` recorded (a damaged value: nothing)."""
    import json

    try:
        names = json.loads(store.setting(PROJECT_NAMES) or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in names.items()} if isinstance(names, dict) else {}


def exact_repo(scope: Scope, store: Store) -> Scope:
    """``scope`` with ``--repo NAME`` matched on the recorded folder names (``Scope.with_names``)."""
    if scope.repo is None:
        return scope
    from recall.privacy.masking import mask_path

    return scope.with_names(project_names(store), mask_path(scope.repo))
