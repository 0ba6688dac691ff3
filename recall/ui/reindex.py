"""``python -m recall.ui.reindex``: re-index every folder already indexed, in its own
process (the page's "re-index" button; the page itself never loads a model). Its output (the
files skipped, with why; the counts) goes to ``logs/ui-reindex.log``, which the page shows.

Each source is synced as ``recall index`` would (same kind, folder and project); past
conversations' titles are left as they are (they are indexed per project, from its folder).
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Every indexed folder; or, given folders (an upload's), those as ``recall index DIR`` would."""
    from recall.api import Recall
    from recall.indexing.indexer import SourceSpec

    app = Recall()
    folders = sys.argv[1:] if argv is None else argv
    specs = [SourceSpec(kind, Path(root), project) for _, kind, root, project in app.store.sources()
             if kind in ("memory", "rule", "dir", "library") and Path(root).is_dir()]
    if folders:
        known = {s.root.resolve(): s for s in specs}  # a folder indexed before keeps its kind
        specs = [known.get(Path(f).resolve(), SourceSpec("dir", Path(f))) for f in folders]
    from recall.notes.problems import grouped

    stats = app.index(specs)  # an upload that came meanwhile: the page runs this again once it ends
    for problem in grouped(stats.problems):  # the page shows them: a skipped upload says why
        print(f"warning: {problem}", flush=True)
    print(f"added {stats.added}, changed {stats.changed}, removed {stats.removed}, "
          f"unchanged {stats.unchanged}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
