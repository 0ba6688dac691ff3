"""Reaching the team store: where it is, how safely, and as whom.

Configuration: ``RECALL_PG_URL`` (env) or ``[team] url = "postgresql://role@host/db?sslmode=verify-full"``
in ``$RECALL_HOME/config.toml``; the env var wins. Keep the password out of the URL and
in ``~/.pgpass`` (libpq reads it). ``[team] schema`` names the schema (default ``recall``).

Every failure to reach or use it is a ``PgStoreError`` with one line that says what to do.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

from recall.errors import RecallError

if TYPE_CHECKING:
    from recall.config.settings import Settings

URL_ENV = "RECALL_PG_URL"
DEFAULT_SCHEMA = "recall"
SECURE_SSLMODES = {"verify-full", "verify-ca"}


class PgStoreError(RecallError):
    """A team store that cannot be used, with a message saying what to do."""


def team_url(config: Settings | None = None) -> str | None:
    """``RECALL_PG_URL``, else ``[team] url`` of the config, else None."""
    url = os.environ.get(URL_ENV)
    if url:
        return url
    return (config.team.url if config is not None else None) or None


def team_schema(config: Settings | None = None) -> str:
    return (config.team.schema if config is not None else None) or DEFAULT_SCHEMA


def transport_warning(url: str) -> str | None:
    """A warning line when ``url`` reaches a host over the network without verified TLS.

    libpq's default ``sslmode=prefer`` falls back to clear text and checks no certificate;
    ``verify-full`` (the documented default for a real server) refuses both. Unix sockets
    and loopback addresses need no TLS.
    """
    try:
        from psycopg.conninfo import conninfo_to_dict

        params = _with_service(conninfo_to_dict(url))
    except Exception:  # no psycopg, or a malformed URL: connecting says which, in one line
        return None
    # libpq connects to hostaddr when it is given (host then only names the certificate's host)
    hosts = str(params.get("host") or os.environ.get("PGHOST") or "").split(",") + \
        str(params.get("hostaddr") or os.environ.get("PGHOSTADDR") or "").split(",")
    remote = [h for h in hosts if h and not h.startswith("/") and not _loopback(h)]
    if not remote:
        return None
    mode = str(params.get("sslmode") or os.environ.get("PGSSLMODE") or "prefer")
    if mode in SECURE_SSLMODES:
        return None
    what = ("TLS without checking the server's certificate" if mode == "require"
            else f"no guaranteed TLS (sslmode={mode})")
    return (f"warning: the team store at {', '.join(remote)} is reached with {what}; "
            "add sslmode=verify-full to the URL (docs/team-store.md, Transport)")


def _with_service(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` over the libpq service they name (``service=``, else ``PGSERVICE``), as libpq
    reads it: the user's service file (``PGSERVICEFILE``, else ``~/.pg_service.conf``), then
    ``PGSYSCONFDIR/pg_service.conf``; the first that has the service gives its defaults (a host
    given there is a host like any other: an outside tester's went unwarned, stop 45)."""
    import configparser

    name = params.get("service") or os.environ.get("PGSERVICE")
    if not name:
        return params
    files = [os.environ.get("PGSERVICEFILE") or os.path.expanduser("~/.pg_service.conf")]
    if os.environ.get("PGSYSCONFDIR"):
        files.append(os.path.join(os.environ["PGSYSCONFDIR"], "pg_service.conf"))
    for path in files:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        if parser.has_section(str(name)):
            return {**dict(parser.items(str(name))), **params}
    return params


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def legacy_owner_label(config: Settings | None = None) -> str | None:
    """``RECALL_OWNER`` or ``[team] owner`` if set: settings that named the owner before the
    server did. They are ignored now; the CLI says so."""
    value = os.environ.get("RECALL_OWNER") or (config.team.owner if config is not None else None)
    return str(value) if value else None


def connect(url: str, wait_s: float, connect_timeout: int = 10):
    """An autocommit psycopg connection whose every wait for the server ends after ``wait_s``
    seconds without a reply (``_stall_guarded``), or PgStoreError with the server's reason."""
    try:
        import pgvector.psycopg  # noqa: F401  (the search needs it; fail here, with the hint)
        import psycopg
    except ImportError as exc:
        raise PgStoreError("the team store needs: pip install 'recall-memory[pg]'") from exc
    try:
        conn = _stall_guarded(psycopg.Connection).connect(url, autocommit=True, connect_timeout=connect_timeout)
    except psycopg.Error as exc:
        from recall.privacy.safetext import one_line

        # libpq's hints come on lines of their own, and it may quote the password it could not read
        reason = hide_password(one_line(str(exc)), url)
        raise PgStoreError(f"cannot connect to the team store: {reason}; {_connect_repair(reason)}") from exc
    conn.wait_s = float(wait_s)
    try:
        # Every session of every team command, a member's or the administrator's, is bounded by the
        # server (`recall team init` waited 90 s on a teammate's lock, the whole team queued behind it,
        # then blamed the network: an outside tester's, D4).
        conn.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT_S}s'")
        conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT_S}s'")
    except BaseException:
        conn.close()
        raise
    return conn


