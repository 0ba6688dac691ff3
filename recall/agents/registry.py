"""The agents recall serves: a name for each, and the module that speaks to it.

The hook (``--agent NAME``), the MCP tool and ``recall install --agent NAME`` ask the registry for
the agent's module, imported only when asked for (the hook loads its own agent only). Each module
gives:

    NAME, EVENT, MAX_CHARS, FORMS
    read_event(event: dict) -> recall.agents.wire.Message | None   the agent's stdin event
    output(block: str) -> str | None       the line the hook prints: its envelope, within its cap
    envelope() -> int                      the bytes its envelope adds around the block
    install(project, cwd, form, track_reads) -> list[str]; uninstall(project, cwd) -> list[str]

Standard library only: the hook imports this on every message.
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from types import ModuleType

# name -> module. Adding an agent: one module with the names above, and one line here.
AGENTS = {
    "claude": "recall.agents.claude",
    "codex": "recall.agents.codex",
    "gemini": "recall.agents.gemini",
    "opencode": "recall.agents.opencode",
}
DEFAULT = "claude"


def get(name: str) -> ModuleType:
    """The module of agent ``name`` (a KeyError for a name the registry does not hold)."""
    return importlib.import_module(AGENTS[name])


@functools.cache
def widest_envelope() -> int:
    """The most bytes any agent's envelope adds: the selector's byte caps count the whole line an
    agent prints, so a block within ``cap - widest_envelope()`` fits every agent's line."""
    return max(get(name).envelope() for name in AGENTS)


def install_agent(agent: str, project: bool, cwd: Path | None = None, form: str | None = None,
                  track_reads: bool = False) -> list[str]:
    from recall.agents.writes import run

    done = run(lambda: get(agent).install(project, cwd, form, track_reads))  # all its files, or none
    from recall.config.load import refresh_snapshot

    try:  # the hook's settings ready for the first message (recall.config.snapshot)
        refresh_snapshot()
    except (ValueError, OSError):  # a config that cannot be read: the next `recall` command says why
        pass
    return done


def uninstall_agent(agent: str, project: bool, cwd: Path | None = None) -> list[str]:
    from recall.agents.writes import run

    return run(lambda: get(agent).uninstall(project, cwd))  # all its files, or none


__all__ = ["AGENTS", "DEFAULT", "get", "install_agent", "uninstall_agent", "widest_envelope"]
