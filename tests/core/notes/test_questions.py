"""Note-side note questions (questions indexed as extra chunks) and BM25 fusion in the core,
on real SQLite + FAISS files; one pass on the real default model."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from helpers.models import DEFAULT_MODEL
from helpers.notes import write_note
from helpers.paths import SAMPLE_NOTES
from recall.api import Recall
from recall.config.load import load_config
from recall.embedding.models import get_embedder
from recall.indexing.indexer import SourceSpec
from recall.notes.files import parse_note
from recall.notes.questions import MAX_QUESTION_CHARS, MAX_QUESTIONS, QUESTIONS_FILE, clean_questions
from recall.ranking.scope import Scope
from recall.store.vectors import index_dir, load_index

SAMPLE_EXPANSIONS = Path(__file__).resolve().parents[3] / "datasets" / "sample" / "questions.jsonl"


def app_for(home, model="hash", lexical_weight=None):
    config = load_config()
    if lexical_weight is not None:
        config = replace(config, search=config.search.with_lexical_weight(lexical_weight))
    return Recall(home=home, config=config, embedder=get_embedder(model))


def questions_file(folder: Path, rows: dict[str, list[str]], extra_lines: tuple[str, ...] = ()) -> Path:
    path = folder / QUESTIONS_FILE
    lines = [json.dumps({"note": k, "questions": v}, ensure_ascii=False) for k, v in rows.items()]
    path.write_text("\n".join([*lines, *extra_lines]) + "\n", encoding="utf-8")
    return path


def questions_in_store(app) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for stem, text in app.store.db.execute(
        "SELECT n.note_id, c.text FROM chunks c JOIN notes n ON n.id = c.note_id"
        " WHERE c.role = 'question' ORDER BY n.note_id, c.ord"):
        out.setdefault(stem, []).append(text)
    return out


@pytest.fixture
def notes(tmp_path) -> Path:
    d = tmp_path / "notes"
    d.mkdir()
    write_note(d, "deploy-freeze", "No deploys on Friday", "Production deploys stop Friday noon",
               "We froze deploys after the March incident; ship on Monday instead.")
    write_note(d, "invoice-rounding", "Round invoice tax per line", "Tax is rounded per line item",
               "Rounding the total instead gave one-cent differences against the ledger.")
    write_note(d, "helm-values", "Helm values per environment", "One values file per environment",
               "values-prod.yaml and values-staging.yaml; never share secrets between them.")
    return d


def test_front_matter_questions_are_read_and_bad_ones_warned(tmp_path):
    good = b"---\nname: a\ndescription: b\nquestions:\n  - can I deploy today?\n  - release on friday?\n---\nbody\n"
    assert parse_note(tmp_path / "a.md", good).questions == ["can I deploy today?", "release on friday?"]
    bad = b"---\nname: a\nquestions: {x: 1}\n---\nbody\n"
    note = parse_note(tmp_path / "a.md", bad)
    assert note.questions == [] and any("questions" in w for w in note.warnings)


def test_clean_questions_caps_dedupes_and_cuts():
    qs = clean_questions(["  a  b ", "a b", 3, "", *[f"q{i}" for i in range(20)], "x" * 1000])
    assert qs[0] == "a b" and qs.count("a b") == 1 and len(qs) == MAX_QUESTIONS
    assert len(clean_questions(["x" * 1000])[0]) == MAX_QUESTION_CHARS


def test_sidecar_questions_become_question_chunks_and_find_their_note(recall_home, notes):
    questions_file(notes, {"deploy-freeze": ["can I ship the release this afternoon, it's friday"]})
    app = app_for(recall_home)
    stats = app.index([SourceSpec("dir", notes)])
    assert stats.problems == [] and stats.questions_total == 1
    assert questions_in_store(app) == {"deploy-freeze": ["can I ship the release this afternoon, it's friday"]}
    assert app.store.counts()["questions"] == 1
    hits, _ = app.searcher.search("can I ship the release this afternoon, it's friday", Scope(everything=True))
    assert hits[0].note["id"] == "deploy-freeze"
    # without the question the note is not the best match for that message (same words elsewhere: none)
    app.index([SourceSpec("dir", notes, questions=False)])
    assert app.store.counts()["questions"] == 0


SMALL_TALK = ["thanks, looks good", "ok go on", "continue", "lgtm", "sounds good", "yes please do that now",
              "ありがとう、続けてください", "Thanks! Looks good.", "what else?"]


def test_a_question_of_small_talk_alone_never_makes_its_note_speak(recall_home, notes):
    """Stop 42: an outside tester's agent CLI wrote "thanks, looks good", "ok go on" as a note's
    questions; recall then handed the note over on "thanks, looks good, go on". A question needs
    a word besides small talk, wherever it comes from."""
    questions_file(notes, {"invoice-rounding": [*SMALL_TALK, "do we round tax per line or on the total?"]})
    app = app_for(recall_home)
    stats = app.index([SourceSpec("dir", notes)])
    assert questions_in_store(app) == {"invoice-rounding": ["do we round tax per line or on the total?"]}
    assert stats.questions_total == 1
    for message in ("thanks, looks good, go on", "sounds good", "ありがとう、続けてください"):
        assert app.query(message, Scope(everything=True)).decision.kind == "nothing", message
    assert clean_questions(["lgtm", "DB?", "2.14 rollback", "マイグレーションを戻したい"]) == [
        "DB?", "2.14 rollback", "マイグレーションを戻したい"]


def test_editing_the_sidecar_reindexes_only_the_changed_notes(recall_home, notes):
    questions_file(notes, {"deploy-freeze": ["ship friday?"], "helm-values": ["where do prod values go?"]})
    app = app_for(recall_home)
    app.index([SourceSpec("dir", notes)])
    again = app.index([SourceSpec("dir", notes)])
    assert (again.unchanged, again.changed, again.chunks_embedded) == (3, 0, 0)
    questions_file(notes, {"deploy-freeze": ["ship friday?", "release before the weekend?"],
                    "helm-values": ["where do prod values go?"]})
    edited = app.index([SourceSpec("dir", notes)])
    assert (edited.changed, edited.unchanged, edited.chunks_embedded) == (1, 2, 1)
    assert questions_in_store(app)["deploy-freeze"] == ["ship friday?", "release before the weekend?"]
    (notes / QUESTIONS_FILE).unlink()
    gone = app.index([SourceSpec("dir", notes)])
    assert gone.changed == 2 and app.store.counts()["questions"] == 0


def test_bad_sidecar_lines_are_problems_and_the_rest_is_indexed(recall_home, notes):
    questions_file(notes, {"invoice-rounding": ["why is the total off by a cent?"], "no-such-note": ["x?"]},
            extra_lines=("{not json", '{"note": "helm-values", "questions": "not a list"}'))
    stats = app_for(recall_home).index([SourceSpec("dir", notes)])
    messages = [str(p) for p in stats.problems]
    assert len(messages) == 3, messages
    assert any("no-such-note" in m for m in messages) and sum("line skipped" in m for m in messages) == 2
    assert stats.added == 3 and stats.questions_total == 1


def test_secrets_in_questions_are_masked(recall_home, notes):
    key = "AKIA" + "Z7QX3M2PLW9TN4RB"
    questions_file(notes, {"helm-values": [f"is {key} the prod key?"]})
    app = app_for(recall_home)
    app.index([SourceSpec("dir", notes)])
    (text,) = questions_in_store(app)["helm-values"]
    assert key not in text and "[REDACTED]" in text


def test_an_explicit_expansions_file_wins_over_the_folder_sidecar(recall_home, notes, tmp_path):
    questions_file(notes, {"helm-values": ["folder question?"]})
    other = tmp_path / "elsewhere.jsonl"
    other.write_text(json.dumps({"note": "helm-values", "questions": ["explicit question?"]}) + "\n")
    app = app_for(recall_home)
    app.index([SourceSpec("dir", notes, note_questions=other)])
    assert questions_in_store(app) == {"helm-values": ["explicit question?"]}


def test_bm25_reads_the_notes_text_not_their_questions(recall_home, notes):
    questions_file(notes, {"deploy-freeze": ["zanzibar?"]})
    app = app_for(recall_home)
    app.index([SourceSpec("dir", notes)])
    idx = load_index(app.embedder.model_id, recall_home)
    assert idx is not None and idx.lexical is not None
    assert not idx.lexical.scores("zanzibar").any()  # only in a question
    ledger = idx.lexical.scores("ledger")
    assert [idx.notes[i]["id"] for i in np.flatnonzero(ledger)] == ["invoice-rounding"]


FUSION_QS = ["helm rollback in production", "invoice tax rounding per line", "celery retry policy",
             "本番のロールバック手順"]


def test_fusion_reorders_but_the_gap_rule_sees_the_dense_scores(recall_home, sample_notes):
    fused = app_for(recall_home, lexical_weight=0.4)
    fused.index([SourceSpec("dir", sample_notes)])
    dense = app_for(recall_home, lexical_weight=0.0)
    reordered = 0
    for q in FUSION_QS:
        f_hits, f_t = fused.searcher.search(q, Scope(everything=True))
        d_hits, d_t = dense.searcher.search(q, Scope(everything=True))
        assert "lexical_ms" in f_t and "lexical_ms" not in d_t
        assert [round(h.score, 6) for h in f_hits] == [round(h.score, 6) for h in d_hits]
        everything = Scope(everything=True)
        assert fused.query(q, everything).decision.kind == dense.query(q, everything).decision.kind
        reordered += [h.note["id"] for h in f_hits] != [h.note["id"] for h in d_hits]
    assert reordered >= 1  # BM25 changes some order, else the fusion would be a no-op


def test_a_note_with_questions_takes_bm25s_share_for_notes_with_questions(recall_home, sample_notes):
    """``lexical_weight_with_questions`` is BM25's share for a note with questions of its own,
    ``lexical_weight`` for the others: with every note asked about and the first at 0, the order
    is the dense one whatever the second says, and the index knows which notes are asked about."""
    app = app_for(recall_home)
    app.index([SourceSpec("dir", sample_notes, note_questions=SAMPLE_EXPANSIONS)])
    idx = app.searcher.index
    asked = {n["id"] for n, a in zip(idx.notes, idx.asked, strict=True) if a}
    assert asked == {json.loads(line)["note"] for line in SAMPLE_EXPANSIONS.read_text(encoding="utf-8").splitlines()}
    app.store.close()

    def order(lexical: float, with_questions: float) -> list[list[str]]:
        cfg = load_config()
        search = replace(cfg.search, lexical_weight=lexical, lexical_weight_with_questions=with_questions)
        other = Recall(home=recall_home, config=replace(cfg, search=search), embedder=get_embedder("hash"))
        try:
            # the first ten: past them, notes at the same dense score may swap on rounding
            return [[h.note["id"] for h in other.searcher.search(q, Scope(everything=True))[0]][:10] for q in FUSION_QS]
        finally:
            other.store.close()

    dense = order(0.0, 0.0)
    assert order(0.9, 0.0) == dense  # every note has questions: the notes-without share plays no part
    assert order(0.0, 0.9) != dense  # and the with-questions share does


def test_fusion_never_brings_in_a_note_outside_the_scope(recall_home, tmp_path):
    mine, other = tmp_path / "p1", tmp_path / "p2"
    for d in (mine, other):
        d.mkdir()
    write_note(mine, "cache", "Cache policy", "Redis for sessions", "Sessions live in redis with a TTL.")
    write_note(other, "kafka-topics", "Kafka topic naming", "Topics are dotted", "orders.created.v1 style names")
    app = app_for(recall_home, lexical_weight=0.9)
    app.index([SourceSpec("memory", mine, "-p1"), SourceSpec("memory", other, "-p2")])
    hits, _ = app.searcher.search("kafka topic naming orders.created", Scope(project="-p1", shared=False))
    assert [h.note["id"] for h in hits] == ["cache"]


def test_a_generation_without_bm25_is_searched_dense_only(recall_home, sample_notes):
    app = app_for(recall_home, lexical_weight=0.4)
    app.index([SourceSpec("dir", sample_notes)])
    root = index_dir(app.embedder.model_id, recall_home)
    (root / (root / "current").read_text().strip() / "lexical.npz").unlink()
    old = app_for(recall_home, lexical_weight=0.4)
    hits, timings = old.searcher.search("helm rollback", Scope(everything=True))
    assert hits and "lexical_ms" not in timings


@pytest.mark.slow
def test_real_model_shipped_sample_with_its_expansions(recall_home):
    """The default pipeline as `make eval` runs it: the default model, the sample's questions, fusion."""
    app = Recall(home=recall_home)
    assert app.config.model == DEFAULT_MODEL and app.config.search.lexical_weight > 0
    stats = app.index([SourceSpec("dir", SAMPLE_NOTES, note_questions=SAMPLE_EXPANSIONS)])
    lines = [json.loads(line) for line in SAMPLE_EXPANSIONS.read_text(encoding="utf-8").splitlines()]
    assert stats.problems == [] and stats.questions_total == sum(len(clean_questions(x["questions"])) for x in lines)
    assert stats.questions_total >= 5 * 51  # five per note since issue #23
    first = lines[0]
    res = app.query(first["questions"][0], Scope(everything=True))
    assert res.hits[0].note["id"] == first["note"] and "lexical_ms" in res.timings
    assert res.decision.kind != "nothing"
    assert app.query("thanks, that's all for today", Scope(everything=True)).decision.kind == "nothing"
