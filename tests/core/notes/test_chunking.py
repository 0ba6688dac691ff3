"""Chunk boundaries: exact 700/100 edges, the 6-chunk cap, CJK text (the packaged
[chunking] settings)."""

import pytest

from recall.config.load import packaged_settings
from recall.config.settings import ChunkConfig
from recall.notes.chunking import chunk_text as chunk_with

PACKAGED = packaged_settings().chunking
CHUNK_CHARS, CHUNK_OVERLAP, MAX_CHUNKS = PACKAGED.chars, PACKAGED.overlap, PACKAGED.max_chunks


def chunk_text(name, desc, body, cfg=PACKAGED):
    return chunk_with(name, desc, body, cfg)


def header(name="N", desc="D"):
    return f"{name}\n{desc}\n\n"


def test_packaged_sizes_are_the_original_design():
    assert (CHUNK_CHARS, CHUNK_OVERLAP, MAX_CHUNKS) == (700, 100, 6)


def test_short_note_is_one_chunk_with_name_description_body():
    chunks = chunk_text("Name", "Desc", "body text")
    assert chunks == ["Name\nDesc\n\nbody text"]


def test_exactly_700_characters_is_one_chunk():
    body = "x" * (CHUNK_CHARS - len(header()))
    assert len(header() + body) == 700
    assert chunk_text("N", "D", body) == [header() + body]


def test_701_characters_gives_a_second_chunk_overlapping_by_100():
    body = "".join(chr(ord("a") + i % 26) for i in range(CHUNK_CHARS - len(header()) + 1))
    text = header() + body
    chunks = chunk_text("N", "D", body)
    assert len(chunks) == 2
    assert chunks[0] == text[:700]
    # second chunk: the name on top, then the text from 100 characters before the cut
    assert chunks[1] == "N\n" + text[600:701]
    assert chunks[1][2 : 2 + CHUNK_OVERLAP] == chunks[0][-CHUNK_OVERLAP:]


def test_pieces_are_700_characters_with_stride_600():
    body = "".join(str(i % 10) for i in range(2000))
    text = header() + body
    chunks = chunk_text("N", "D", body)
    assert chunks[0] == text[:700]
    assert chunks[1] == "N\n" + text[600:1300]
    assert chunks[2] == "N\n" + text[1200:1900]
    assert chunks[3] == "N\n" + text[1800:]
    assert len(chunks) == 4


def test_six_chunk_cap():
    body = "y" * 10_000
    chunks = chunk_text("Name", "Desc", body)
    assert len(chunks) == MAX_CHUNKS
    assert all(c.startswith("Name\n") for c in chunks)


def test_cjk_text_is_cut_by_characters():
    body = "日本語のテキスト。" * 200  # 1,800 characters, 3 bytes each in UTF-8
    chunks = chunk_text("メモ", "説明", body)
    text = "メモ\n説明\n\n" + body
    assert chunks[0] == text[:700]
    assert chunks[1] == "メモ\n" + text[600:1300]
    for c in chunks:
        c.encode("utf-8")  # never a broken sequence


def test_long_header_later_pieces_are_body_only():
    desc = "d" * 900
    chunks = chunk_text("N", desc, "BODY" * 10)
    assert chunks[0] == ("N\n" + desc)[:700]
    assert chunks[1] == "N\n" + "BODY" * 10


def test_config_is_validated_and_used():
    with pytest.raises(ValueError):
        ChunkConfig(chars=100, overlap=100, max_chunks=6)
    chunks = chunk_text("N", "D", "z" * 100, ChunkConfig(chars=50, overlap=10, max_chunks=3))
    assert len(chunks) == 3
    assert chunks[0] == (header() + "z" * 100)[:50]
