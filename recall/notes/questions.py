"""A note's questions: messages the note should answer, indexed as extra chunks of it.

A note is written in the words of the person who learnt the lesson; the message that
should bring it back is written in other words, often in another language. Indexing a
few such messages beside the note's own text closes most of that gap (docs/decision.md:
sample hit@3 0.738 -> 0.925, cross-language 0.40 -> 0.85, same silence).

Questions come from two places, merged per note (front matter first, duplicates
dropped, at most ``MAX_QUESTIONS``):

* the note's front matter, ``questions:`` (a list of strings): written by hand, they
  travel with the note;
* a questions file ``questions.jsonl`` in the notes folder, one line per note,
  ``{"note": "<file stem>", "questions": ["...", ...]}``: what ``recall-eval expand``
  writes, so generated questions never rewrite a user's notes.

A line of a questions file may also carry ``"restatements": [...]``: the note's name and description
restated in the other language (English for a Japanese note, Japanese for an English
one), written by the same context-free step. They are indexed like questions (role
``restatement``) but never serve as calibration positives (``recall.ranking.calibration``): they
bridge languages, they are not messages.

A bad line of a questions file is a ``Problem`` (one line, the rest is read), never a failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from recall.notes.problems import Problem, capped
from recall.privacy.decoding import Binary, decode
from recall.privacy.paths import LINKED_OUT, MAX_OWN_FILE, leads_outside
from recall.privacy.regular import LeftTheFolder, read_inside
from recall.privacy.safetext import whole

QUESTIONS_FILE = "questions.jsonl"
# The name this file had before 0.3 (`recall-eval expand` wrote it): still read where no
# questions.jsonl is beside it.
LEGACY_QUESTIONS_FILE = "expansions.jsonl"
QUESTIONS_FILE_NAMES = (QUESTIONS_FILE, LEGACY_QUESTIONS_FILE)
NEGATIVES_FILE = "negatives.jsonl"  # a folder's known unrelated messages (recall.ranking.negatives)
# Five generated questions per note (three, the opening of a piece of work, a terse one: issue #23);
# a hand-written list may be longer.
# Past eight, extra chunks mostly add ways to match the wrong message.
MAX_QUESTIONS = 8
# A question is a message, not a document: longer text is cut (a pasted paragraph
# would otherwise become a second body).
MAX_QUESTION_CHARS = 300


# Words of small talk, acknowledgement and going on, and the glue between them: a question of
# nothing else ("thanks, looks good", "ok go on", "lgtm", "ありがとう、続けてください") is no
# message a note answers, and indexed as one it would bring the note up on every such reply
# (stop 42: an outside tester's agent CLI wrote them for a note, and recall handed the note over
# on "thanks, looks good, go on"). A question needs one word besides these.
_CHATTER = frozenset("""
    a an and are as at be but by can could do does done for from go going got have i if in is it its just
    let lets me my of on or please pls so that the then there this to too up us we will with would you your
    thanks thank thx ty cheers ok okay k kk yes yeah yep yup no nope nah sure right alright fine good great nice
    cool awesome perfect excellent wonderful amazing lovely looks look lgtm sounds sound agreed agree correct
    continue proceed ahead next keep on now again more carry move proceeding continuing understood
    understand makes sense wow hi hello hey bye goodbye morning evening night lol haha hmm hm sorry
    much very really indeed exactly absolutely definitely totally appreciate appreciated help helpful
    what else anything that's it's thats ill i'll we'll let's
