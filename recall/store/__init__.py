"""What is on disk for the local store: the SQLite store (``sqlite``, ``schema``), the records it keeps
(``records``), the FAISS generations (``vectors``), BM25 postings (``bm25``), and a damaged store set
aside (``salvage``)."""
