"""`recall install --agent claude|codex|gemini|opencode`: each agent's prompt hook in its own format.

One daemon serves every agent; only the hook entry differs. What each route writes:

claude, form ``mcp_tool`` (no process per message; Claude Code >= 2.1.118 and the ``mcp``
package importable here)
    settings.json   hooks.UserPromptSubmit += {"type": "mcp_tool", "server": "recall",
                    "tool": "recall_context", "input": {"prompt": "${prompt}", "cwd": "${cwd}",
                    "session_id": "${session_id}"}, "timeout": 5}
    the server      --project: <git root>/.mcp.json mcpServers.recall, and "recall" in
                    .claude/settings.json enabledMcpjsonServers (project servers need approval);
                    --user: mcpServers.recall in ~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json),
                    where `claude mcp add --scope user` writes it
claude, form ``command`` (the fallback): the command hook of ``recall.agents.install``, a shell
        line ending in ``|| exit 1``
codex   hooks.json (~/.codex or $CODEX_HOME; --project: <root>/.codex/hooks.json)
        hooks.UserPromptSubmit += {"type": "command", "command": "<python> -E -P -m recall.agents.hook
        --agent codex || exit 1", "timeout": 5}, and ``[features] hooks = true`` in config.toml when no
        value is set (older releases need it). Codex runs a new user hook only after the user
        trusts it (``/hooks`` in the TUI; ``codex exec --dangerously-bypass-hook-trust``).
codex, form ``mcp_tool`` (--form mcp_tool): hooks.UserPromptSubmit += {"type": "mcp_tool",
        "server": "recall", "tool": "recall_context", "input": {"prompt": "${prompt}"}}, and
        [mcp_servers.recall] (command <python>, args -E -P -m recall.mcp) in config.toml
gemini  .gemini/settings.json (--user: ~/.gemini/settings.json)
        hooks.BeforeAgent += {"type": "command", "name": "recall", "command": "<python> -P -m
        recall.agents.hook --agent gemini", "timeout": 5000}  (milliseconds), and
        ``hooksConfig.enabled = true`` when unset (the stable channel needs it)
opencode  .opencode/plugins/recall.js (--user: ~/.config/opencode/plugins/, or under
        $XDG_CONFIG_HOME): a plugin whose ``chat.message`` hook runs ``<python> -P -m
        recall.agents.hook --agent opencode`` and adds its block as a hidden (synthetic) text part
        of the message; see recall.agents.opencode
--track-reads (claude): hooks.PostToolUse += {"matcher": "Read", "hooks": [<python> -E -P -m recall.agents.track]}

Each agent is one module (``claude``, ``codex``, ``gemini``, ``opencode``) named in
``recall.agents.registry``, which the hook (``--agent X``), the MCP tool ``recall_context`` and
``recall install --agent X`` ask. The core decides once, agent-neutral: the daemon's ``query``
reply carries the decision (the block of headlines, its tier, its bytes), never an envelope;
the agent's module reads its event (``read_event``), wraps the block in its output shape within
its cap (``output``, ``MAX_CHARS``) and installs itself (``install``/``uninstall``).

Adding an agent: write ``recall/agents/<name>.py`` with ``NAME``, ``EVENT``, ``MAX_CHARS``,
``FORMS``, ``read_event(event) -> Message | None`` (``recall.agents.wire.prompt_event_reader(EVENT)``
when its event is ``{"prompt", "cwd"}``: another event's name gets nothing), ``output(block) ->
str | None`` and ``envelope() -> int`` (the bytes its envelope adds: the selector's byte caps
count the widest one; both from ``wire.additional_context(EVENT, MAX_CHARS)`` when it reads
``hookSpecificOutput.additionalContext``) and ``install``/``uninstall``; add one line to
``registry.AGENTS``. Keep its top-level imports to the standard library and
``recall.agents``/``recall.privacy`` (the hook imports it on every message): an installer's
dependencies (``tomlkit``, ``subprocess``) are imported inside the functions that use them.
``tests/core/agents/test_agents.py::test_every_agent_in_the_registry_speaks_the_same_interface`` checks
the names.

``uninstall --agent X`` removes exactly these: our hook entries (recognised by what they run),
and the MCP server entry, approvals, flags and files install added, which it notes in
``RECALL_HOME/installed.json`` (so a server you registered or a flag you set yourself stays).
"""
