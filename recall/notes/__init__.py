"""Everything that becomes a note: note files (``files``), documents, screenshots and recordings
(``documents``), a note's questions (``questions``), conversation titles (``transcripts``), and the chunker
(``chunking``: 700 / 100 / <= 6)."""