# The server's limits on each session: a member may lock a table (UPDATE and DELETE grants), and
# with no limit every teammate's search and push waited for ever.
STATEMENT_TIMEOUT_S = 60
LOCK_TIMEOUT_S = 10


def lock_holders(conn, schema: str) -> str:
    """The other sessions holding a lock on ``schema``'s tables, in words (after a lock wait ended
    in 55P03): which table, whose session, its pid and state, and the repair."""
    rows = conn.execute(
        "SELECT DISTINCT c.relname, a.usename, a.pid, a.state FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
        " JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.granted AND l.pid <> pg_backend_pid()"
        " AND c.relnamespace = to_regnamespace(%s) ORDER BY a.pid, c.relname", (schema,)).fetchall()
    if not rows:
        return (f"another session holds a lock on a table of schema {schema} (it has ended since); "
                "run the command again")
    tables = sorted({f"{schema}.{r[0]}" for r in rows})
    who = sorted({(r[2], r[1], r[3]) for r in rows})
    sessions = ", ".join(f"pid {pid} of {user} ({state or 'busy'})" for pid, user, state in who)
    return (f"another session holds a lock on {', '.join(tables)}: {sessions}; run the command again when it "
            f"ends, or end it: SELECT pg_terminate_backend({who[0][0]})")


# The server's words for a connection it ended (administrator's terminate, a crash, a
# restart's shutdown, an idle session's timeout) and SQLSTATE class 08, the link itself.
LOST_STATES = frozenset({"57P01", "57P02", "57P05"})


def connection_lost(exc: BaseException) -> bool:
    """Whether psycopg's ``exc`` says the connection ended under a command (the backend
    terminated, the server restarted, the network dropped), not that the server refused what
    was asked: a push killed half-way was said as "the team store refused"."""
    try:
        import psycopg
    except ImportError:
        return False
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state in LOST_STATES or state.startswith("08")


def _connect_repair(reason: str) -> str:
    """What to do about libpq's ``reason`` for refusing a connection."""
    low = reason.lower()
    if "password" in low:  # authentication failed, no password supplied, a password file ignored
        return ("put your password in ~/.pgpass (host:port:database:role:password, chmod 600), "
                "or ask your team's administrator to set it (`recall team add-member ROLE`)")
    if "role" in low and "does not exist" in low:
        return "ask your team's administrator to let you in (`recall team add-member ROLE`)"
    return "check the server's address in [team] url or RECALL_PG_URL (`recall config`) and that the server runs"


@functools.cache
def _stall_guarded(base: Any) -> Any:
    """``base`` (psycopg's Connection) with a client-side limit on every wait for the server.

    The server's statement_timeout and lock_timeout end work the server is doing; they cannot
    end a wait for replies that never arrive (a dropped VPN, a proxy that swallows them): libpq
    has no limit of its own there. Every blocking call of a psycopg connection goes through its
    ``wait``; while one runs, a watchdog thread (one per connection, polling) shuts the socket
    down once ``wait_s`` pass, which makes the call fail at once, and the failure is said as one
    line naming the setting."""
    import socket
    import threading
    import time
    import weakref

    def watch(ref: weakref.ref) -> None:
        while (conn := ref()) is not None and not conn.closed:
            since = conn._waiting_since
            if since is not None and time.monotonic() - since > conn.wait_s:
                conn._stalled = True
                with socket.socket(fileno=os.dup(conn.pgconn.socket)) as sock:
                    sock.shutdown(socket.SHUT_RDWR)  # the socket, not this descriptor of it
                return
            del conn
            time.sleep(0.25)

    class StallGuarded(base):  # type: ignore[misc, valid-type]
        wait_s = float("inf")  # until ``connect`` sets the user's ([team] wait_s)
        _waiting_since: float | None = None
        _stalled = False
        _watchdog: threading.Thread | None = None

        def wait(self, gen, *args, **kwargs):
            if self._watchdog is None:
                self._watchdog = threading.Thread(target=watch, args=(weakref.ref(self),), daemon=True)
                self._watchdog.start()
            self._waiting_since = time.monotonic()
            try:
                return super().wait(gen, *args, **kwargs)
            except Exception as exc:
                if self._stalled:
                    raise PgStoreError(
                        f"the team store sent nothing for {self.wait_s:g} s: the network to it stalled (or the "
                        "server hangs); check the connection and run the command again ([team] wait_s in "
                        "config.toml sets the wait)") from exc
                raise
            finally:
                self._waiting_since = None

    return StallGuarded


def hide_password(text: str, url: str) -> str:
    """``text`` with the password of ``url`` masked, however it is written (spaces included,
    which the masking rules for URLs in prose do not take), as written and URL-decoded."""
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url).password
    except ValueError:
        return text
    for form in {password or "", unquote(password or "")}:
        if len(form) >= 2:
            text = text.replace(form, "[REDACTED]")
    return text
