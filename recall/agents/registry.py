"""One entry point per action, whatever the agent: ``install_agent``, ``uninstall_agent``
(``recall install --agent X``; what each route writes is in ``recall.agents``' docstring)."""

from __future__ import annotations

from pathlib import Path

from recall.agents.claude import install_claude, uninstall_claude
from recall.agents.codex import install_codex, uninstall_codex
from recall.agents.gemini import install_gemini, uninstall_gemini
from recall.agents.install import InstallError
from recall.agents.opencode import install_opencode, uninstall_opencode
from recall.agents.shared import AGENTS, FORMS

# --- one entry point ---------------------------------------------------------------------------


def install_agent(agent: str, project: bool, cwd: Path | None = None, form: str | None = None,
                  track_reads: bool = False) -> list[str]:
    if agent == "claude":
        return install_claude(project, cwd, form, track_reads)
    if form == "mcp_tool" and agent != "codex":
        raise InstallError(f"{agent}: only the command form is available (--form command)")
    if track_reads:
        raise InstallError(f"{agent}: --track-reads is for Claude Code's Read tool only")
    if agent == "opencode":
        return install_opencode(project, cwd)
    return install_codex(project, cwd, form) if agent == "codex" else install_gemini(project, cwd)


def uninstall_agent(agent: str, project: bool, cwd: Path | None = None) -> list[str]:
    if agent == "claude":
        return uninstall_claude(project, cwd)
    if agent == "opencode":
        return uninstall_opencode(project, cwd)
    return uninstall_codex(project, cwd) if agent == "codex" else uninstall_gemini(project, cwd)


__all__ = ["AGENTS", "FORMS", "install_agent", "uninstall_agent"]
