"""The daemon started as a session starts, before its first message: started by that message
instead, the daemon loaded its model while the message waited, and the message got nothing (past
the hook's budget; issue #22's cold start). Two callers, one rule: the MCP server as it starts
(``recall.mcp.server.start_daemon_early``, the mcp_tool route), and the hook on a session's start
event (``recall.agents.hook``, the command route: the entry `recall install` registers under the
agent's ``SessionStart``). Standard library, ``recall.privacy`` and ``recall.ipc.client`` only: the
hook imports this."""

from __future__ import annotations


def start_daemon(stamped: bool = False) -> bool:
    """Start the daemon, detached, where none runs and an index exists (no store: the first message
    gets nothing either, and wakes none); ``stamped``: only where a hook has started one in this
    home before (its spawn stamp: a client that only searches, through the MCP server, gets no
    daemon). Whether one was started; returns at once (the daemon loads in the background)."""
    from recall.ipc import client
    from recall.privacy.paths import relative_home, run_dir, store_file

    if relative_home() or not store_file().exists():
        return False
    if stamped and not (run_dir() / client.SPAWN_STAMP).is_file():
        return False
    if client.lock_holder() is not None:
        return False  # one runs (or is starting)
    return client.start_missing() is not None  # as a hook that finds no daemon does
