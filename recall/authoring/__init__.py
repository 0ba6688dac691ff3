"""Questions, restatements and negatives for a note folder, written by a context-free model: the prompts
(``prompts/``), parsing and writing them (``notegen``), and the agent CLI the user already has that runs them
in the background (``agentcli``)."""
