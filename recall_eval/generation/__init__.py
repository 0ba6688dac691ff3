"""Generation: question sets, note questions, negatives and restatements written by a context-free model (prompts/)."""
