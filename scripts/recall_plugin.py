"""recall as a Claude Code plugin: the launcher the plugin's hooks and MCP server run.

Standard library only: it runs with the ``python3`` on PATH before recall's own
environment exists. Everything it creates lives in the plugin's data folder
(``${CLAUDE_PLUGIN_DATA}``, kept across plugin updates):

    venv/          a virtualenv with recall (``pip install <plugin root>[mcp]``)
    home/          RECALL_HOME: the index, the daemon's socket and log, config.toml
    env.json       written last by a finished setup: {"version", "build", "plugin_time", "python", "base"}
    setup.log      what the setup did (0600)
    setup.failed   why the last setup failed and the repair, one line (gone once one succeeds)
    option.applied the plugin option generate_questions last written to config.toml

A setup repairs what it finds (stop 46, an outside tester): a venv half-built (killed during
ensurepip, a Debian without python3-venv) or whose Python was removed or replaced is built
again; a failure is said at the next session start with its repair, and tried again. An update
keeps the installed build answering until the new one is installed, then stops the old daemon; a session
of an older copy still open after an update uses the newer copy's install, not its own. A build is
told by its files' contents (``build_id``), not by the version string, which changes seldom.

Subcommands (see hooks/hooks.json and .mcp.json at the plugin root):

    session-start  SessionStart hook. First run: starts the setup in the background
                   (venv, pip install, `recall index` of this project's notes, the daemon)
                   and says so in a systemMessage; never blocks the session. Later runs:
                   re-indexes this project's notes in the background (only changed notes
                   are embedded) and prints nothing.
    mcp            The MCP server (``recall.mcp``, which also serves the no-spawn hook
                   tool ``recall_context``). Before the setup has finished it starts the
                   setup and serves a stand-in (standard library, MCP over stdio) whose
                   tools answer empty text: the hook gets nothing, the session connects
                   the server as usual, and the next session gets the real one. (A server
                   that exits instead is remembered as failed by Claude Code, which then
                   does not start it in later sessions either.)
    cli ARGS...    ``recall ARGS...`` with the plugin's environment (for the skill).
    setup [CWD]    The setup itself, in the foreground (what session-start starts).
    refresh [CWD]  What a later session start runs in the background: the option written to
                   config.toml (where the daemon reads it), then `recall index`; one at a time.

RECALL_PLUGIN_PYTHON names a Python that already has recall (with its ``mcp`` extra)
installed, to use instead of creating the venv (development, tests).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIN_PYTHON = (3, 11)
SETUP_LOCK = "setup.lock"
REFRESH_LOCK = "refresh.lock"
FAILED = "setup.failed"
# A child Python's working folder (and a script's folder) kept off its module path: a `pip/` in
# the project folder ran as the user at the setup (an outside tester's H2). ``-P`` exists from
# 3.11 on; the launcher's own python3 may be older (it then only says so), so its children get it
# from 3.11 on, and every child also runs in the data folder, never in the project's.
SAFE_PATH = ["-P"] if sys.version_info >= (3, 11) else []
APPLIED = "option.applied"


def plugin_version() -> str:
    try:
        return str(json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return "0"


def data_dir() -> Path:
    env = os.environ.get("CLAUDE_PLUGIN_DATA")
    if env:
        return Path(env)
    # Outside a hook or server (the skill's Bash calls): the folder a finished setup wrote.
    base = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude") / "plugins" / "data"
    found = sorted(base.glob("recall*/env.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    if found:
        return found[0].parent
    raise SystemExit("recall: no plugin data folder (CLAUDE_PLUGIN_DATA is not set and no finished setup found)")


def private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def env_python(data: Path) -> Path:
    override = os.environ.get("RECALL_PLUGIN_PYTHON")
    if override:
        return Path(override)
    bindir = "Scripts" if sys.platform == "win32" else "bin"
    return data / "venv" / bindir / ("python.exe" if sys.platform == "win32" else "python")


def installed(data: Path) -> dict | None:
    """A finished setup's env.json whose Python is still the one it installed recall into
    (a venv whose base Python was removed or replaced, a pyenv uninstall or an upgrade, is not:
    its server could not import recall), whatever the plugin's version; else None."""
    info = _env_json(data)
    return info if "python" in info and _works(Path(info["python"]), info.get("base"), "recall") else None


