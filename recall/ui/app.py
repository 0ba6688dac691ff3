"""The pages of ``recall ui``: Starlette routes rendering Jinja2 templates, server-side.

Every search goes to the running daemon (``explain``), which holds the model: this
process never loads one. The message typed on "Try a message" is sent to the daemon in
memory and rendered back; it is never written, logged, cached or put in a URL (POST, then a
redirect to its answer kept in memory under a random id, ``Cache-Control: no-store``, no
access log).
"""

from __future__ import annotations

import hmac
import inspect
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from recall import svg
from recall.privacy import paths
from recall.ui import reports, upload, views
from recall.ui.security import REPORT_CSP, Guard, OneTimeCode, csrf_value

HERE = Path(__file__).resolve().parent
DAEMON_START_S = 120.0  # a cold daemon loads its model and index first
EXPLAIN_TIMEOUT_S = 8.0  # a warm daemon answers in milliseconds; a cold one is waited for apart
MAX_MESSAGE_CHARS = 16_000  # what the hook sends at most
TRIED_KEPT, TRIED_KEPT_S = 20, 600.0  # answers of "Try a message" kept in memory for back and forward
COST_KEPT_S = 60.0  # the status page's estimate of what the notes' questions would cost


@dataclass
class Launch:
    """One launch: where it looks, what it may do."""

    token: str
    port: int
    cwd: Path = field(default_factory=Path.cwd)  # the project whose memory "try" searches, as the hook would
    reports: Path | None = None
    allow_writes: bool = False
    home: Path | None = None
    upload_dir: Path | None = None  # where uploads land (recall.ui.upload); None: no uploads
    reindex: subprocess.Popen | None = None
    reindex_started: float = 0.0
    queued: list[Path | None] = field(default_factory=list)  # jobs asked for while one ran (upload.request_indexing)
    jobs: threading.Lock = field(default_factory=threading.Lock)
    localhost: bool = True  # the page holds [::1] on its port too, so it answers to localhost (server.bind)


@contextmanager
def recall_app(launch: Launch):
    """A ``Recall`` for one request (SQLite connections stay in their thread)."""
    from recall.api import Recall

    app = Recall(launch.home)
    try:
        yield app
    finally:
        app.close()


def ask_daemon(message: str, cwd: Path) -> dict[str, Any]:
    """The daemon's ``explain`` reply; starts the daemon when none runs."""
    from recall.ipc import client

    req = {"cmd": "explain", "prompt": message, "cwd": str(cwd)}
    try:
        try:
            return client.request(req, timeout=EXPLAIN_TIMEOUT_S)
        except client.DaemonUnavailable:
            client.spawn_daemon(cooldown_s=0)
            if client.wait_until_ready(timeout_s=DAEMON_START_S) is None:
                return {"ok": False, "error": "the daemon did not start; `recall serve --foreground` shows why"}
            return client.request(req, timeout=EXPLAIN_TIMEOUT_S)
    except (client.DaemonUnavailable, client.DaemonError) as exc:  # busy, refused (another user's), ...
        if isinstance(exc.__cause__, TimeoutError):
            return {"ok": False, "error": f"the search daemon did not answer in {EXPLAIN_TIMEOUT_S:g} s: it is "
                                          "busy, or stopped or stuck (`recall stop` ends it; the next search "
                                          "starts a fresh one)"}
        return {"ok": False, "error": str(exc)}


def shown(value: Any) -> Any:
    """A value as a page shows it: a string others wrote with its control, bidi (U+202E) and
    zero-width characters and NUL made visible (``\\u202e``), as the terminal shows them; markup
    recall built itself (``Markup``: the charts) as it is. Jinja escapes HTML after this."""
    from markupsafe import Markup

    from recall.privacy.safetext import terminal_text

    return value if not isinstance(value, str) or isinstance(value, Markup) else terminal_text(value)


def shell_word(value: object) -> str:
    """``value`` as one shell word (``shlex.quote``): a folder or collection name someone else
    chose cannot add a command to one the page offers to copy (an outside tester's folder
    ``x;touch PWNED;#`` did)."""
    import shlex

    return shlex.quote(str(value))


