"""Store + FAISS index on real files: migrations, incremental updates, atomic swaps,
crash safety, permissions, and one pass on the real default model."""

import json
import os
import shutil
import sqlite3
import stat
import sys
import time

import pytest

from helpers.cli import run_cli, run_cli_process
from helpers.models import DEFAULT_ID
from helpers.notes import write_note
from helpers.paths import SAMPLE_NOTES
from recall.api import Recall
from recall.config.load import packaged_settings
from recall.embedding.models import get_embedder
from recall.indexing.indexer import SourceSpec
from recall.ranking.scope import Scope
from recall.store.records import Chunk, NoteRecord
from recall.store.sqlite import MIGRATIONS, Store
from recall.store.vectors import index_dir, load_index


def app_for(home, model="hash"):
    return Recall(home=home, embedder=get_embedder(model))


def test_migrations_are_named_applied_once_and_upgrade_an_old_store(tmp_path):
    db = tmp_path / "old.db"
    # A store made by the first migration only (as an older recall would have left it).
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    con.executescript(MIGRATIONS[0][1])
    con.execute("INSERT INTO migrations VALUES (?, 0)", (MIGRATIONS[0][0],))
    con.commit()
    con.close()
    store = Store(db)
    assert store.applied_migrations() == [name for name, _ in MIGRATIONS]
    cols = [r[1] for r in store.db.execute("PRAGMA table_info(notes)")]
    assert "extra" in cols
    assert store.migrate() == []  # nothing left to apply
    store.close()


def test_incremental_index_embeds_only_what_changed(recall_home, sample_notes):
    app = app_for(recall_home)
    src = [SourceSpec("dir", sample_notes)]
    first = app.index(src)
    assert first.added == len(list(sample_notes.glob("*.md"))) and first.chunks_embedded > 0

    again = app.index(src)
    assert (again.added, again.changed, again.removed, again.chunks_embedded) == (0, 0, 0, 0)

    # Edit the end of a long note: only the chunks whose text changed are embedded.
    long_note = max(sample_notes.glob("*.md"), key=lambda p: p.stat().st_size)
    long_note.write_text(long_note.read_text() + "\nOne more line at the very end.\n")
    (sample_notes / "decimal-not-float.md").unlink()
    write_note(sample_notes, "brand-new", "Brand new note", "about zebras", "zebra zebra")
    third = app.index(src)
    assert (third.added, third.changed, third.removed) == (1, 1, 1)
    assert 2 <= third.chunks_embedded <= 3  # the new note's chunk + the long note's last chunk(s)

    hits, _ = app.searcher.search("zebra zebra", Scope(everything=True))
    assert hits[0].note["id"] == "brand-new"
    assert "decimal-not-float" not in {h.note["id"] for h in hits}


def test_an_index_of_unchanged_notes_writes_no_new_generation(recall_home, sample_notes):
    """Every session start runs `recall index`; with nothing changed each wrote a new
    generation of the same notes (FAISS, BM25, headers, fsynced), which every daemon then
    loaded again. The live generation stays when it was built from the same inputs and its
    files are still its own bytes; a change, or a damaged file, writes a new one."""
    app = app_for(recall_home)
    src = [SourceSpec("dir", sample_notes)]
    app.index(src)
    root = index_dir("hash-256", recall_home)
    live = (root / "current").read_text()
    stamps = {p.name: p.stat().st_mtime_ns for p in (root / live).iterdir()}
    app.index(src)
    assert (root / "current").read_text() == live
    assert {p.name: p.stat().st_mtime_ns for p in (root / live).iterdir()} == stamps
    assert sorted(p.name for p in root.glob("gen-*")) == [live]

    faiss_file = root / live / "lexical.npz"
    faiss_file.write_bytes(faiss_file.read_bytes()[:-1] + bytes([faiss_file.read_bytes()[-1] ^ 1]))
    app.index(src)
    assert (root / "current").read_text() != live  # a damaged generation is not kept for its inputs
    repaired = (root / "current").read_text()

    write_note(sample_notes, "brand-new", "Brand new note", "about zebras", "zebra zebra")
    app.index(src)
    assert (root / "current").read_text() != repaired
    hits, _ = app.searcher.search("zebra zebra", Scope(everything=True))
    assert hits[0].note["id"] == "brand-new"


