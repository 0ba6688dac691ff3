"""`recall install` and `recall uninstall`: wire the prompt hook into an agent."""

from __future__ import annotations

from pathlib import Path

import click

from recall.agents.registry import AGENTS
from recall.agents.shared import FORMS
from recall.cli.common import UserError, output_failed, say
from recall.privacy.paths import RELATIVE_HOME, relative_home


def _scope_option(fn):
    fn = click.option("--user", "scope", flag_value="user", default=True,
                      help="Your own settings (default): Claude Code's $CLAUDE_CONFIG_DIR or ~/.claude, "
                           "Codex's $CODEX_HOME or ~/.codex, ~/.gemini, ~/.config/opencode.")(fn)
    return click.option("--project", "scope", flag_value="project",
                        help="This project's settings, at the git root (.claude/, .mcp.json, .codex/, "
                             ".gemini/, .opencode/).")(fn)


_AGENT_CHOICE = click.Choice(list(AGENTS))


@click.command()
@_scope_option
@click.option("--agent", type=_AGENT_CHOICE, default="claude", show_default=True,
              help="Which agent's hook to register (each in its own format; one daemon serves all).")
@click.option("--form", type=click.Choice(FORMS),
              help="Claude Code and Codex: the no-spawn mcp_tool hook (Claude Code's default where "
                   "supported; Codex: opt-in) or a command hook (a process per message).")
@click.option("--track-reads", is_flag=True,
              help="Claude Code only: also record when the agent opens a note recall injected "
                   "(`recall log --stats`).")
@click.option("--skip-check", is_flag=True, help="Do not start the daemon and time a question.")
def install(scope: str, agent: str, form: str | None, track_reads: bool, skip_check: bool) -> None:
    """Register recall's prompt hook with an agent (Claude Code by default).

    Claude Code gets the mcp_tool hook (a tool call on recall's MCP server, no process per
    message) where its version and this environment allow, else the command hook; Codex CLI
    a UserPromptSubmit command hook; Gemini CLI a BeforeAgent command hook; OpenCode a plugin
    file whose chat.message hook adds the block as a hidden part of the message. Idempotent: a
    second run leaves one entry. Then starts the daemon, times a warm question and says
    whether it fits in daemon.hook_budget_ms.
    """
    from recall.agents.checks import agent_file_line, both_scopes, switched_off
    from recall.agents.install import InstallError
    from recall.agents.registry import install_agent
    from recall.config.load import load_config

    if (home := relative_home()) is not None:
        raise UserError(RELATIVE_HOME.format(home=home))
    from recall.privacy.paths import user_config_path

    load_config(user_config_path())  # recall's own config first: one it cannot read stops the install
    try:
        done = install_agent(agent, scope == "project", Path.cwd(), form, track_reads)
    except InstallError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:  # which file or folder, and the repair, in the agent's terms
        raise UserError(agent_file_line(exc)) from None
    for line in [*done, *switched_off(agent, Path.cwd())]:
        say(line)
    if (twice := both_scopes(agent, Path.cwd())) is not None:
        say(twice)
    from recall.ipc.client import retire_older

    if retire_older():  # from before recall's code check: the older code would answer for good
        say("note: the daemon ran recall as it was before an upgrade: asked to stop; the next message starts this one")
    if scope == "project":
        say("note: the entry holds this machine's Python path; teammates run `recall install` too")
    from recall.cli.questions import install_line

    consent = install_line(agent)
    if consent:
        say(consent)
    if skip_check:
        return
    _check_budget(load_config().daemon.hook_budget_ms)


def _check_budget(budget: float) -> None:
    """Start the daemon, time a warm question, and say whether it fits in the hook's budget
    (and whether the budget fits in what the agents wait)."""
    from recall.agents.install import BUDGET_MAX_MS, InstallError, budget_past_wait
    from recall.agents.probe import latency_check
    from recall.privacy.paths import user_config_path

    if (past := budget_past_wait(budget)) is not None:
        say(past)
    try:
        report = latency_check(budget, Path.cwd(), say=say)
    except (InstallError, OSError, RuntimeError) as exc:
        if line := output_failed(exc):  # stdout on a full disk: said as every command says it, not "[Errno 28]"
            raise UserError(f"hook installed, but {line}") from None
        raise UserError(f"hook installed, but the check failed: {exc}") from None
    if report["fits"]:
        say(f"fits in the hook's budget of {budget:.0f} ms")
        return
    wanted = int(report["exchange_max_ms"] * 1.5 + 50)
    head = (f"a warm question took up to {report['exchange_max_ms']} ms, over the hook's budget of "
            f"{budget:.0f} ms: the hook would hand nothing over for such messages.\n")
    if wanted > BUDGET_MAX_MS:  # past what the agents wait: a longer budget would not help
        say(head + "That is longer than an agent waits for its hook: pick a faster model (`recall models`)")
        return
    say(head + f"To raise the cutoff, set in {user_config_path()}:\n\n[daemon]\nhook_budget_ms = {wanted}\n\n"
        "(or pick a faster model: `recall models`)")


@click.command()
@_scope_option
@click.option("--agent", type=_AGENT_CHOICE, default="claude", show_default=True,
              help="Whose hook to remove.")
def uninstall(scope: str, agent: str) -> None:
    """Remove exactly what `recall install` added for that agent (hook, MCP server entry, flags)."""
    from recall.agents.checks import agent_file_line
    from recall.agents.install import InstallError
    from recall.agents.registry import uninstall_agent

    try:
        done = uninstall_agent(agent, scope == "project", Path.cwd())
    except InstallError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(agent_file_line(exc)) from None
    for line in done:
        say(line)

