"""The SQL a team search runs (``recall.team.store.PgIndex``): the scope as a WHERE clause, the
nearest chunks and their notes with every field a teammate wrote cut on the server, and a project's
key as the store keeps it (``team_project``, also what a push writes)."""

from __future__ import annotations

from typing import Any

from recall.notes.files import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS
from recall.privacy.masking import mask_key
from recall.privacy.paths import EVERY_PROJECT
from recall.ranking.scope import SHARED_KINDS, Scope, repo_key
from recall.team import rows


def scope_sql(scope: Scope | None) -> tuple[str, dict[str, Any]]:
    """The SQL twin of ``Scope.admits`` over the chunks' copied kind/project columns."""
    if scope is None or scope.everything:
        return "TRUE", {}
    if scope.repo is not None:
        # as Scope.admits: a recorded folder name, else the key's tail (no LIKE escape); every key
        # as the store keeps it (masked, ``team_project``): a secret in a name is never sent
        wanted = mask_key(repo_key(scope.repo))
        return ("kind IN ('memory', 'conversation') AND (project = ANY(%(exact)s) OR ("
                "project <> ALL(%(named)s) AND (project = %(repo)s OR project LIKE %(repo_tail)s)))",
                {"repo": wanted, "repo_tail": "%-" + wanted, "exact": sorted(_kept(scope.repo_exact)),
                 "named": sorted(_kept(scope.repo_named))})
    shared = "kind = ANY(%(shared_kinds)s)" if scope.shared else "FALSE"
    own = ("(kind <> ALL(%(shared_kinds)s) AND (project = %(project)s OR (kind = 'memory' AND project = %(every)s)))"
           if scope.project is not None else "FALSE")
    return f"({shared} OR {own})", {"shared_kinds": list(SHARED_KINDS), "project": team_project(scope.project),
                                    "every": EVERY_PROJECT}


SEARCH_SQL = """
WITH nearest AS MATERIALIZED (
    SELECT note_pk, embedding <=> %(q)s AS distance
    FROM chunks
    WHERE (owner = session_user OR team) AND embedding IS NOT NULL AND {where}
    ORDER BY distance
    LIMIT %(limit)s
)
SELECT n.id, s.kind, left(s.project, {cut_path}), left(s.root, {cut_path}), left(n.path, {cut_path}),
       left(n.note_id, {cut_name}), left(n.name, {cut_name}), left(n.description, {cut_description}),
       left(n.type, {cut_type}), CASE WHEN octet_length(n.extra::text) > {cut_extra} THEN NULL ELSE n.extra::text END,
       left(s.owner, 64), s.team, 1 - min(t.distance) AS score, (SELECT count(*) FROM nearest) AS fetched
FROM nearest t JOIN notes n ON n.id = t.note_pk JOIN sources s ON s.id = n.source_id
GROUP BY n.id, s.id
ORDER BY score DESC, n.id
LIMIT %(k)s
"""


# Each field a teammate's row holds is cut on the server to what ``rows.text`` keeps of it, plus
# the room it masks past the cut: a member's 100 MB description was fetched whole by every
# teammate's search (3.2 s, 1.5 GB for one note: an outside tester's, stop 58).
CUTS = {"cut_path": 4_096 + rows.MASKED_PAST_LIMIT, "cut_name": MAX_NAME_CHARS + rows.MASKED_PAST_LIMIT,
         "cut_description": MAX_DESCRIPTION_CHARS + rows.MASKED_PAST_LIMIT, "cut_type": 40 + rows.MASKED_PAST_LIMIT,
         "cut_extra": 65_536}


def _kept(keys) -> set[str]:
    return {k for k in map(team_project, keys) if k is not None}


def team_project(key: str | None) -> str | None:
    """A project's key as the team store keeps and asks for it: a secret in a folder's name masked
    (the key went to the server in clear, in every source and chunk row, while the folder's path was
    masked: an outside tester's, stop 58), and, where masking changed it, a short hash of the whole
    key after it, so two projects whose names mask alike stay two (a token's hash gives nothing back)."""
    if key is None:
        return None
    import hashlib

    masked = mask_key(key)
    return key if masked == key else f"{masked}~{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"
