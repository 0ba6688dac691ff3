"""Messages that are not what a figure claims they are: the same message twice in one set
(counted twice, its interval narrower than the data), one message with two labels, a held-out
message that is a tuning message again, a scored message that is one of the notes' own indexed
questions or negatives (not unseen). An outside tester found each passed without a word (AH01,
AH04, AH05). Messages are compared as written, up to case, width and spacing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .collections import Question, message_key


def leaks(tuned: Sequence[Question], held_out: Sequence[Question]) -> list[Question]:
    """The held-out messages that are tuning messages again (under other ids, in another set)."""
    seen = {message_key(q.text) for q in tuned}
    return [q for q in held_out if message_key(q.text) in seen]


def indexed_copies(questions: Sequence[Question], notes: Sequence, notes_dir: Path, note_questions: Path | None,
                   use_questions: bool = True) -> list[str]:
    """The ids of ``questions`` that are word for word one of the notes' own questions (their
    front matter's, a questions file's) or restatements, indexed with them, or the folder's
    negatives (the calibration's): scored as if unseen, they lift hit@1 and silence by what the
    index already holds."""
    from recall.notes.questions import NEGATIVES_FILE, folder_questions_file, read_questions_file

    texts: set[str] = {message_key(t) for n in notes for t in (getattr(n, "questions", None) or [])} \
        if use_questions else set()
    files = [note_questions or folder_questions_file(notes_dir)] if use_questions else []
    for path in [f for f in files if f is not None]:
        for field in ("questions", "restatements"):
            texts |= {message_key(t) for values in read_questions_file(path, field=field)[0].values() for t in values}
    negatives = notes_dir / NEGATIVES_FILE
    if negatives.is_file():
        from recall.ranking.negatives import read_negatives_file

        texts |= {message_key(n.text) for n in read_negatives_file(negatives)[0]}
    return [q.id for q in questions if message_key(q.text) in texts]
