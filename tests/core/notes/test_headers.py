"""A note's header (its readable name and description) as a vector of its own: indexed with
the note, kept out of the best-chunk score and the FAISS index, used by search to order the
notes (``[search] header_weight``) while whether to speak stays the best chunks' call."""

import dataclasses

import numpy as np
import pytest

from helpers.notes import write_note
from recall.api import Recall
from recall.config.load import load_config, packaged_settings
from recall.embedding.models import get_embedder
from recall.errors import IndexDamaged
from recall.indexing.indexer import SourceSpec
from recall.notes.chunking import chunk_text, header_text, readable_name
from recall.ranking.scope import Scope
from recall.store.vectors import COSINE_ERROR_MAX, index_dir, load_index


def test_a_file_name_like_name_reads_as_words_and_any_other_name_is_kept():
    assert readable_name("angular-typescript-accessibility-guidelines") == "angular typescript accessibility guidelines"
    assert readable_name("db_failover__runbook") == "db failover runbook"
    assert readable_name("Celery タスクのリトライ方針") == "Celery タスクのリトライ方針"
    assert readable_name("Use e5-small for search") == "Use e5-small for search"  # a sentence: as written
    assert readable_name("pytest") == "pytest"


def test_header_text_is_readable_name_then_description_and_empty_without_either():
    got = header_text("feature-flags-unleash", "Flags live in Unleash")
    assert got == "feature flags unleash\nFlags live in Unleash"
    assert header_text("", "only a description") == "only a description"
    assert header_text("  ", "") == ""


def _app(home, weight: float | None = None, lexical: float | None = None) -> Recall:
    config = load_config()
    search = config.search
    if weight is not None:
        search = dataclasses.replace(search, header_weight=weight)
    if lexical is not None:
        search = search.with_lexical_weight(lexical)
    return Recall(home=home, config=dataclasses.replace(config, search=search), embedder=get_embedder("hash"))


def _folder(tmp_path):
    notes = tmp_path / "notes"
    # The message names the first note's subject; the second note's body repeats the message's
    # words, so its best chunk wins on its own and its header (about something else) pulls it down.
    write_note(notes, "zebra-feeding", "zebra-feeding-schedule", "When the zoo's zebras are fed",
               "Hay at seven, pellets at noon, the vet checks teeth on Fridays. " * 6)
    write_note(notes, "ledger", "Ledger rounding", "Decimal money in the ledger",
               "zebra feeding schedule questions go to the keeper, not to the ledger team. " * 3)
    write_note(notes, "tabs", "Editor settings", "Tabs, spaces and line endings", "Use four spaces. " * 5)
    return notes


def test_every_note_gets_one_header_chunk_outside_faiss_and_a_header_row(recall_home, tmp_path):
    notes = _folder(tmp_path)
    app = _app(recall_home)
    app.index([SourceSpec("dir", notes)])
    roles = app.store.db.execute("SELECT role, COUNT(*) FROM chunks GROUP BY role").fetchall()
    assert dict(roles) == {"text": 3, "header": 3}
    texts = [t for (t,) in app.store.db.execute("SELECT text FROM chunks WHERE role='header' ORDER BY text")]
    assert "zebra feeding schedule\nWhen the zoo's zebras are fed" in texts
    idx = load_index("hash-256", recall_home)
    assert idx is not None and idx.ntotal == 3  # the text chunks only: a header never is a best chunk
    assert idx.headers is not None and idx.headers.shape == (3, 256)
    emb = get_embedder("hash")
    row = [n["id"] for n in idx.notes].index("zebra-feeding")
    want = emb.embed_passages(["zebra feeding schedule\nWhen the zoo's zebras are fed"])[0]
    assert np.allclose(idx.headers[row], want)
    app.store.close()


def _expected_order(notes_dir, message: str, weight: float) -> tuple[list[str], list[float]]:
    """The order the setting says, computed here from the note files with the same model:
    (1 - w) * best chunk + w * header; and the best chunk scores, best first."""
    from recall.notes.files import read_folder

    emb = get_embedder("hash")
    cfg = packaged_settings().chunking
    q = emb.embed_queries([message])[0]
    best, mixed = {}, {}
    for note in read_folder(notes_dir)[0]:
        chunks = emb.embed_passages(chunk_text(note.name, note.description, note.body, cfg))
        best[note.id] = float((chunks @ q).max())
        header = float(emb.embed_passages([header_text(note.name, note.description)])[0] @ q)
        mixed[note.id] = (1 - weight) * best[note.id] + weight * header
    return sorted(mixed, key=lambda k: -mixed[k]), sorted(best.values(), reverse=True)