def test_files_are_private(recall_home, sample_notes):
    if sys.platform == "win32":
        pytest.skip("POSIX permissions")
    app_for(recall_home).index([SourceSpec("dir", sample_notes)])
    for root, dirs, files in os.walk(recall_home):
        for d in dirs:
            assert stat.S_IMODE(os.stat(os.path.join(root, d)).st_mode) == 0o700, d
        for f in files:
            assert stat.S_IMODE(os.stat(os.path.join(root, f)).st_mode) == 0o600, f
    assert stat.S_IMODE(os.stat(recall_home).st_mode) == 0o700


def test_vectors_of_different_models_never_mix(recall_home, sample_notes):
    a = app_for(recall_home, "hash")
    a.index([SourceSpec("dir", sample_notes)])
    b = app_for(recall_home, "hash-64")
    stats = b.index([SourceSpec("dir", sample_notes)])
    assert stats.chunks_embedded > 0  # same chunks, new model: embedded again for it
    assert index_dir("hash-256", recall_home) != index_dir("hash-64", recall_home)
    ia, ib = load_index("hash-256", recall_home), load_index("hash-64", recall_home)
    assert ia.index.d == 256 and ib.index.d == 64
    dims = {r[0] for r in b.store.db.execute("SELECT DISTINCT dim FROM vectors")}
    assert dims == {256, 64}


class Boom(RuntimeError):
    pass


class CrashingEmbedder:
    """Fails after a few batches: a crash mid-index."""

    def __init__(self, inner, after):
        self.inner, self.after, self.calls = inner, after, 0
        self.model_id, self.dimension, self.device = inner.model_id, inner.dimension, "cpu"

    def embed_queries(self, texts):
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts):
        self.calls += 1
        if self.calls > self.after:
            raise Boom("killed mid-index")
        return self.inner.embed_passages(texts)


def test_crash_mid_index_leaves_previous_index_usable(recall_home, sample_notes, tmp_path):
    small = tmp_path / "small"
    write_note(small, "alpha", "Alpha note", "about alpacas", "alpaca alpaca")
    app = app_for(recall_home)
    app.index([SourceSpec("dir", small)])
    gen_before = load_index("hash-256", recall_home).generation

    crashing = Recall(home=recall_home, embedder=CrashingEmbedder(get_embedder("hash"), after=1))
    with pytest.raises(Boom):
        crashing.index([SourceSpec("dir", sample_notes)])

    fresh = app_for(recall_home)
    assert load_index("hash-256", recall_home).generation == gen_before
    hits, _ = fresh.searcher.search("alpaca alpaca", Scope(everything=True))
    assert [h.note["id"] for h in hits] == ["alpha"]
    # The next run resumes: the notes were written before the crash, and only the chunks
    # that had no vector yet are embedded (the batch committed before the crash is reused).
    stats = fresh.index([SourceSpec("dir", small), SourceSpec("dir", sample_notes)])
    assert (stats.added, stats.unchanged) == (0, len(list(sample_notes.glob("*.md"))) + 1)
    counts = fresh.store.counts()
    assert 0 < stats.chunks_embedded < counts["chunks"]
    assert not fresh.store.unembedded("hash-256")


def test_scopes(recall_home, tmp_path):
    app = app_for(recall_home)
    write_note(tmp_path / "p1", "mine", "Mine", "project one", "shared words kiwi")
    write_note(tmp_path / "p2", "theirs", "Theirs", "project two", "shared words kiwi")
    write_note(tmp_path / "rules", "rule", "Rule", "a rule", "shared words kiwi")
    app.index([SourceSpec("memory", tmp_path / "p1", "-home-me-p1"),
               SourceSpec("memory", tmp_path / "p2", "-home-me-p2"),
               SourceSpec("rule", tmp_path / "rules")])

    def ids(scope):
        return sorted(h.note["id"] for h in app.searcher.search("shared words kiwi", scope)[0])

    assert ids(Scope(project="-home-me-p1")) == ["mine", "rule"]
    assert ids(Scope(repo="p2", shared=False)) == ["theirs"]
    assert ids(Scope(everything=True)) == ["mine", "rule", "theirs"]


