"""What a run would cost in tokens as an agent CLI sends it: recall's prompts (``notegen.cost``)
and, for each model request a prompt makes, the agent's own instructions and tool schemas."""

from __future__ import annotations

from typing import Protocol

from recall.authoring import notegen

# Tokens each model request carries besides recall's prompt (the CLI's own instructions, tool
# schemas, envelope), one entry per request a prompt makes, each request carrying the prompt:
# `python -m bench.bench_questions` (the real CLIs run by ``agentcli.complete``, against the fake
# model APIs of tests/e2e) with Claude Code 2.1.332, Codex 0.171.0, Gemini CLI 0.61.0 on
# 2026-12-02, rounded up to the next 500. Claude Code with the flags
# ``agentcli.Agent.command`` gives: 491. Codex: 9,622
# (its instructions and 7 tool schemas; one request per `exec`). Gemini CLI: 9,771 and, with no
# model named (its default "auto"), first a router request of 865 that sends the prompt again to
# pick the model (``request_overheads``).
REQUEST_OVERHEAD: dict[str, tuple[int, ...]] = {"claude": (500,), "codex": (10_000,), "gemini": (1_000, 10_000)}


class AgentLike(Protocol):
    """An agent CLI as the cost reads it (``agentcli.Agent``)."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...


def request_overheads(agent: AgentLike) -> tuple[int, ...]:
    """Tokens besides the prompt of each model request one prompt to ``agent`` makes
    (``REQUEST_OVERHEAD``); Gemini CLI asks its router only when no model is named."""
    per = REQUEST_OVERHEAD[agent.name]
    if agent.name == "gemini" and agent.model not in ("", "auto"):
        return per[1:]
    return per


def agent_cost(cost: notegen.Cost, agent: AgentLike) -> notegen.Cost:
    """``cost`` (recall's prompts, ``notegen.cost``) as ``agent`` sends it: each model request a
    prompt makes carries the prompt and the agent's own tokens (``request_overheads``)."""
    per = request_overheads(agent)
    return notegen.Cost(requests=cost.requests * len(per),
                        input_tokens=cost.input_tokens * len(per) + sum(per) * cost.requests,
                        output_tokens=cost.output_tokens)


def describe(cost: notegen.Cost, n_notes: int, agent: AgentLike | None, back: int = 0) -> str:
    """One line: what a run would send and cost, the agent's own tokens per request included;
    ``back``: the notes whose questions come back free (``notegen.FolderState.bought``)."""
    who = agent.name if agent else "an agent CLI (none found: install claude, codex or gemini)"
    sent = agent_cost(cost, agent) if agent else cost
    asked = f"{cost.requests} time(s)" + (f" ({sent.requests} model requests)" if sent.requests != cost.requests
                                          else "")
    free = (f"{back} note(s) get back the questions written before for the same text (nothing sent for them)"
            if back else "")
    if not cost.requests:
        return free or "nothing to send"
    what = f"{n_notes} new or changed note(s)" if n_notes else "the notes' negatives (none yet)"
    return (f"{what}: {who} would be asked {asked}, "
            f"about {sent.total:,} tokens ({sent.input_tokens:,} in, {sent.output_tokens:,} out"
            + ("" if agent else ", plus the agent's own instructions per request") + "); "
            "only the notes' text is sent" + (f"; {free}" if free else ""))