@pytest.mark.parametrize("lexical", [0.0, 0.4], ids=["dense", "fused"])
def test_the_header_reorders_notes_but_the_gate_sees_the_best_chunks(recall_home, tmp_path, lexical):
    notes = _folder(tmp_path)
    message = "zebra feeding schedule"
    plain = _app(recall_home, weight=0.0, lexical=lexical)
    plain.index([SourceSpec("dir", notes)])
    before = plain.query(message, Scope(everything=True))
    plain.store.close()
    weighted = _app(recall_home, weight=0.6, lexical=lexical)
    after = weighted.query(message, Scope(everything=True))
    weighted.store.close()

    order, best = _expected_order(notes, message, 0.6)
    assert [h.note["id"] for h in before.hits][0] == "ledger"  # its body wins without the header
    if lexical == 0.0:
        assert [h.note["id"] for h in after.hits] == order
    assert after.hits[0].note["id"] == "zebra-feeding" == order[0]
    # The gate's scores are the best chunks', rank by rank, with or without the header.
    assert [h.score for h in after.hits] == pytest.approx([h.score for h in before.hits])
    assert [h.score for h in after.hits] == pytest.approx(best, abs=COSINE_ERROR_MAX)
    assert after.decision.kind == before.decision.kind


def test_a_note_with_questions_orders_by_its_best_chunk_alone(recall_home, tmp_path):
    """The header stands in for questions where a note has none: the index knows which notes
    have questions of their own (their questions already say, in a user's words, what they are
    about; the header's share cost hit@1 there, docs/decision.md), and their order is their best
    chunk's, header row or not."""
    notes = _folder(tmp_path)
    (notes / "questions.jsonl").write_text('{"note": "ledger", "questions": ["how do we round money?"]}\n'
                                           '{"note": "zebra-feeding", "questions": ["when do the zebras eat?"]}\n',
                                           encoding="utf-8")
    app = _app(recall_home, weight=0.6, lexical=0.0)
    app.index([SourceSpec("dir", notes)])
    idx = load_index("hash-256", recall_home)
    assert idx is not None and idx.headers is not None
    assert {n["id"] for n, a in zip(idx.notes, idx.asked, strict=True) if a} == {"ledger", "zebra-feeding"}
    assert idx.headers.any(axis=1).all()  # every note keeps its header vector
    # ledger's body wins on its best chunk, as with no header at all (the weight is 0.6)
    assert app.query("zebra feeding schedule", Scope(everything=True)).hits[0].note["id"] == "ledger"
    app.store.close()


def test_an_index_from_before_headers_orders_by_best_chunk_and_a_damaged_header_file_is_one_line(
        recall_home, tmp_path):
    notes = _folder(tmp_path)
    app = _app(recall_home, weight=0.6, lexical=0.0)
    app.index([SourceSpec("dir", notes)])
    app.store.close()
    root = index_dir("hash-256", recall_home)
    gen = root / (root / "current").read_text().strip()
    (gen / "headers.npy").unlink()  # as a generation written before headers existed
    older = _app(recall_home, weight=0.6, lexical=0.0)
    assert older.query("zebra feeding schedule", Scope(everything=True)).hits[0].note["id"] == "ledger"
    older.store.close()

    np.save(gen / "headers.npy", np.zeros((2, 256), dtype=np.float32))  # rows for two notes of three
    with pytest.raises(IndexDamaged, match="headers.npy"):
        load_index("hash-256", recall_home)


def test_changing_a_notes_body_keeps_its_header_vector(recall_home, tmp_path):
    notes = _folder(tmp_path)
    app = _app(recall_home)
    app.index([SourceSpec("dir", notes)])
    write_note(notes, "tabs", "Editor settings", "Tabs, spaces and line endings", "Use two spaces now.")
    stats = app.index([SourceSpec("dir", notes)])
    assert stats.changed == 1 and stats.chunks_embedded == 1  # the new body; the header was cached
    app.store.close()