class Tried:
    """The last answers of "Try a message", in memory only, each under a random id for
    ``TRIED_KEPT_S`` (back and forward in the browser show them again), ``TRIED_KEPT`` at most."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[float, Any]] = {}

    def put(self, value: Any) -> str:
        import secrets

        now = time.monotonic()
        self._kept = {k: v for k, v in self._kept.items() if now - v[0] < TRIED_KEPT_S}
        while len(self._kept) >= TRIED_KEPT:
            self._kept.pop(next(iter(self._kept)))
        key = secrets.token_urlsafe(16)
        self._kept[key] = (now, value)
        return key

    def get(self, key: str) -> Any:
        kept = self._kept.get(key)
        return kept[1] if kept is not None and time.monotonic() - kept[0] < TRIED_KEPT_S else None


class Pages:
    """The page handlers of one launch: its settings (token, cwd, reports, write access) and
    its templates."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self.tried = Tried()
        self.cost: tuple[float, dict] | None = None  # (when, views.questions): the status page's
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        env = self.templates.env
        env.finalize = shown  # every {{ value }}: control, bidi and zero-width characters made visible
        env.filters["sh"] = shell_word  # a value in a command the page offers to copy: one shell word
        env.globals.update(labels=views.SOURCE_LABELS, ago=views.ago, since=views.since, when=views.when,
                           csrf=csrf_value(launch.token), allow_writes=launch.allow_writes)

    def page(self, request: Request, name: str, status_code: int = 200, **ctx: Any) -> HTMLResponse:
        return self.templates.TemplateResponse(request, name, ctx, status_code=status_code)

    def failing_cleanly(self, handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
        """``handler`` whose failure for a known state (a damaged store or index, a full disk, a
        read-only home: what every command says in one line, with its repair) is that line on a
        page (503), not a server error and a traceback in the terminal."""
        async def run(request: Request) -> Response:
            try:
                if inspect.iscoroutinefunction(handler):
                    return await handler(request)
                return await run_in_threadpool(handler, request)
            except upload.Refused as exc:  # a form that holds a file, or says no size or too much of one
                nav = request.url.path.strip("/").split("/")[0] or "status"
                return self.page(request, "missing.html", exc.status, nav=nav, what=str(exc))
            except Exception as exc:  # noqa: BLE001 - what is not a known state is raised again
                from recall.errors import RecallError
                from recall.store.errors import state_line

                line = str(exc) if isinstance(exc, RecallError) else state_line(exc, paths.recall_home(),
                                                                                  paths.store_file())
                if line is None:
                    raise
                return self.page(request, "failed.html", 503, nav="status", what=line)
        return run

    def csrf_ok(self, form: Any) -> bool:
        return hmac.compare_digest(str(form.get("csrf", "")).encode(), csrf_value(self.launch.token).encode())

    def notes_page(self, request: Request) -> Response:
        p = request.query_params
        with recall_app(self.launch) as app:
            data = views.notes(app, p.get("kind", ""), p.get("q", ""), p.get("project", ""), p.get("what", ""))
            return self.page(request, "notes.html", nav="notes", **data)

    def note_page(self, request: Request) -> Response:
        with recall_app(self.launch) as app:
            data = views.note_page(app, int(request.path_params["pk"]))
            if data is None:
                return self.page(request, "missing.html", 404, nav="notes", what="no such note (re-indexed since?)")
            return self.page(request, "note.html", nav="notes", **data)

    async def try_page(self, request: Request) -> Response:
        """A tried message is POSTed, answered, and the answer kept in this process's memory
        under a random id the browser is sent on to (303, then GET /try?r=ID): a browser keeps
        a POST's body with its history entry and writes it into its session files (an outside
        tester found the message there after Chromium closed); a GET's entry holds the id only."""
        if request.method == "GET":
            kept = self.tried.get(request.query_params.get("r", ""))
            message, result = kept if kept is not None else ("", None)
            return self.page(request, "try.html", nav="try", message=message, result=result, cwd=self.launch.cwd)
        form = await upload.small_form(request)
        if not self.csrf_ok(form):
            return self.page(request, "missing.html", 403, nav="try", what="this form is from another launch: reload")
        message = str(form.get("message", ""))[:MAX_MESSAGE_CHARS]
        from starlette.concurrency import run_in_threadpool

        reply = await run_in_threadpool(ask_daemon, message, self.launch.cwd)
        return RedirectResponse(f"/try?r={self.tried.put((message, explain_view(reply)))}", status_code=303)

    def injections_page(self, request: Request) -> Response:
        with recall_app(self.launch) as app:
            log = views.read_injection_log(app)
            opened = views.read_reads_log(app)
            names = {r.note_id: (r.pk, r.name) for r in app.store.notes()}
            return self.page(request, "injections.html", nav="injections", log=log, opened=opened,
                        tracker=views.reads_log_exists(app), names=names,
                        timeline=log.injections[: views.TIMELINE_SHOWN], days=Markup(svg.per_day(log.per_day)),
                        log_path=paths.daemon_log(app.home))

    def quality_page(self, request: Request) -> Response:
        with recall_app(self.launch) as app:
            found = reports.find_reports(app, self.launch.reports)
            report = found.latest
            from recall.embedding.models import model_id_of
            from recall.privacy.paths import user_config_path

            model_id = model_id_of(app.config.model, app.config.gemini.dimensions)
            t = app.config.thresholds_for(model_id)
            provenance = t.provenance
            ctx = dict(nav="quality", thresholds=t, origin=views.origin_words(t.origins.get("gap_floor", "")),
                       user_config=user_config_path(), provenance=reports.provenance_words(provenance),
                       model_id=model_id, roots=reports.report_roots(app, self.launch.reports),
                       unreadable=found.unreadable)
            curve = None
            if report and report["results"]["curve"] is not None:  # a curve page_view drew once already
                c = report["results"]["curve"]
                value = getattr(t, str(c.get("param", "gap_floor")), None)
                curve = Markup(svg.tradeoff(c, value if isinstance(value, float) else None))
            return self.page(request, "quality.html", report=report, curve=curve, **ctx)

    def report_html(self, request: Request) -> Response:
        """The latest report's own HTML, as the harness wrote it, sandboxed (no script)."""
        with recall_app(self.launch) as app:
            report = reports.find_reports(app, self.launch.reports).latest
        if report is None or not report["html"].is_file():
            return self.page(request, "missing.html", 404, nav="quality", what="no evaluation report with its HTML")
        text = reports.report_text(report["html"])
        if text is None:
            return self.page(request, "missing.html", 404, nav="quality", what="no evaluation report with its HTML")
        return HTMLResponse(text, headers={"content-security-policy": REPORT_CSP})

    def status_page(self, request: Request) -> Response:
        """The questions' cost reads every pending note (20,000 notes: 35 s for an outside
        tester, on every load): it is kept ``COST_KEPT_S`` and computed again after that, or
        after the page changed the consent."""
        with recall_app(self.launch) as app:
            now = time.monotonic()
            if self.cost is None or now - self.cost[0] > COST_KEPT_S or self.cost[1]["generate"] != \
                    app.config.questions.generate:
                self.cost = (now, views.questions(app))
            return self.page(request, "status.html", nav="status", s=views.status(app),
                             job=reindex_state(self.launch), q=self.cost[1])

    async def upload_page(self, request: Request) -> Response:
        return await upload.handle(self, request, reindex_state)

    async def reindex(self, request: Request) -> Response:
        form = await upload.small_form(request)
        if not self.launch.allow_writes:
            return self.page(request, "missing.html", 403, nav="status",
                        what="this page was started read-only; `recall ui --allow-writes` allows re-indexing")
        if not self.csrf_ok(form):
            return self.page(request, "missing.html", 403, nav="status",
                             what="this form is from another launch: reload")
        upload.request_indexing(self.launch, None)
        return RedirectResponse("/status", status_code=303)


    async def questions(self, request: Request) -> Response:
        """Allow or decline the notes' questions by an agent CLI ([questions] generate)."""
        form = await upload.small_form(request)
        if not self.launch.allow_writes:
            return self.page(request, "missing.html", 403, nav="status",
                             what="this page was started read-only; `recall ui --allow-writes` allows it")
        if not self.csrf_ok(form):
            return self.page(request, "missing.html", 403, nav="status",
                             what="this form is from another launch: reload")
        from recall.authoring.agentcli import CHOICES, set_generate

        choice = str(form.get("generate", ""))
        if choice not in CHOICES:
            return self.page(request, "missing.html", 400, nav="status", what=f"not a choice: {choice[:40]}")
        set_generate(choice)
        return RedirectResponse("/status", status_code=303)


def build_app(launch: Launch, codes: OneTimeCode | None = None) -> Guard:
    """The page behind its Guard; ``codes``: the launch's one-time codes (a fresh set, kept
    in memory only, when not given)."""
    pages = Pages(launch)
    said = pages.failing_cleanly
    routes = [
        Route("/", lambda request: RedirectResponse("/notes", status_code=303)),
        Route("/notes", said(pages.notes_page)),
        Route("/notes/{pk:int}", said(pages.note_page)),
        Route("/try", said(pages.try_page), methods=["GET", "POST"]),
        Route("/injections", said(pages.injections_page)),
        Route("/quality", said(pages.quality_page)),
        Route("/quality/report", said(pages.report_html)),
        Route("/status", said(pages.status_page)),
        Route("/reindex", said(pages.reindex), methods=["POST"]),
        Route("/questions", said(pages.questions), methods=["POST"]),
        Route("/upload", said(pages.upload_page), methods=["GET", "POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    return Guard(Starlette(routes=routes), launch.token, launch.port, codes, localhost=launch.localhost)


def reindex_state(launch: Launch) -> str:
    """The page's indexing job in words. Read under ``launch.jobs``: a job that ended with another
    queued is not over, and its thread starts the next under that lock; it said "re-index finished"
    in between, with the upload queued not yet indexed (the flaky-test hunt, stop 58)."""
    with launch.jobs:
        job, queued = launch.reindex, bool(launch.queued)
        code = None if job is None else job.poll()
    if job is None:
        return ""
    if code is None or queued:
        return f"re-indexing since {views.ago(launch.reindex_started)}"
    if code != 0:
        return f"re-index failed (exit {code}); `recall index` shows why"
    skipped = upload.last_warnings()
    return "re-index finished" + (": " + "; ".join(skipped) if skipped else "")


def explain_view(reply: dict[str, Any]) -> dict[str, Any]:
    """The daemon's reply, shaped for the page: bars scaled over the scores shown."""
    if not reply.get("ok"):
        error = str(reply.get("error", "no answer"))
        if error == "unknown command":
            error = "the running daemon is older than this page: `recall stop`, then try again"
        return {"ok": False, "error": error}
    s = reply["settings"]
    ranked = reply["ranked"]
    scores = [r["score"] for r in ranked] + [s["top_floor"]]
    lo, hi = min(0.0, *scores), max(scores)
    if hi - lo > 0.3:  # dense models put every pair far from 0: zoom on the scores shown
        lo = max(lo, min(scores) - 0.05)
    d = reply["decision"]
    mean = d["top"] - d["gap"] if d.get("top") is not None and d.get("gap") is not None else None
    notes_seen = 0
    for r in ranked:
        if r["kind"] != "conversation":
            notes_seen += 1
        r["gap_rank"] = r["kind"] != "conversation" and 2 <= notes_seen <= 11
        r["bar"] = Markup(svg.score_bar(r["score"], lo, hi, s["top_floor"], r["chosen"], mean))
    origins = {k: views.origin_words(v) for k, v in reply.get("origins", {}).items()}
    d["text_bytes"] = len(str(d.get("text", "")).encode("utf-8"))
    d["cap"] = s["full_max_bytes"] if d.get("decision") == "full" else s["short_max_bytes"]
    return {"ok": True, "ranked": ranked, "decision": d, "mean": mean, "settings": s, "origins": origins,
            "provenance": reply.get("provenance"), "line": _claude_line(str(d.get("text") or "")),
            "model": reply.get("model"),
            "timings": reply.get("timings_ms", {}), "project": reply.get("project", "")}


def _claude_line(block: str) -> str:
    """The line Claude Code's hook prints for the daemon's block ("" for none)."""
    from recall.agents.registry import get

    return (get("claude").output(block) or "") if block else ""
