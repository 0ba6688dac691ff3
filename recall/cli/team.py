"""``recall team ...``: the team store (PostgreSQL + pgvector, ``recall.team.store``).

Members push, search, look and forget; the database administrator sets the store up
(``init``, ``recall.team.admin``) and lets people in and out (``add-member``, ``remove-member``,
``recall.team.members``). Who may read and change what is decided by the server (roles and
row-level security), not here.
``recall.cli.main`` adds the group; psycopg is imported inside the commands.
"""

from __future__ import annotations

import functools
from contextlib import closing
from pathlib import Path

import click

from recall.cli.common import (
    FolderPath,
    UserError,
    fail_cleanly,
    recall_app,
    say,
    say_json,
    scope_flags,
    typed_text,
    warn,
)
from recall.privacy.safetext import one_line
from recall.team import pushed, rows


def _server_error() -> type[Exception]:
    """psycopg's base error (a row policy or a privilege the server refused), if installed."""
    from recall.team.store import PgStoreError

    try:
        import psycopg
    except ImportError:  # PgIndex says how to install it
        return PgStoreError
    return psycopg.Error


def _clean_errors(fn):
    """``fail_cleanly`` (PgStoreError is a ``RecallError``), and the server's refusals as one
    line in the server's words."""
    cleaned = fail_cleanly(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return cleaned(*args, **kwargs)
        except _server_error() as exc:
            from recall.team.store import LOCK_TIMEOUT_S, STATEMENT_TIMEOUT_S

            sqlstate = getattr(exc, "sqlstate", None)
            if sqlstate in ("57014", "55P03"):  # query_canceled (statement_timeout), lock_not_available
                raise UserError(f"the team store did not answer in time ({LOCK_TIMEOUT_S} s for a lock, "
                                f"{STATEMENT_TIMEOUT_S} s a statement): another session holds its tables, or "
                                "the server is overloaded; try again later, or ask its administrator") from None
            from recall.team.connect import connection_lost

            text = one_line(str(exc).strip().splitlines()[0] if str(exc).strip() else "")  # not its CONTEXT lines
            if connection_lost(exc):  # the link ended under the command (terminated, restarted, dropped)
                raise UserError(f"the connection to the team store was lost ({text or 'no reason given'}): the "
                                "server ended the session, restarted, or the network dropped; run the command "
                                "again (a push sends what is missing)") from None
            raise UserError(f"the team store refused: {text or type(exc).__name__}") from None
    return wrapper


def _url(app, url: str | None) -> str:
    from recall.team.connect import URL_ENV, PgStoreError, team_url, transport_warning

    url = url or team_url(app.config)
    if not url:
        raise PgStoreError(f"no team store configured: set {URL_ENV} or [team] url in config.toml")
    warning = transport_warning(url)
    if warning:
        say(warning, err=True)
    return url


def _team_index(app, url: str | None):
    from recall.team.connect import legacy_owner_label, team_schema
    from recall.team.store import PgIndex

    label = legacy_owner_label(app.config)
    if label:
        say(f"note: RECALL_OWNER / [team] owner ({label}) is ignored: the server knows you as the "
            "database role you connect as", err=True)
    emb = app.embedder
    return PgIndex(_url(app, url), emb.model_id, emb.dimension, schema=team_schema(app.config),
                   wait_s=app.config.team.wait_s)


_url_option = click.option("--url", help="postgresql:// URL (default: RECALL_PG_URL, then [team] url).")


@click.group("team")
def team() -> None:
    """Share notes through a PostgreSQL + pgvector server (RECALL_PG_URL or [team] url).

    Notes are embedded here; the server gets masked text and vectors, and at search time
    only the question's vector, never its text. Each member connects as their own
    database role; the server lets a role read team rows and its own, and change only
    its own (docs/team-store.md).
    """


@team.command("init")
@click.option("--adopt", "adopt", multiple=True, metavar="LABEL=ROLE",
              help="Give the rows an older recall pushed under owner LABEL (user@host) to ROLE. Repeatable.")
@_url_option
@_clean_errors
def team_init(adopt: tuple[str, ...], url: str | None) -> None:
    """Set up or upgrade the team store (the database administrator, once; safe to rerun).

    Creates what is missing: the vector extension, the schema and tables with row-level
    security, the roles SCHEMA_member (read team rows and their own, write their own) and
    SCHEMA_reader (read only), and their grants; upgrades a schema made by an older
    recall. Prints what it did. Uses this machine's model (config `model`).
    """
    from recall.team.admin import init_store
    from recall.team.connect import team_schema

    pairs = {}
    for item in adopt:
        label, sep, role = item.rpartition("=")
        if not sep or not label or not role:
            raise UserError(f"--adopt {item!r}: expected LABEL=ROLE, e.g. --adopt alice@laptop=alice")
        pairs[label] = role
    app = recall_app()
    emb = app.embedder
    for line in init_store(_url(app, url), team_schema(app.config), emb.model_id, emb.dimension, pairs,
                          wait_s=app.config.team.wait_s):
        say(line)


@team.command("add-member")
@click.argument("name")
@click.option("--read-only", is_flag=True, help="Search only (SCHEMA_reader): no push, no forget.")
@click.option("--password-file", type=click.File("r"), help="Read the password from this file's first line "
              "('-' for stdin). Default: prompt (not echoed).")
@click.option("--no-password", is_flag=True, help="Set no password (client certificates, or a role that has one).")
@click.option("--keep-rows", is_flag=True, help="NAME is the same person as a removed NAME whose rows were kept: "
              "let them have those rows again (without it, a name that owns rows is refused).")
@_url_option
@_clean_errors
def team_add_member(name: str, read_only: bool, password_file, no_password: bool, keep_rows: bool,
                    url: str | None) -> None:
    """Create database role NAME for a teammate, or let an existing role in.

    NAME then connects as itself: the server sets the owner of what NAME pushes and
    shows NAME only team rows and its own. The password goes to the server as a SCRAM
    hash; NAME keeps it in ~/.pgpass.
    """
    from recall.team.connect import team_schema
    from recall.team.members import add_member

    if password_file is not None and no_password:
        raise UserError("--password-file and --no-password exclude each other")
    password = None
    if password_file is not None:
        password = password_file.readline().rstrip("\r\n")
        if not password:
            raise UserError(f"{password_file.name}: the first line is empty; put the password there")
    elif not no_password:
        password = click.prompt(f"Password for {name}", hide_input=True, confirmation_prompt=True)
    app = recall_app()
    for line in add_member(_url(app, url), team_schema(app.config), name, read_only=read_only,
                           password=password, keep_rows=keep_rows, wait_s=app.config.team.wait_s):
        say(line)


@team.command("remove-member")
@click.argument("name")
@click.option("--keep-rows", is_flag=True, help="Keep what NAME pushed (their team rows stay in every search).")
@click.confirmation_option(prompt="Revoke this member's access to the team store (and delete what they pushed, "
                                  "unless --keep-rows)?")
@_url_option
@_clean_errors
def team_remove_member(name: str, keep_rows: bool, url: str | None) -> None:
    """Revoke NAME's access (the administrator) and delete every row NAME pushed, private ones included.

    NAME keeps its database role (DROP ROLE it if it serves nothing else). A later add-member
    NAME is refused while rows of NAME are kept, unless --keep-rows says it is the same person.
    """
    from recall.team.connect import team_schema
    from recall.team.members import remove_member

    app = recall_app()
    for line in remove_member(_url(app, url), team_schema(app.config), name, keep_rows=keep_rows,
                              wait_s=app.config.team.wait_s):
        say(line)


@team.command("push")
@click.argument("dirs", nargs=-1, type=FolderPath(exists=True, file_okay=False, path_type=Path))
@click.option("--kind", type=click.Choice(rows.SOURCE_KINDS), default="dir", show_default=True,
              help="What DIRs hold.")
@click.option("--team/--private", "shared", default=None,
              help="Visible to every teammate, or to you only. Default: rules and dirs "
                   "are shared, memory is private.")
@_url_option
@_clean_errors
def team_push(dirs: tuple[Path, ...], kind: str, shared: bool | None, url: str | None) -> None:
    """Push notes (DIRs, or this project's memory and the [sources] rules folders; never
    [sources] libraries unless given as DIRs).

    Only new or changed notes are embedded and sent; notes deleted here are deleted there.
    """
    from recall.indexing.indexer import Indexer, SourceSpec, SyncStats
    from recall.notes.files import shown_path
    from recall.privacy.paths import project_key

    app = recall_app()
    cwd = Path.cwd()
    if dirs:
        plan = [SourceSpec(kind, d, project_key(cwd) if kind == "memory" else None) for d in dirs]
    else:
        plan = [s for s in app.default_sources(cwd) if s.kind in rows.BARE_PUSH_KINDS and s.root.is_dir()]
    if not plan:
        raise UserError("nothing to push: give DIRs, or create this project's memory folder first")
    with closing(_team_index(app, url)) as index:
        # The one write path `recall index` takes (recall.indexing.indexer), into the team store.
        indexer = Indexer(index, app.embedder, app.config.chunking)
        _drop_gone(index, app.home)
        pushed.remember(index.identity, [(s.kind, str(s.root.resolve())) for s in plan], home=app.home)
        for i, spec in enumerate(plan):
            visible = shared if shared is not None else spec.kind != "memory"
            stats = SyncStats()
            try:
                indexer.sync_source(spec, team=visible, stats=stats)
            except _server_error() as exc:
                _lost_midway(exc, spec.root, stats, plan[i + 1:], earlier=i > 0)
                raise
            indexer.rebuild()  # the server's index is already current: lets go of the vectors held
            from recall.notes.problems import grouped

            for p in grouped(stats.problems):
                warn(p)
            say(f"{shown_path(spec.root.resolve())} ({spec.kind}, {'team' if visible else 'private'}): "
                f"added {stats.added}, changed {stats.changed}, removed {stats.removed}, "
                f"unchanged {stats.unchanged}")


def _lost_midway(exc: Exception, root: Path, stats, left: list, earlier: bool) -> None:
    """A push whose connection ended in ``root``: one line with what was pushed and what was not,
    and the repair. Each note is written whole in one transaction, and a push sends only what
    the server lacks (its hashes compared), so pushing again finishes it; any other error goes on."""
    from recall.notes.files import shown_path
    from recall.team.connect import connection_lost

    if not connection_lost(exc):
        return
    text = one_line(str(exc).strip().splitlines()[0] if str(exc).strip() else "") or "no reason given"
    rest = f"; not reached: {len(left)} more folder(s)" if left else ""
    above = " (the folders said above were pushed)" if earlier else ""
    raise UserError(f"the connection to the team store was lost during the push ({text}): "
                    f"{shown_path(root.resolve())}: added {stats.added}, changed {stats.changed} before it, its "
                    f"other new or changed notes and the removal of notes gone here not pushed{rest}{above}; "
                    "each note is written whole or not at all and a push sends only what the "
                    "server lacks: run `recall team push` again to finish") from None


def _drop_gone(index, home: Path) -> None:
    """The folders pushed from here that are gone here: removed from the server, one line each."""
    from recall.notes.files import shown_path
    from recall.store.records import SourceRef

    done = []
    for kind, root in pushed.gone(index.identity, home):
        n = index.delete_source(SourceRef(kind, root))
        done.append((kind, root))
        say(f"{shown_path(root)} ({kind}): gone here, so removed from the team store with its {n} note(s)")
    if done:
        pushed.remember(index.identity, [], done, home=home)


@team.command("search")
@click.argument("text")
@click.option("--repo", help="Search one other project's notes (its folder name).")
@click.option("--all", "everything", is_flag=True, help="Every note you can see.")
@click.option("-k", "k", default=10, show_default=True, type=click.IntRange(1, 1_000), help="Notes to list.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_url_option
@_clean_errors
def team_search(text: str, repo: str | None, everything: bool, k: int, as_json: bool,
                url: str | None) -> None:
    """Search your notes and the team's on the server (the question stays here). TEXT `-`:
    read from stdin (a command line is visible to other users in the process list)."""
    from recall.indexing.known import exact_repo
    from recall.ranking.scope import Scope

    text = typed_text(text)
    app = recall_app()
    scope = exact_repo(Scope.from_flags(Path.cwd(), *scope_flags(repo, everything)), app.store)  # as `recall search`
    qvec = app.embedder.embed_queries([text])  # only this vector is sent
    with closing(_team_index(app, url)) as index:
        hits = index.search(qvec, scope, k)
    if as_json:  # an agent may read it: every string one line, no quote or tag of its own (agent_json)
        from recall.privacy.safetext import agent_json

        say_json(agent_json([{"score": round(h.score, 4), **{key: h.note.get(key) for key in (
            "id", "name", "description", "path", "kind", "owner", "team")}} for h in hits]), indent=2)
        return
    if not hits:
        say("(no notes)", err=True)
    from recall.privacy.safetext import agent_path, agent_quoted

    for rank, h in enumerate(hits, 1):  # a teammate's words quoted as the hook quotes them: an agent may read this
        n = h.note
        say(f"{rank:3d}  {h.score:.4f}  [{n['kind']}] [from {agent_quoted(n['owner'])}] {agent_quoted(n['name'])} — "
            f"{agent_quoted(n['description'])}  ({one_line(agent_path(n['path']))})")


@team.command("status")
@_url_option
@_clean_errors
def team_status(url: str | None) -> None:
    """Server, schema, model, your role and the counts you can see."""
    app = recall_app()
    with closing(_team_index(app, url)) as index:
        info = {"role": index.owner, "access": index.access(), "schema": index.schema,
                "model_id": index.model_id, **index.counts()}
    for key, value in info.items():
        say(f"{key}: {value}")


@team.command("forget")
@click.confirmation_option(prompt="Delete every note you pushed to the team store?")
@_url_option
@_clean_errors
def team_forget(url: str | None) -> None:
    """Delete everything your role pushed (teammates' notes are untouched: the server refuses)."""
    app = recall_app()
    with closing(_team_index(app, url)) as index:
        say(f"deleted {index.delete_own()} source(s) of {index.owner}")
        pushed.clear(index.identity, app.home)