@pytest.mark.slow
def test_real_default_model_finds_paraphrase_and_crosses_languages(recall_home):
    app = Recall(home=recall_home)  # the packaged default model
    assert app.embedder.model_id == DEFAULT_ID
    app.index([SourceSpec("dir", SAMPLE_NOTES)])
    hits, _ = app.searcher.search("the migration already ran in prod; can I just edit that file?",
                                  Scope(everything=True))
    assert "never-edit-applied-migration" in [h.note["id"] for h in hits[:3]]
    # An English question finds a note written in Japanese.
    question = "should I truncate tables after each test to clean the database?"
    hits, _ = app.searcher.search(question, Scope(everything=True))
    assert "test-db-reset-between-tests" in [h.note["id"] for h in hits[:3]]


# --- issue 16: every artefact masked (1); vectors of old chunks pruned (11) -------------------------

def _secret_note(folder, rng):
    """A note with secrets in its name, description, type, body, questions and questions file; returns them."""
    import json
    import string

    alnum = string.ascii_letters + string.digits

    def r(n, alphabet=alnum):
        return "".join(rng.choice(alphabet) for _ in range(n))

    pg, aws, fb, rnd = r(20), r(40, alnum + "+/"), "EAA" + "B" + r(80), r(36, alnum + "-_")
    twilio = r(32, "0123456789abcdef")
    q, typ = r(24), r(22)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "creds.md").write_text(
        f"---\nname: deploy creds PGPASSWORD={pg}\ndescription: the backup secret key {aws}\n"
        f"type: api_key={typ}\nquestions: ['which token is {rnd}?']\n---\n\n"
        f"Facebook {fb} works.\nTwilio auth token {twilio}\n" + "filler words about deploys. " * 60,
        encoding="utf-8")
    (folder / "questions.jsonl").write_text(
        json.dumps({"note": "creds", "questions": [f"what is MYSQL_PWD={q} for?"]}) + "\n", encoding="utf-8")
    return [pg, aws, fb[4:], rnd, twilio, q, typ]


def test_no_secret_reaches_any_file_under_recall_home(recall_home, tmp_path):
    import random

    from helpers.leaks import find_leaks

    secrets = _secret_note(tmp_path / "notes", random.Random(16))
    app = app_for(recall_home)
    app.index([SourceSpec("dir", tmp_path / "notes")])
    app.searcher.search("deploy creds", Scope(everything=True))
    app.store.close()
    assert (recall_home / "index").is_dir() and any(recall_home.rglob("lexical.npz"))
    assert find_leaks(recall_home, secrets) == []


def test_names_whose_secrets_mask_alike_are_all_kept_and_keep_their_questions(recall_home, tmp_path):
    """Downloaded or exported files are often named by random strings, which masking hides:
    ``invoice_<random>.txt`` twice, two notes named by a drive id. Each is kept under its own
    path (``[REDACTED]~2``) and a note's questions file line, which names it as written, still
    finds it; nothing of the hidden part reaches the store."""
    from helpers.leaks import find_leaks

    folder = tmp_path / "notes"
    folder.mkdir()
    hidden = ["Hk3LmQ9zX7vB2nW8pR4t", "Tz8YcV1bN6mK4jH2gF7d", "0BwXyZ1aBcDeFgHiJkLmNoPqRsT", "1Xk9mQ2vL7pRtZ8cB4nW",
              "Xk9mQ2vL7pRt"]
    for h in hidden[:2]:
        (folder / f"invoice_{h}.txt").write_text(f"quarterly invoice totals {h[:3]}\n", encoding="utf-8")
    for h in hidden[2:4]:
        write_note(folder, h, f"staging note {h[:3]}", "staging database access", "ask ops for access")
    write_note(folder, f"password={hidden[4]}", "pw note", "staging", "ask ops")
    (folder / "questions.jsonl").write_text(
        json.dumps({"note": f"password={hidden[4]}", "questions": ["how do I reach the staging db?"]}) + "\n",
        encoding="utf-8")
    app = app_for(recall_home)
    stats = app.index([SourceSpec("dir", folder)])
    assert not [p for p in stats.problems if "no note named" in p.message or "same file name" in p.message]
    paths = sorted(r[0] for r in app.store.db.execute("SELECT path FROM notes"))
    assert len(paths) == 5 and len(set(paths)) == 5, paths
    assert app.store.db.execute("SELECT COUNT(*) FROM chunks WHERE role = 'question'").fetchone()[0] == 1
    again = app.index([SourceSpec("dir", folder)])
    assert again.added == again.changed == again.removed == 0  # stable: the same paths the next time
    app.store.close()
    assert find_leaks(recall_home, hidden) == []