""".split())
_CHATTER_JA = ("ありがとうございます", "ありがとう", "どうも", "続けてください", "続けて", "お願いします", "お願い",
               "進めてください", "進めて", "はい", "いいえ", "いいね", "いいです", "大丈夫", "了解", "わかりました",
               "分かりました", "オッケー", "よろしく", "次", "そのまま", "では", "じゃあ", "です", "ます", "ください",
               "よ", "ね", "か", "も", "で", "を", "に", "は", "が", "お疲れ様", "すごい", "完璧", "素晴らしい")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def says_something(text: str) -> bool:
    """Whether ``text`` holds a word besides small talk (``_CHATTER``): a question that does
    not is dropped wherever questions come from (front matter, a questions file, an agent)."""
    rest = text
    for phrase in _CHATTER_JA:
        rest = rest.replace(phrase, " ")
    if _CJK.search(rest):
        return True
    return any(w.lower() not in _CHATTER and not w.isdigit() for w in _WORD.findall(rest))


def clean_questions(values: Iterable[object]) -> list[str]:
    """Strings only, stripped, cut to ``MAX_QUESTION_CHARS``; empty, repeated and
    small-talk-only ones (``says_something``) dropped (order kept), at most ``MAX_QUESTIONS``."""
    return _usable(values, MAX_QUESTIONS)


def _usable(values: Iterable[object], limit: int | None = None) -> list[str]:
    """(At most ``limit``: an agent's answer of 90,000 lines for one note was read whole, each
    against all kept before it.)"""
    out: dict[str, None] = {}
    for value in values:
        if limit is not None and len(out) >= limit:
            break
        if not isinstance(value, str):
            continue
        text = whole(" ".join(value[: MAX_QUESTION_CHARS * 16].split())[:MAX_QUESTION_CHARS])
        if text and text not in out and says_something(text):
            out[text] = None
    return list(out)


def parse_line(text: str, field: str = "questions") -> tuple[str, list]:
    """(note stem, its raw questions) from one questions file line; ValueError says why not.
    ``field="restatements"`` reads the optional restatements instead (absent: [])."""
    shape = '{"note": stem, "questions": [...]}'
    try:
        obj = json.loads(text)
        stem = obj["note"]
        questions = obj[field] if field == "questions" else obj.get(field, [])
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        why = "nested too deep" if isinstance(exc, RecursionError) else exc
        raise ValueError(f"expected {shape} ({why})") from None
    if not isinstance(stem, str) or not isinstance(questions, list):
        raise ValueError(f"expected {shape} (note must be a string and questions a list)")
    return stem, questions


def read_questions_file(path: Path, known: Sequence[str] | None = None, field: str = "questions"
                 ) -> tuple[dict[str, list[str]], list[Problem]]:
    """``{note stem: questions}`` from a questions file, and a problem per bad line.

    With ``known`` (the folder's note stems), a line naming no note is a problem too
    (``unknown_notes``), and left out. ``field="restatements"``: the notes' restatements.
    """
    # here, not at the top: notes.files brings YAML and the markdown renderer (~40 ms), which the
    # daemon's first answer after a start never needs (it reads negatives through this module)
    from recall.notes.files import nfc

    problems: list[Problem] = []
    if leads_outside(path):
        return {}, [Problem(str(path), LINKED_OUT)]
    try:
        raw = _read(path)
    except LeftTheFolder:  # a link put there since: what was opened is checked, not the name
        return {}, [Problem(str(path), LINKED_OUT)]
    except OSError as exc:
        return {}, [Problem(str(path), f"unreadable ({exc.strerror or exc}); no questions from it")]
    try:
        text, said = decode(raw, legacy=False)  # a byte-order mark, UTF-16 (PowerShell's `>`) read as it is
    except Binary as exc:
        return {}, [Problem(str(path), f"{exc}; no questions from it")]
    problems += [Problem(str(path), line) for line in said]
    out: dict[str, list[str]] = {}
    for i, line in enumerate(text.split("\n"), 1):  # line feeds only: a question may hold U+2028
        if not line.strip():
            continue
        try:
            stem, questions = parse_line(line, field)
        except ValueError as exc:
            problems.append(Problem(f"{path}:{i}", f"{exc}; line skipped"))
            continue
        stem = nfc(stem)  # as the folder's notes are keyed (recall.notes.files.note_keys)
        out[stem] = clean_questions([*out.get(stem, []), *questions])
    if field != "questions":
        out = {stem: values for stem, values in out.items() if values}
        problems = []  # bad lines are reported once, by the questions' pass
    if known is not None:
        problems.extend(unknown_notes(path, out, known))
        out = {stem: qs for stem, qs in out.items() if stem in known}
    return out, capped(problems, path)


def unknown_notes(path: Path, questions_file: dict[str, list[str]], stems: Iterable[str]) -> list[Problem]:
    """A problem for each note the questions file names that the folder does not have: its
    questions would otherwise be indexed for nothing, silently."""
    have = set(stems)
    return [Problem(str(path), f"no note named {stem!r} in this folder; its questions are ignored")
            for stem in questions_file if stem not in have]


def _read(path: Path) -> bytes:
    """The bytes of a questions file (``read_inside`` its folder: ``LeftTheFolder`` when what is
    opened lies outside it, a link put there after any check of its name)."""
    return read_inside(path, os.path.realpath(path.parent), MAX_OWN_FILE)[0]


def line_hashes(path: Path) -> dict[str, str | None]:
    """``{note stem: note_hash}`` of a questions file's lines: the hash of the note's bytes a
    line written by recall's background step carries (``recall.authoring.notegen``), None for
    a line written by hand or by ``recall-eval expand``."""
    out: dict[str, str | None] = {}
    try:
        text = decode(_read(path), legacy=False)[0]
    except (OSError, Binary):
        return out
    for line in text.split("\n"):
        try:
            obj = json.loads(line) if line.strip() else None
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and isinstance(obj.get("note"), str):
            digest = obj.get("note_hash")
            out[obj["note"]] = digest if isinstance(digest, str) else out.get(obj["note"])
    return out


def renames(lines: Mapping[str, str | None], notes: Mapping[str, str]) -> dict[str, str]:
    """``{line's stem: the note it now belongs to}``: the one rule that attaches a generated line
    (it carries the hash of the note's bytes it was written for) to a note, for the index, the
    watcher and the background step alike. A line stays with the note of its stem while that note
    has its bytes. Otherwise it follows the one other note that has them: renamed or moved, a
    case-only rename too, or the old name reused by a new note (an outside tester's 4), or two notes
    that swapped names. A note whose own line matches its bytes, or that has a line written by
    hand, takes no other. Bytes that no note or several have: the line stays with its stem (a note
    edited keeps its questions until they are asked for again; gone with it when it is deleted).
    ``lines``: ``line_hashes``; ``notes``: stem -> the sha256 of its bytes (hex; the first 16
    digits are compared)."""
    exact = {stem for stem, digest in lines.items() if digest and notes.get(stem, "")[:16] == digest}
    free: dict[str, list[str]] = {}
    for stem, digest in notes.items():
        if stem not in exact and lines.get(stem, "") is not None:
            free.setdefault(digest[:16], []).append(stem)
    found = {old: free[digest][0] for old, digest in lines.items()
             if old not in exact and digest and len(free.get(digest, ())) == 1}
    taken = list(found.values())
    return {old: new for old, new in found.items() if taken.count(new) == 1}


def settled(lines: Mapping[str, str | None], others: Iterable[str] | None = None) -> Callable[[str, str], bool]:
    """``(stem, sha256 of its bytes) -> bool``: whether ``renames`` gives this note its own line
    (or none) whatever the folder's other notes hold: its line is written by hand or for these
    bytes, or no line was written for these bytes and it has no line, or a line written for bytes
    none of ``others`` has (the hashes of the folder's other notes, where known: an edited note).
    A note not settled is decided with the whole folder (``recall index`` parses it; the watcher
    reads the folder)."""
    written_for = {digest for digest in lines.values() if digest}
    elsewhere = None if others is None else {digest[:16] for digest in others}

    def check(stem: str, digest: str) -> bool:
        own = lines.get(stem, "")
        return own is None or own == digest[:16] or digest[:16] not in written_for and (
            stem not in lines or elsewhere is not None and own not in elsewhere)

    return check


def moved_line(obj: Mapping[str, object], moved: Mapping[str, str]) -> Mapping[str, object] | None:
    """A questions file line's object after ``renames``' ``moved``: under the key of the note it
    follows; None for a generated line of a note that took another's line (stale: written for
    bytes that note no longer has); as it is otherwise."""
    stem = obj.get("note")
    if not isinstance(stem, str) or not isinstance(obj.get("note_hash"), str):
        return obj
    if stem in moved:
        return {**obj, "note": moved[stem]}
    return None if stem in set(moved.values()) else obj


def follow_renames(path: Path, file_questions: dict[str, list[str]], restatements: dict[str, list[str]],
                   notes: Mapping[str, str], own: bool = True, hashes: Mapping[str, str | None] | None = None) -> None:
    """Give the questions and restatements of each generated line to the note it belongs to
    (``renames``), in place, and, in the folder's ``own`` questions file (where the background
    step writes), write the lines so (``move_lines``: a later edit of the note keeps them), forget
    those it wrote for a note that is gone (``drop_generated``), its negatives near that note too
    (``follow_negatives``). ``hashes``: ``line_hashes(path)`` if read already."""
    if own:
        follow_negatives(path.parent / NEGATIVES_FILE, notes)
    hashes = line_hashes(path) if hashes is None else hashes
    moved = renames(hashes, notes)
    asked = {old: file_questions.pop(old, []) for old in moved}
    restated = {old: restatements.pop(old) for old in moved if old in restatements}
    for old, new in moved.items():
        file_questions.pop(new, None)
        restatements.pop(new, None)
    for old, new in moved.items():
        file_questions[new] = asked[old]
        if old in restated:
            restatements[new] = restated[old]
    if own and moved:
        move_lines(path, moved)
    gone = {stem for stem, digest in hashes.items() if own and digest is not None and stem not in notes
            and stem not in moved and not _on_disk(path.parent, stem)}
    if gone:
        drop_generated(path, gone)
        for stem in gone:
            file_questions.pop(stem, None)
            restatements.pop(stem, None)


def follow_negatives(path: Path, notes: Mapping[str, str]) -> None:
    """Forget the negatives recall's background step wrote near a note that is gone: each line
    names the note it was nearest when written (``note``, with its ``note_hash``,
    ``recall.authoring.agentcli``), and a message written on a deleted note's topic kept its
    words for ever (stop 48, an outside tester's V03, the negatives' part). A renamed note keeps
    them; lines written by hand stay as written."""
    hashes = line_hashes(path)
    if not set(hashes) - set(notes):
        return
    moved = renames(hashes, notes)
    gone = {stem for stem, digest in hashes.items() if digest is not None and stem not in notes
            and stem not in moved and not _on_disk(path.parent, stem)}
    if gone:
        drop_generated(path, gone)


def _on_disk(folder: Path, stem: str) -> bool:
    """Whether a file of this key is in the folder still (unreadable now, not deleted)."""
    return any((folder / name).exists() for name in (stem, f"{stem}.md", f"{stem}.MD"))


def drop_generated(path: Path, stems: set[str]) -> None:
    """Remove the lines recall's background step wrote (they carry ``note_hash``) for ``stems``,
    notes deleted: a note's questions and restatements outlived it, and a new note saved under
    its name was indexed with them (stop 48, an outside tester's V03). Lines written by hand or
    by ``recall-eval expand`` stay as written."""
    _rewrite(path, lambda obj: None if obj.get("note") in stems and isinstance(obj.get("note_hash"), str) else obj)


def move_lines(path: Path, moved: Mapping[str, str]) -> None:
    """Write each generated line ``renames`` moved under the key of the note it follows, and drop
    the stale line of a note that took another's (``moved_line``): the next edit of a renamed
    note finds its line under its name, as any edited note does."""
    _rewrite(path, lambda obj: moved_line(obj, moved))


def _rewrite(path: Path, change: Callable[[dict], Mapping[str, object] | None]) -> None:
    """Each line of a questions file as ``change`` gives it back (None: dropped; the same object:
    kept as written), written only when one changed."""
    from recall.privacy.paths import replace_private

    try:
        text = _read(path).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return  # a file recall did not write as UTF-8: left alone
    kept, changed = [], False
    for line in text.split("\n"):
        try:
            obj = json.loads(line) if line.strip() else None
        except (ValueError, RecursionError):
            obj = None
        new = change(obj) if isinstance(obj, dict) else obj
        if new is obj:
            kept.append(line)
            continue
        changed = True
        if new is not None:
            kept.append(json.dumps(new, ensure_ascii=False))
    if changed:
        try:
            replace_private(path, "\n".join(kept))
        except OSError:
            pass  # a folder recall may not write (a read-only checkout): left out of the index all the same


def merge(front_matter: Sequence[str], questions_file: Sequence[str]) -> list[str]:
    return clean_questions([*front_matter, *questions_file])


def left_out(path: str, front_matter: Sequence[str], questions_file: Sequence[str]) -> list[Problem]:
    """One line when ``merge`` leaves some of a note's questions out past the ``MAX_QUESTIONS``
    it keeps: said, not dropped in silence (stop 48, an outside tester's X02)."""
    if len(front_matter) + len(questions_file) <= MAX_QUESTIONS:
        return []
    dropped = len(_usable([*front_matter, *questions_file])) - MAX_QUESTIONS
    return [Problem(path, f"{dropped} question(s) past the {MAX_QUESTIONS} a note keeps left out: its first "
                          f"{MAX_QUESTIONS} are indexed")] if dropped > 0 else []


def questions_hash(questions: Sequence[str]) -> str:
    """Short hash of a note's questions from its questions file: part of its fingerprint, so editing the
    questions file re-indexes exactly the notes whose questions changed."""
    if not questions:
        return ""
    return hashlib.sha256("\n".join(questions).encode("utf-8")).hexdigest()[:16]


def folder_questions_file(root: Path) -> Path | None:
    """The questions file of a notes folder: ``questions.jsonl``, else the legacy
    ``expansions.jsonl``; None when it has neither."""
    for name in QUESTIONS_FILE_NAMES:
        if (root / name).is_file():
            return root / name
    return None