def _env_json(data: Path) -> dict:
    try:
        info = json.loads((data / "env.json").read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def _works(python: Path, base: object, module: str) -> bool:
    """Whether ``python`` is still the interpreter recall was installed with (``base``, its real
    path then, when recorded) and imports ``module``: ~50 ms, once per session or server (a
    venv whose link now leads to another Python, after an upgrade, cannot import recall)."""
    try:
        if not python.exists() or (isinstance(base, str) and os.path.realpath(python) != base):
            return False
        return subprocess.run([str(python), "-P", "-c", f"import {module}"], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def recall_cmd(python: Path, *args: str) -> list[str]:
    """``recall ARGS`` run by ``python``, its working folder and PYTHON* variables off the path."""
    return [str(python), "-E", "-P", "-m", "recall.cli", *args]


def build_id() -> str:
    """A digest of what the setup installs from the plugin (recall's packages and
    pyproject.toml): the plugin's version has read "0.1.0" through every change, so an update
    compared by it was never installed (stop 47, an outside tester); ~10 ms."""
    import hashlib

    digest = hashlib.sha256()
    paths = [ROOT / "pyproject.toml"]
    for package in ("recall", "recall_eval"):
        for folder, dirs, files in os.walk(ROOT / package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            paths += [Path(folder, f) for f in sorted(files) if not f.endswith((".pyc", ".pyo"))]
    for path in paths:
        try:
            digest.update(str(path.relative_to(ROOT)).encode("utf-8", "surrogateescape") + b"\0" + path.read_bytes())
        except OSError:
            continue
    return digest.hexdigest()[:16]


def plugin_time() -> float:
    """When this copy of the plugin was put in place (its manifest's date)."""
    try:
        return (ROOT / ".claude-plugin" / "plugin.json").stat().st_mtime
    except OSError:
        return 0.0


def outdated(info: dict) -> bool:
    """Whether the install ``info`` (env.json) is to be replaced by this plugin's build: another
    build, from a copy of the plugin no newer than this one. Not "another build": an old
    session still open after an update (a /clear) reinstalled its build over the new one, and
    the new one's sessions theirs, in turn, for good (stop 47, an outside tester); the newer
    copy's install serves both (a daemon and an index move forward only)."""
    if info.get("build") == build_id():
        return False
    when = info.get("plugin_time")
    return not isinstance(when, int | float) or when <= plugin_time()


def last_failure(data: Path) -> str | None:
    try:
        return (data / FAILED).read_text(encoding="utf-8", errors="replace").strip()[:600] or None
    except OSError:
        return None


# The plugin's option generate_questions (.claude-plugin/plugin.json userConfig), which Claude
# Code hands a hook as CLAUDE_PLUGIN_OPTION_GENERATE_QUESTIONS, as recall's [questions] generate.
OPTION = "CLAUDE_PLUGIN_OPTION_GENERATE_QUESTIONS"
GENERATE = {"yes": "claude", "no": "off"}
OFFER, OFFER_SHOWN = "questions-offer.txt", "questions-offer.shown"


def recall_env(data: Path) -> dict[str, str]:
    """The environment of recall's processes. The option generate_questions is not in it: it is
    written to config.toml (``apply_option``), which every process reads, the running daemon
    included (an option set to "no" reached no daemon started before: stop 46)."""
    env = dict(os.environ)
    env["RECALL_HOME"] = str(private_dir(data / "home"))
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return env


def apply_option(data: Path, python: Path, env: dict[str, str], run=subprocess.run) -> None:
    """The plugin option, when yes or no, written to config.toml once per change."""
    value = os.environ.get(OPTION)
    if value not in GENERATE:
        return
    try:
        if (data / APPLIED).read_text().strip() == value:
            return
    except OSError:
        pass
    args = ["questions", "on", "--agent", "claude"] if value == "yes" else ["questions", "off"]
    try:
        run(recall_cmd(python, *args), env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        _write_private(data / APPLIED, value)
    except (OSError, subprocess.CalledProcessError):
        pass  # tried again at the next session start (no claude on PATH yet, say)


def _write_private(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the user's only, whatever the umask
    os.fchmod(fd, 0o600)  # a leftover .tmp keeps its mode through O_CREAT
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.replace(tmp, path)


def questions_offer(data: Path) -> str | None:
    """Once, while the option is "ask": what writing the notes' questions would cost (the line
    the last `recall index` left), and how to allow it."""
    home = data / "home"
    offer, shown = home / OFFER, home / OFFER_SHOWN
    if os.environ.get(OPTION, "ask") != "ask" or not offer.is_file() or shown.exists():
        return None
    line = offer.read_text(encoding="utf-8", errors="replace").strip()[:500]
    shown.touch(mode=0o600)
    return (f"recall can have Claude Code write your notes' questions in the background: {line}. "
            "Allow it: /plugin, recall, Configure options, generate_questions = yes (or `recall questions on`).")


def setup_running(data: Path) -> bool:
    """Whether another setup holds the lock (it is released when that process ends)."""
    try:
        import fcntl
    except ImportError:  # Windows: trust the lock file's age
        lock = data / SETUP_LOCK
        return lock.exists() and time.time() - lock.stat().st_mtime < 1800
    fd = os.open(data / SETUP_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases a lock taken here
    return False


def start_setup(data: Path, cwd: str) -> bool:
    """Start ``setup`` detached unless one runs. Returns whether this call started it."""
    private_dir(data)
    if setup_running(data):
        return False
    _detached(["setup", cwd], data)
    return True


class Failed(RuntimeError):
    """A setup step that failed, with the repair the user can make."""

    def __init__(self, what: str, repair: str) -> None:
        super().__init__(f"{what}; {repair}")


def _fresh_venv(data: Path, python: Path, run) -> None:
    """The venv, built again when it cannot run pip (half-built: killed during ensurepip, or a
    Debian without python3-venv) or its Python is not the one recall was installed with."""
    venv = data / "venv"
    if venv.exists() and not _works(python, _env_json(data).get("base"), "pip"):
        shutil.rmtree(venv, ignore_errors=True)
    if not python.exists():
        try:
            run([sys.executable, "-P", "-m", "venv", str(venv)])  # setup() checked 3.11
        except subprocess.CalledProcessError:
            shutil.rmtree(venv, ignore_errors=True)  # half-built: the next try starts clean
            raise Failed(f"`{Path(sys.executable).name} -m venv` could not build the environment (no ensurepip)",
                         "on Debian or Ubuntu: `sudo apt install python3-venv`, then start a new session") from None


def _build_source(data: Path) -> Path:
    """What pip builds recall from, copied into the data folder: building in the plugin's own
    folder wrote build/ and an egg-info into it, and failed where it is read-only (stop 46)."""
    src = data / "build-src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(mode=0o700, parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for package in ("recall", "recall_eval"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return src


def _hold(lock: Path) -> bool:
    """Whether this process now holds ``lock``, until it ends (Windows: the lock file's age
    stands for it, ``setup_running``)."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)  # left open: the lock lasts the process
    try:
        import fcntl
    except ImportError:
        os.utime(lock)
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    return True


def setup(data: Path, cwd: str) -> int:
    """Create the environment and the index; the daemon last. Logs to setup.log; a failure
    is also ``setup.failed``, one line with its repair, which the next session start shows."""
    private_dir(data)
    if not _hold(data / SETUP_LOCK):
        return 0  # another setup runs
    log_path = data / "setup.log"
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as log:
        def run(cmd: list[str], **kw) -> None:
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            kw.setdefault("cwd", data)  # never the project's folder (H2), unless named
            subprocess.run(cmd, stdout=log, stderr=log, check=kw.pop("check", True), **kw)

        step = "setting up"
        try:
            python = env_python(data)
            if not os.environ.get("RECALL_PLUGIN_PYTHON"):
                if sys.version_info < MIN_PYTHON:
                    raise Failed(f"recall needs Python 3.11 or newer as python3; this one is {sys.version.split()[0]}",
                                 "install one (python.org, your package manager or pyenv), then start a new session")
                _fresh_venv(data, python, run)
                step = "pip install (is the package registry reachable?)"
                run([str(python), "-E", "-P", "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
                src = _build_source(data)
                try:
                    run([str(python), "-E", "-P", "-m", "pip", "install", "--quiet", f"{src}[mcp]"])
                finally:
                    shutil.rmtree(src, ignore_errors=True)
            step = "the first index"
            env = recall_env(data)
            apply_option(data, python, env, run=lambda cmd, **kw: run(cmd, env=kw["env"]))
            run(recall_cmd(python, "index", "--quiet"), cwd=cwd, env=env)
            _write_private(data / "env.json", json.dumps({
                "version": plugin_version(), "build": build_id(), "plugin_time": plugin_time(),
                "python": str(python), "base": os.path.realpath(python)}))
            (data / FAILED).unlink(missing_ok=True)
            step = "starting the daemon"
            run(recall_cmd(python, "stop"), env=env, check=False)  # an older version's
            run(recall_cmd(python, "serve"), cwd=cwd, env=env)
            log.write("recall: ready\n")
            return 0
        except (OSError, subprocess.CalledProcessError, RuntimeError) as exc:
            line = str(exc) if isinstance(exc, Failed) else f"{step} failed ({exc}); details in {log_path}"
            log.write(f"recall: setup failed: {line}\n")
            try:
                _write_private(data / FAILED, line)
            except OSError:
                pass
            return 1


def refresh(data: Path, cwd: str) -> int:
    """A later session start's background work, one at a time (sessions started together
    indexed the same notes side by side): the option to config.toml, then `recall index`."""
    if not _hold(data / REFRESH_LOCK):
        return 0  # another session's refresh runs: it reads the same notes
    python, env = Path(_env_json(data).get("python") or env_python(data)), recall_env(data)  # checked by the caller
    apply_option(data, python, env)
    quiet: dict = {"cwd": cwd, "env": env, "stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL,
                   "stderr": subprocess.DEVNULL}
    # The daemon started now, while the user types (none runs after a reboot, or idle past
    # daemon.idle_exit_hours): started by the session's first message instead, it loaded while
    # that message waited, and the message got nothing (stop 60). Detached; one that runs stays.
    subprocess.run(recall_cmd(python, "serve", "--wait", "0"), **quiet)
    return subprocess.run(recall_cmd(python, "index", "--quiet"), **quiet).returncode


def _detached(args: list[str], data: Path) -> None:
    """This script run with ``args`` in the background, in the data folder (never the project's:
    H2); a project folder it works on is in ``args``."""
    kwargs: dict = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL,
                    "close_fds": True}
    if sys.platform == "win32":
        kwargs["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        kwargs["start_new_session"] = True
    subprocess.Popen([sys.executable, *SAFE_PATH, str(Path(__file__).resolve()), *args], cwd=data,
                     env={**os.environ, "CLAUDE_PLUGIN_DATA": str(data)}, **kwargs)


def session_start(data: Path) -> int:
    try:
        event = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        event = {}
    cwd = event.get("cwd") if isinstance(event, dict) and isinstance(event.get("cwd"), str) else os.getcwd()
    if os.environ.get("RECALL_GENERATING"):
        return 0  # a session recall started to write questions (empty folder): nothing to index
    if sys.version_info < MIN_PYTHON:
        return _say(f"recall needs Python 3.11 or newer as python3 (this one is {sys.version.split()[0]}): "
                    "install one (python.org, your package manager or pyenv), then start a new session")
    try:
        private_dir(data)
    except OSError as exc:
        return _say(f"recall cannot use its data folder {data} ({exc.strerror or exc}): make it yours and "
                    f"writable (`sudo chown -R $(id -un) {data}`) or remove it, then start a new session")
    info, failed = installed(data), last_failure(data)
    if info is not None:
        # Re-index this project's notes in the background: only changed notes are embedded
        # (and, once allowed, new or changed notes get their questions: recall.authoring.agentcli).
        _detached(["refresh", cwd], data)
        if outdated(info):  # an update: the installed build answers meanwhile
            started = start_setup(data, cwd)
            if failed or started:
                return _say(f"recall: installing version {plugin_version()} (build {build_id()[:8]}) in the background"
                            + (f" again (the last try failed: {failed})" if failed else "")
                            + f"; the installed one (build {str(info.get('build', 'older'))[:8]}) answers meanwhile. "
                            f"Progress: {data / 'setup.log'}")
            return 0
        if (twice := manual_install(cwd)) is not None:
            return _say(f"recall: {twice} also registers recall's prompt hook (`recall install`): every "
                        "message's notes reach Claude twice. Run `recall uninstall` (with --project if it is "
                        "a project's) with the recall that installed it; the plugin's stays.")
        offer = questions_offer(data)
        return _say(offer) if offer else 0
    started = start_setup(data, cwd)
    if failed:
        return _say(f"recall: the last setup failed: {failed}. "
                    f"{'Trying again' if started else 'A new try runs'} in the background (log: {data / 'setup.log'})")
    what = "setting up" if started else "still setting up"
    return _say(f"recall: first run, {what} in the background (a virtualenv and the index of your notes in "
                f"{data}; a few minutes). Messages get no notes until it is done; the next session has "
                f"them. Progress: {data / 'setup.log'}")


def manual_install(cwd: str) -> Path | None:
    """A Claude Code settings file (the user's, the project's) holding recall's prompt hook from
    `recall install` beside the plugin's own: each message's headlines went to Claude twice (an
    outside tester's AF04; `recall install` no longer adds one while the plugin is enabled)."""
    config = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    root = Path(os.environ.get("CLAUDE_PROJECT_DIR") or cwd)
    for path in (config / "settings.json", *(root / ".claude" / n for n in ("settings.json", "settings.local.json"))):
        try:
            groups = json.loads(path.read_text(encoding="utf-8"))["hooks"]["UserPromptSubmit"]
            hooks = [h for g in groups for h in g.get("hooks", [])]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if any(isinstance(h, dict) and ("recall.agents.hook" in json.dumps(h.get("args", h.get("command", "")))
                                        or (h.get("type") == "mcp_tool" and h.get("server") == "recall"))
               for h in hooks):
            return path
    return None


def _say(message: str) -> int:
    print(json.dumps({"systemMessage": message}))
    return 0


STAND_IN_TOOLS = [
    {"name": "recall_context", "description": "recall is setting up (first run); answers nothing until the "
     "next session.", "inputSchema": {"type": "object", "properties": {"prompt": {"type": "string"},
                                                                       "cwd": {"type": "string"}}}},
]


def stand_in(stdin=None, stdout=None) -> int:
    """A minimal MCP server over stdio (newline-delimited JSON-RPC) while the setup runs:
    it completes the handshake, lists the hook tool and answers every call with empty text."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    for line in stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            reply: dict = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
            stdout.write(json.dumps(reply) + "\n")
            stdout.flush()
            continue
        if not isinstance(msg, dict) or "id" not in msg:
            continue  # a notification (initialized, cancelled): nothing to answer
        method, params = msg.get("method"), msg.get("params") or {}
        if method == "initialize":
            result: dict = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "recall", "version": plugin_version()},
                            "instructions": "recall is setting up; it answers from the next session on."}
        elif method == "tools/list":
            result = {"tools": STAND_IN_TOOLS}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": ""}], "isError": False}
        elif method == "ping":
            result = {}
        else:
            stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                     "error": {"code": -32601, "message": f"method not found: {method}"}}) + "\n")
            stdout.flush()
            continue
        stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        stdout.flush()
    return 0


def mcp(data: Path) -> int:
    """The real server once a setup finished (an older version's while an update installs),
    else the stand-in: never a server that exits, which Claude Code remembers as failed."""
    info = installed(data)
    if info is None:
        try:
            start_setup(data, os.getcwd())
        except OSError as exc:  # a data folder recall cannot use: session-start says it
            print(f"recall: cannot use {data} ({exc.strerror or exc})", file=sys.stderr)
        print(f"recall: setting up its environment in {data} (see setup.log there); "
              f"the MCP server answers from the next session on", file=sys.stderr)
        return stand_in()
    python = str(info["python"])  # the installed one: an update being installed is not used yet
    os.execve(python, [python, "-E", "-P", "-m", "recall.mcp"], recall_env(data))
    return 1  # not reached


def cli(data: Path, args: list[str]) -> int:
    info = installed(data)
    if info is None:
        print(f"recall: not set up yet in {data} (see setup.log there)", file=sys.stderr)
        return 1
    python = str(info["python"])
    os.execve(python, recall_cmd(Path(python), *args), recall_env(data))
    return 1  # not reached


def no_core_dumps() -> None:
    """RLIMIT_CORE 0, soft and hard, for this process and what it starts (recall.privacy.coredumps,
    which this launcher cannot import before the setup): the stand-in server holds every message
    Claude Code sends before the setup ends, and a crash wrote them into a core file in the
    project folder (an outside tester's, stop 60)."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass  # Windows: no core files


def main(argv: list[str]) -> int:
    no_core_dumps()
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    try:
        data = data_dir()
        if command == "session-start":
            return session_start(data)
        if command == "mcp":
            return mcp(data)
        if command == "cli":
            return cli(data, rest)
        if command == "setup":
            return setup(data, rest[0] if rest else os.getcwd())
        if command == "refresh":
            return refresh(data, rest[0] if rest else os.getcwd())
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 0 if command == "session-start" else 1
    except Exception as exc:  # noqa: BLE001 - a hook must never break the session
        print(f"recall: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 0 if command == "session-start" else 1
    print(f"recall: unknown subcommand {command!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