def test_store_masks_what_a_caller_forgot(recall_home):
    """The store's one write method masks every text, whoever calls it."""
    import hashlib
    import json

    store = Store(recall_home / "x.db")
    sid = store.source_id("dir", "/notes", None)
    secret = "PGPASSWORD=Zq8vN2mKx7LpR4tW9yBc"
    raw = f"connect with {secret} psql"
    store.upsert_note(sid, NoteRecord("/notes/a.md", raw, raw, raw, raw, "h", 0, {"title": raw, "nested": [raw]}),
                      [Chunk(raw, hashlib.sha256(raw.encode()).hexdigest(), "text"), Chunk(raw, "q", "question")])
    rows = list(store.db.execute("SELECT * FROM notes"))  # every column: the type and the id too
    texts = [r[0] for r in store.db.execute("SELECT text FROM chunks")]
    hashes = [r[0] for r in store.db.execute("SELECT text_hash FROM chunks")]
    store.close()
    assert "Zq8vN2mKx7LpR4tW9yBc" not in json.dumps([rows, texts])
    assert hashes[0] == hashlib.sha256(texts[0].encode()).hexdigest()  # hash of what is stored


def _live_vector_count(store, model_id):
    live = store.db.execute("SELECT COUNT(DISTINCT text_hash) FROM chunks").fetchone()[0]
    vectors = store.db.execute("SELECT COUNT(*) FROM vectors WHERE model_id=?", (model_id,)).fetchone()[0]
    return live, vectors


def test_vectors_of_changed_and_deleted_chunks_are_pruned(recall_home, sample_notes):
    app = app_for(recall_home)
    src = [SourceSpec("dir", sample_notes)]
    app.index(src)
    notes = sorted(sample_notes.glob("*.md"))
    for i, path in enumerate(notes[:12]):  # edit a dozen notes three times each
        for round_ in range(3):
            path.write_text(path.read_text() + f"\nedit {round_} of note {i}\n")
            app.index(src)
    for path in notes[12:18]:
        path.unlink()
    app.index(src)
    live, vectors = _live_vector_count(app.store, "hash-256")
    assert vectors == live
    headers = app.store.db.execute("SELECT COUNT(*) FROM chunks WHERE role = 'header'").fetchone()[0]
    index = load_index("hash-256", recall_home)
    assert index.ntotal + headers == app.store.counts()["chunks"]  # a header is a row of headers.npy
    assert headers == len(index.notes) == len(notes) - 6


def test_orphan_vectors_left_by_an_older_recall_are_pruned_at_the_next_index(recall_home, sample_notes):
    import numpy as np

    app = app_for(recall_home)
    app.index([SourceSpec("dir", sample_notes)])
    app.store.put_vectors("hash-256", [f"old-{i}" for i in range(50)], np.ones((50, 256), dtype=np.float32))
    app.index([SourceSpec("dir", sample_notes)])
    live, vectors = _live_vector_count(app.store, "hash-256")
    assert vectors == live


# --- issue 16: damaged files get one line and a repair that works (8); modes fixed at start (9) ---------

def _cli(*args):
    return run_cli(*args, env={"RECALL_MODEL": "hash"})


def _one_line_error(proc, *words):
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def _damage(path, how):
    if how == "truncate":
        with open(path, "r+b") as fh:
            fh.truncate(max(1, path.stat().st_size // 3))
    elif how == "garbage":
        path.write_bytes(b"\x00garbage\xff" * 7)
    elif how == "delete":
        path.unlink()
    elif how == "flip":  # one bit in the middle, the size kept: FAISS reads it as it is
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x10
        path.write_bytes(bytes(data))
    elif how == "folder":
        path.unlink()
        path.mkdir()


DAMAGE = [("index.faiss", "truncate"), ("index.faiss", "garbage"), ("meta.json", "truncate"),
          ("meta.json", "garbage"), ("lexical.npz", "truncate"), ("lexical.npz", "garbage"),
          ("index.faiss", "delete"), ("meta.json", "delete"), ("current", "garbage"), ("gen-dir", "delete"),
          # damage inside a file that still reads (stop 44: the wrong note handed over), a folder for `current`
          ("index.faiss", "flip"), ("headers.npy", "flip"), ("lexical.npz", "flip"), ("current", "folder")]


@pytest.mark.parametrize("name,how", DAMAGE, ids=[f"{n}-{h}" for n, h in DAMAGE])
def test_a_damaged_index_file_is_one_line_and_rebuild_repairs_it(recall_home, sample_notes, name, how):
    import shutil
    import time

    assert _cli("index", "-q", str(sample_notes)).returncode == 0
    root = index_dir("hash-256", recall_home)
    gen = root / (root / "current").read_text().strip()
    if name == "gen-dir":
        shutil.rmtree(gen)
    else:
        _damage(root / name if name == "current" else gen / name, how)

    _one_line_error(_cli("query", "--all", "feature flags unleash"), "damaged", "recall index --rebuild")
    status = _cli("status")
    assert status.returncode == 0 and "Traceback" not in status.stderr
    assert "index_problems" in status.stdout and "recall index --rebuild" in status.stdout
    t0 = time.monotonic()
    _one_line_error(_cli("serve", "--wait", "60"), "damaged", "recall index --rebuild")
    assert time.monotonic() - t0 < 30  # said at once, not after waiting for a daemon that exits

    repaired = _cli("index", "-q", "--rebuild")
    assert repaired.returncode == 0, repaired.stderr
    hits = json.loads(_cli("query", "--all", "--json", "Feature flags via Unleash").stdout)["ranked"]
    assert hits[0]["id"] == "feature-flags-unleash"
    assert len(hits) > 10 and _cli("status").stdout.count("index_problems") == 0


def test_a_truncated_store_is_one_line_and_rebuild_reindexes_the_notes(recall_home, sample_notes):
    n = len(list(sample_notes.glob("*.md")))
    assert _cli("index", "-q", str(sample_notes)).returncode == 0
    db = recall_home / "recall.db"
    with open(db, "r+b") as fh:
        fh.truncate(db.stat().st_size // 2)
    for args in (("status",), ("index", "-q", str(sample_notes))):
        _one_line_error(_cli(*args), "note store is damaged", "recall index --rebuild")
    repaired = _cli("index", "-q", "--rebuild")  # no folder named: the damaged store's are found again
    assert repaired.returncode == 0, repaired.stderr
    assert f"added {n}," in repaired.stdout and "moved to" in repaired.stderr
    assert list(recall_home.glob("recall.db.damaged-*"))
    counts = json.loads(_cli("status", "--json").stdout)["counts"]
    assert counts["notes"] == n and counts["vectors"] == counts["chunks"] > 0


def test_a_broken_config_file_is_one_line_everywhere(recall_home):
    recall_home.mkdir(parents=True, exist_ok=True)
    (recall_home / "config.toml").write_text("[daemon\nidle_exit_hours = 1\n")
    for args in (("serve", "--foreground"), ("serve",), ("status",), ("query", "hello there, recall"),
                 ("index", "-q"), ("config",)):
        _one_line_error(_cli(*args), "config.toml is not valid TOML", "line 1")


@pytest.mark.process
def test_modes_opened_up_before_start_are_closed_again(recall_home, sample_notes):
    if sys.platform == "win32":
        pytest.skip("POSIX permissions")
    assert _cli("index", "-q", str(sample_notes)).returncode == 0
    for root, dirs, files in os.walk(recall_home):
        os.chmod(root, 0o777)
        for f in files:
            os.chmod(os.path.join(root, f), 0o666)
    assert run_cli_process("status", env={"RECALL_MODEL": "hash"}).returncode == 0  # once per process start
    for root, dirs, files in os.walk(recall_home):
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700, root
        for f in files:
            assert stat.S_IMODE(os.stat(os.path.join(root, f)).st_mode) == 0o600, f


@pytest.mark.slow
def test_real_default_model_masking_pruning_and_rebuild(recall_home, tmp_path, sample_notes):
    """The new paths once on the real default model: secrets masked in every file, vectors
    pruned after an edit, a damaged generation repaired by --rebuild."""
    import random

    from helpers.env import env_with
    from helpers.leaks import find_leaks

    secrets = _secret_note(sample_notes, random.Random(61))
    env = env_with()
    env.pop("RECALL_MODEL", None)

    def cli(*args):
        return run_cli(*args, env=env)

    assert cli("index", "-q", str(sample_notes)).returncode == 0
    note = sample_notes / "feature-flags-unleash.md"
    note.write_text(note.read_text() + "\nOne more line.\n")
    assert cli("index", "-q", str(sample_notes)).returncode == 0
    store = Store(recall_home / "recall.db")
    live, vectors = _live_vector_count(store, DEFAULT_ID)
    store.close()
    assert vectors == live
    root = index_dir(DEFAULT_ID, recall_home)
    (root / (root / "current").read_text().strip() / "meta.json").write_text("{broken")
    _one_line_error(cli("query", "--all", "feature flags"), "damaged", "recall index --rebuild")
    assert cli("index", "-q", "--rebuild").returncode == 0
    hits = json.loads(cli("query", "--all", "--json", "how do we add a feature flag?").stdout)["ranked"]
    assert "feature-flags-unleash" in [h["id"] for h in hits[:3]]
    assert find_leaks(recall_home, secrets) == []


def test_text_masked_by_older_rules_is_masked_again_and_scrubbed_at_the_next_index(recall_home, tmp_path):
    """What an older recall left: a note's secret stored unmasked (its rules did not know
    it), in the store, two generations of index files and free pages. One `recall index`
    later no byte under RECALL_HOME holds it."""
    from helpers.leaks import find_leaks
    from recall.store.vectors import build_index

    secret = "Zq8vN2mKx7LpR4tW9yBc"
    folder = tmp_path / "notes"
    write_note(folder, "db", "DB access", "how to reach the db", f"PGPASSWORD={secret} psql -h db")
    app = app_for(recall_home)
    app.index([SourceSpec("dir", folder)])
    con = sqlite3.connect(recall_home / "recall.db")  # as an older recall wrote it
    con.execute("PRAGMA secure_delete=OFF")  # (the default of many SQLite builds)
    con.execute("INSERT INTO chunks SELECT note_id, 99, 'an older version: PGPASSWORD=' || ? || ' old',"
                " 'h', 'text' FROM chunks LIMIT 1", (secret,))
    con.commit()
    con.execute("DELETE FROM chunks WHERE ord = 99")  # its bytes stay in a free page
    con.execute("UPDATE chunks SET text = replace(text, '[REDACTED]', ?)", (secret,))
    con.execute("UPDATE notes SET content_hash = replace(content_hash, ':m', ':old'),"
                " description = 'PGPASSWORD=' || ?", (secret,))
    con.execute("DELETE FROM settings")
    con.commit()
    con.close()
    store = Store(recall_home / "recall.db")
    exact = packaged_settings().index.approximate_from_chunks
    build_index(store, "hash-256", home=recall_home, approximate_from=exact)
    build_index(store, "hash-256", home=recall_home, approximate_from=exact)
    store.close()
    assert find_leaks(recall_home, [secret])

    out = _cli("index", "-q", str(folder))
    assert out.returncode == 0, out.stderr
    assert find_leaks(recall_home, [secret]) == []
    assert len(list(index_dir("hash-256", recall_home).glob("gen-*"))) == 1


def test_writing_or_deleting_one_note_scans_no_table(tmp_path):
    """Every statement the store runs to replace or delete one note finds its rows by an index:
    none reads a whole table (stop 41: dropping a changed note's old vectors scanned every vector,
    so re-indexing 3,000 changed notes of 20,000 took 116 s, one edited note 6.3 s)."""
    from recall.store.records import Chunk, NoteRecord, text_hash

    store = Store(tmp_path / "r.db")
    source = store.source_id("dir", str(tmp_path), None)

    def put(i: int, text: str) -> int:
        record = NoteRecord(path=f"{tmp_path}/n{i}.md", note_id=f"n{i}", name=f"n{i}", description="", type="",
                            content_hash=text)
        return store.upsert_note(source, record, [Chunk(text, text_hash(text))])

    pks = [put(i, f"note {i}") for i in range(50)]
    seen: list[str] = []
    store.db.set_trace_callback(seen.append)
    put(3, "note 3, changed")
    store.delete_notes(pks[7:9])
    store.db.set_trace_callback(None)
    plans = {sql: [row[-1] for row in store.db.execute("EXPLAIN QUERY PLAN " + sql)]
             for sql in seen if sql.lstrip().upper().startswith(("SELECT", "DELETE", "UPDATE"))}
    store.close()
    assert plans and not {sql: plan for sql, plan in plans.items() if any(p.startswith("SCAN") for p in plan)}


def test_notes_masked_by_the_rules_in_force_are_recorded_so_later_runs_keep_the_previous_generation(
        recall_home, hash_model, tmp_path):
    """The marker of the masking rules a note was masked with was written as ``:m16:h`` and
    looked for as ``%:m16``: every note counted as masked before, every `recall index` vacuumed
    the store and dropped the generation a running daemon may be opening (stop 47, tester S's 05)."""
    from helpers.notes import write_note
    from recall.api import Recall

    notes = tmp_path / "notes"
    write_note(notes, "deploy", "Deploy", "how we deploy", "blue green")
    app = Recall()
    app.index([SourceSpec("memory", notes)])
    write_note(notes, "rollback", "Rollback", "how we roll back", "keep the previous release")
    app.index([SourceSpec("memory", notes)])
    assert app.store.setting("mask_rules") is not None
    generations = sorted(p.name for p in (recall_home / "index").glob("*/gen-*"))
    assert len(generations) == 2, generations


def test_a_rewrite_for_privacy_leaves_no_other_models_index_behind(recall_home, hash_model, tmp_path):
    """A purge of titles taken from messages, and a re-masking under newer rules, rewrote the
    store and the model in use's index, and left the previous default model's generation with
    the message and the secret in its meta.json and BM25 vocabulary (stop 47, tester S's 03, 04)."""
    from helpers.notes import write_note

    old = recall_home / "index" / "intfloat--multilingual-e5-small" / "gen-000001"
    old.mkdir(parents=True)
    (old / "meta.json").write_text('{"notes": [{"name": "please refactor the flamingo payroll exporter"}]}')
    (old.parent / "current").write_text("gen-000001")
    notes = tmp_path / "notes"
    write_note(notes, "deploy", "Deploy", "how we deploy", "blue green")
    proc = run_cli("index", "-q", str(notes), env={"RECALL_MODEL": "hash"})
    assert proc.returncode == 0, proc.stderr
    left = [p for p in recall_home.rglob("*") if p.is_file() and b"flamingo" in p.read_bytes()]
    assert left == [], left
    assert "multilingual-e5-small" not in run_cli("status", env={"RECALL_MODEL": "hash"}).stdout


def test_first_opens_of_a_store_at_once_all_succeed(tmp_path):
    """A session start's `recall index` and a `recall status` opened a new store at once: each
    read the migrations as not applied, and the second failed on the first's ("duplicate column
    name: extra"). A migration is applied under the write lock, after looking again."""
    import subprocess

    code = ("import sys, time, os; from pathlib import Path\n"
            "while not os.path.exists(sys.argv[2]): time.sleep(0.001)\n"
            "from recall.store.sqlite import Store; Store(Path(sys.argv[1])).close()\n")
    for round_ in range(10):
        db, go = tmp_path / f"r{round_}.db", tmp_path / f"go{round_}"
        procs = [subprocess.Popen([sys.executable, "-c", code, str(db), str(go)], env={**os.environ},
                                  stderr=subprocess.PIPE, text=True) for _ in range(8)]
        time.sleep(0.6)  # every process waiting at the line
        go.touch()
        errors = [p.communicate(timeout=60)[1] for p in procs]
        assert all(p.returncode == 0 for p in procs), errors


@pytest.mark.process
def test_two_indexes_of_a_new_folder_at_once_both_succeed(recall_home, hash_model, sample_notes, tmp_path):
    """`recall index n & recall index n` on a folder the store did not know: the second one's
    source row lost the race ("UNIQUE constraint failed"), was called a damaged store and told to
    `recall index --rebuild`, which embeds everything again (an outside tester's, stop 57)."""
    import subprocess

    for round_ in range(3):
        folder = tmp_path / f"copy{round_}"
        shutil.copytree(sample_notes, folder)
        procs = [subprocess.Popen([sys.executable, "-m", "recall.cli", "index", "-q", str(folder)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
        outs = [(p.wait(120), p.stderr.read()) for p in procs]
        assert all(rc == 0 for rc, _ in outs), outs


@pytest.mark.parametrize("name", ["index.faiss", "lexical.npz", "headers.npy"])
def test_a_named_pipe_in_place_of_an_index_file_never_holds_an_index(recall_home, sample_notes, name):
    """A pipe where index.faiss was: `recall search` said so, but a plain `recall index` opened it to
    check its digest and waited for a writer for ever (an outside tester's, stop 57)."""
    from helpers.cli import run_cli_process

    assert _cli("index", "-q", str(sample_notes)).returncode == 0
    root = index_dir("hash-256", recall_home)
    gen = root / (root / "current").read_text().strip()
    (gen / name).unlink()
    os.mkfifo(gen / name)
    again = run_cli_process("index", "-q", str(sample_notes), env={"RECALL_MODEL": "hash"}, timeout=60)
    assert again.returncode == 0, again.stderr
    hits = json.loads(_cli("query", "--all", "--json", "Feature flags via Unleash").stdout)["ranked"]
    assert hits[0]["id"] == "feature-flags-unleash"


@pytest.mark.parametrize("name", ["current", "negatives.npz"])
def test_a_folder_where_an_index_file_goes_is_moved_aside_and_said(recall_home, sample_notes, name):
    """A folder at index/<model>/current: every `recall index` said "move it aside (`mv` it)", with no
    path or command; at negatives.npz, `recall status` said nothing while the searcher went without
    its known unrelated messages (an outside tester's, stop 57). The build moves it aside (nothing
    deleted), as it does a folder at hook.json or calibration.toml, and status names it."""
    assert _cli("index", "-q", str(sample_notes)).returncode == 0
    root = index_dir("hash-256", recall_home)
    (root / name).unlink()
    (root / name / "inner").mkdir(parents=True)
    if name == "negatives.npz":
        status = _cli("status").stdout
        assert f"{root / name} is a folder" in status and "recall index --rebuild" in status, status
    out = _cli("index", "-q", *(["--rebuild"] if name == "negatives.npz" else [str(sample_notes)]))
    assert out.returncode == 0, out.stderr
    assert (root / name).is_file() and [p.name for p in root.glob(f"{name}.stray-*/*")] == ["inner"]
    assert "index_problems" not in _cli("status").stdout
    hits = json.loads(_cli("query", "--all", "--json", "Feature flags via Unleash").stdout)["ranked"]
    assert hits[0]["id"] == "feature-flags-unleash"
