"""A note folder's questions, restatements and negatives, written by a context-free model.

The prompts live in ``recall/authoring/prompts/`` (``expand_notes.md``, ``restate_notes.md``,
``negatives.md``): the same text whether ``recall-eval expand`` sends them (the harness
imports them from here) or recall's own background step (``recall.authoring.agentcli``) hands them to
an agent CLI the user already has. The model sees the prompt with the note files inlined
(secrets masked) and nothing else: never a message the user typed.

What comes back lands where recall already reads it:

* ``questions.jsonl`` (``recall.notes.questions``): one line per note. A line written here also
  carries ``"note_hash"`` (the note's bytes, hashed) and ``"by"`` (the agent): a note whose
  hash differs, or that has no line, is *pending* (new or changed) and is asked for again;
  a line without ``note_hash`` (written by hand or by ``recall-eval expand``) is left alone.
* ``negatives.jsonl`` (``recall.ranking.negatives``): messages on the notes' topics that no note
  answers, appended; one all but identical to a note's question is dropped (``TOO_CLOSE``).

Answers are read leniently here (a background step has nobody to ask): lines that are not
JSON objects, or name no note of the folder, are skipped and counted.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from recall.authoring import bought
from recall.authoring.answers import prompt_key, prompt_names
from recall.notes.files import iter_note_files, note_keys
from recall.notes.frontmatter import masked_file_text
from recall.notes.questions import QUESTIONS_FILE, folder_questions_file, moved_line, renames
from recall.privacy.masking import mask_secrets
from recall.privacy.paths import read_bytes, read_text, replace_private
from recall.ranking.negatives import MAX_PER_SOURCE, NEGATIVES_FILE

EXPAND_PROMPT = "expand_notes.md"
RESTATE_PROMPT = "restate_notes.md"
NEGATIVES_PROMPT = "negatives.md"
# Eight messages per note (recall.notes.questions.MAX_QUESTIONS keeps eight): three of any
# kind, the opening of a piece of work where the note will matter later, a terse one (each of
# those two raised injected hits on the dev sets of all three collections, silence unchanged),
# then a symptom of the note not followed, a pasted snippet, and a review request: on the dev
# audits f-n, hit@3 0.615 -> 0.692 and injected 0.304 -> 0.377 on rules-120 (both p < 0.05,
# silence 0.927 -> 0.894 for a target of 0.90); 0.573 -> 0.592 and 0.287 -> 0.335 on kinopeee,
# where silence fell 0.898 -> 0.846 (docs/decision.md, issue #23, stop 36).
N_PER_NOTE = 8
SHARE_JA = 0.3
# Negatives asked for: four per note, at least 80 for a folder that has none yet (too few to
# calibrate on otherwise), at most what calibration reads from one file (400; one answer of
# ~10k tokens). The margin over the
# nearest negative separates related from unrelated messages better the denser the negatives:
# rules-120's dev sets, 160 -> 400 negatives, AUC 0.883 -> 0.910 (`python -m bench.separation`,
# docs/decision.md, issue #23).
PER_NOTE, MIN_NEGATIVES, MAX_NEGATIVES = 4, 80, MAX_PER_SOURCE
# The negatives request sees the folder's topics, not every word of every note: each note's
# first NEGATIVE_NOTE_CHARS characters, and an even sample of the notes up to
# NEGATIVES_PROMPT_TOKENS (estimated) in all. An outside tester's folder of 612 notes was one
# 570,000-character prompt the agent refused, and its negatives were never asked for again.
NEGATIVE_NOTE_CHARS, NEGATIVES_PROMPT_TOKENS = 3_000, 40_000
# A note's first characters a questions or restatements prompt shows: well past what the index
# reads of a note's text (6 chunks of 700). An outside tester's 600 KB note went whole into both
# prompts, ~300,000 tokens a run after a consent to ~5,800 (stop 45).
NOTE_CHARS = 8_000
# What a model writes per note, in tokens, for the cost shown before anything is sent:
# 8 questions of ~20 tokens (one of them shorter, two with a pasted line) with JSON around
# them; a restatement line. (Negatives: NEGATIVE_OUT_TOKENS each.)
OUT_TOKENS_PER_NOTE = {EXPAND_PROMPT: 210, RESTATE_PROMPT: 45}
NEGATIVE_OUT_TOKENS = 25
_WIDE = re.compile(r"[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]")


def template(name: str) -> str:
    return resources.files("recall.authoring").joinpath("prompts", name).read_text(encoding="utf-8")


def template_hash(name: str) -> str:
    return hashlib.sha256(template(name).encode("utf-8")).hexdigest()[:16]


def prompts_hash() -> str:
    """The questions and restatements prompts' hash: what ``bought`` keeps answers under."""
    return template_hash(EXPAND_PROMPT)[:8] + template_hash(RESTATE_PROMPT)[:8]


def note_text(path: Path) -> str:
    """A note file's text as a prompt shows it: secrets masked (``recall.privacy.masking``), as before
    anything is indexed. Kept while the file is unchanged: a run's prompts and their cost show a
    note up to four times, and masking is most of that (3,000 notes: 1.6 s each time)."""
    try:
        st = os.stat(path)
    except OSError:
        return _masked(path)  # says what is wrong, as reading it does
    return _masked_note(path, (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino))


def _masked(path: Path) -> str:
    return masked_file_text(read_text(path, errors="replace").strip())


_masked_note = functools.lru_cache(maxsize=4096)(lambda path, stamp: _masked(path))  # stamp: the key only


Keys = Mapping[Path, str]  # what each note is known by (``FolderState.keys``); its stem when absent
Texts = Mapping[Path, str]  # each note's text as read for the prompt (``note_text``) when it was built


def render(name: str, paths: Sequence[Path], *, note_chars: int | None = None, keys: Keys | None = None,
           texts: Texts | None = None, **fields: object) -> str:
    """The prompt ``name`` with these note files inlined (``### key.md`` then the file, its
    first ``note_chars`` characters if given), a secret in a file name masked as in its text
    (``parse_per_note`` reads either name back)."""
    notes = notes_block(paths, note_chars, keys, texts)
    text = template(name)
    for key, value in fields.items():
        text = text.replace("{" + key + "}", str(value))
    return text.replace("{notes}", notes)


def notes_block(paths: Sequence[Path], note_chars: int | None = None, keys: Keys | None = None,
                texts: Texts | None = None) -> str:
    """Note files as every prompt shows them (``recall-eval generate``'s too): ``### key.md``
    (the note's key, ``billing/README`` for a name subfolders share) then the file, secrets
    masked in both (``note_text``; ``texts``: each read already, ``recall.authoring.sending``), its
    first ``note_chars`` characters if given."""
    names = prompt_names(tuple(keys.values()) if keys is not None else tuple(p.stem for p in paths))
    return "\n\n".join(f"### {names.get(_key(p, keys)) or prompt_key(_key(p, keys))}.md\n"
                       f"{_fenced(_cut(_text(p, texts), note_chars))}" for p in paths)


def _text(path: Path, texts: Texts | None) -> str:
    return texts[path] if texts is not None else note_text(path)


def _key(path: Path, keys: Keys | None) -> str:
    return keys.get(path, path.stem) if keys is not None else path.stem


# A line of a note that reads as the prompt's own header of a note (``### other.md``): an outside
# tester's note put a second ``### release-freeze.md`` in its body, with orders under it, and
# the answer for that section went to the real note (stop 45). Any line that opens with a number
# sign or its look-alike (full-width, small), after any blank (a no-break space), is escaped,
# markdown's way, whatever follows it (``### release-freeze.md:``, ``(continued)``: stop 57).
_SECTION = re.compile(r"^([^\S\n]*)([#\uff03\ufe5f])", re.M)


def _fenced(text: str) -> str:
    """``text`` with every line break one (a CR, U+2028, NEL or form feed read as a line by the
    model set a header after it: stop 57) and every line that could pose as a note's header
    escaped (``\\###``)."""
    return _SECTION.sub(r"\1\\\2", "\n".join(text.splitlines()))


def expand_prompt(paths: Sequence[Path], n_per_note: int = N_PER_NOTE, share_ja: float = SHARE_JA,
                  note_chars: int | None = NOTE_CHARS, keys: Keys | None = None, texts: Texts | None = None) -> str:
    """The questions prompt, each note cut at ``note_chars`` (None: whole, as the harness asks)."""
    return render(EXPAND_PROMPT, paths, n_per_note=n_per_note, share_ja_percent=round(share_ja * 100),
                  note_chars=note_chars, keys=keys, texts=texts)


def restate_prompt(paths: Sequence[Path], note_chars: int | None = NOTE_CHARS, keys: Keys | None = None,
                   texts: Texts | None = None) -> str:
    """The restatements prompt, each note cut at ``note_chars`` (only its header is restated)."""
    return render(RESTATE_PROMPT, paths, note_chars=note_chars, keys=keys, texts=texts)


def negatives_prompt(paths: Sequence[Path], n: int, share_ja: float = SHARE_JA, keys: Keys | None = None,
                     texts: Texts | None = None) -> str:
    """The negatives prompt over an even sample of ``paths`` (every k-th note, the smallest k
    that fits ``NEGATIVES_PROMPT_TOKENS``), each note cut at ``NEGATIVE_NOTE_CHARS``."""
    sizes = [estimate_tokens(_cut(_text(p, texts), NEGATIVE_NOTE_CHARS)) + 8 for p in paths]
    room = NEGATIVES_PROMPT_TOKENS - estimate_tokens(template(NEGATIVES_PROMPT))
    every = next((k for k in range(1, len(paths) + 1) if sum(sizes[::k]) <= room), max(len(paths), 1))
    return render(NEGATIVES_PROMPT, paths[::every], note_chars=NEGATIVE_NOTE_CHARS, n_negatives=n,
                  share_ja_percent=round(share_ja * 100), keys=keys, texts=texts)


def _cut(text: str, chars: int | None) -> str:
    return text if chars is None or len(text) <= chars else text[:chars].rstrip() + " …"


def n_negatives(n_notes: int, have_some: bool = False) -> int:
    return max(0 if have_some else MIN_NEGATIVES, min(MAX_NEGATIVES, PER_NOTE * n_notes))


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` as Claude-family tokenizers count them, roughly: a CJK character
    is about one token, other text about four characters per token."""
    wide = len(_WIDE.findall(text))
    return wide + math.ceil((len(text) - wide) / 4)


def batches(paths: Sequence[Path], size: int) -> list[list[Path]]:
    """Even batches of at most ``size`` notes (``size`` <= 0: one batch)."""
    if size <= 0 or len(paths) <= size:
        return [list(paths)] if paths else []
    n = math.ceil(len(paths) / size)
    step = math.ceil(len(paths) / n)
    return [list(paths[i:i + step]) for i in range(0, len(paths), step)]


# --- the folder's files ----------------------------------------------------------------

def note_hash(path: Path) -> str:
    return hashlib.sha256(read_bytes(path)).hexdigest()[:16]


def note_paths(folder: Path) -> list[Path]:  # the folder's notes that are regular files
    return list(keyed_notes(folder))


def keyed_notes(folder: Path) -> dict[Path, str]:
    """``note_paths``, each with the key the index knows it by (``recall.notes.files.note_keys``)."""
    paths = [path for path, _problem in iter_note_files(folder) if path is not None]
    return {path: key for path, key in note_keys(folder, paths).items()
            if path.is_file()}  # a pipe or a device named like a note: nothing to send


def _lines(path: Path | None) -> list[tuple[dict | None, str]]:
    """Each non-blank line of a questions file: (its object, or None when it is no note's line,
    the line as written). Split at line feeds only: a question may hold U+2028."""
    if path is None or not path.is_file():
        return []
    out: list[tuple[dict | None, str]] = []
    for line in read_text(path, errors="replace").split("\n"):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            obj = None
        out.append((obj if isinstance(obj, dict) and isinstance(obj.get("note"), str) else None, line))
    return out


def _read_lines(path: Path | None) -> list[dict]:  # its notes' lines
    return [obj for obj, _ in _lines(path) if obj is not None]


@dataclass
class FolderState:
    """What the folder holds and what is pending (new or changed notes)."""

    folder: Path
    keys: dict[Path, str]  # every note of the folder, with what it is known by (``keyed_notes``)
    pending: list[Path]  # new or changed, to ask for
    has_negatives: bool
    bought: dict[Path, str] = field(default_factory=dict)  # new or changed, answered before: its hash (free)

    @property
    def notes(self) -> list[Path]:
        return list(self.keys)

    def key(self, path: Path) -> str:
        return _key(path, self.keys)

    @property
    def owes_negatives(self) -> bool:
        """No negatives yet (none asked for, or the request failed): they are asked for with
        the next run, whether or not a note is pending."""
        return bool(self.notes) and not self.has_negatives

    @property
    def wanted(self) -> bool:
        """Whether a run has anything to do here: a pending note, one to give back, or negatives."""
        return bool(self.pending) or bool(self.bought) or self.owes_negatives


def _renamed(lines: dict[str, dict], notes: Keys) -> dict[str, str]:
    """``recall.notes.questions.renames`` (every note read only where a generated line is not its note's)."""
    written = {s: o["note_hash"] for s, o in lines.items() if isinstance(o.get("note_hash"), str)}
    digests: dict[str, str] = {}
    for p, key in sorted(notes.items(), key=lambda item: item[1] not in written):  # lined notes first
        if len(digests) == len(written) and all(digests.get(k) == h for k, h in written.items()):
            return {}  # each line is its note's: nothing moved
        with contextlib.suppress(OSError):
            digests[key] = note_hash(p)
    return renames({s: written.get(s) for s in lines}, digests)


def folder_state(folder: Path) -> FolderState:
    """A renamed note whose generated line names it by its old key is not pending (the line
    follows it when the file is next written, ``write_questions``)."""
    notes = keyed_notes(folder)
    lines = {obj["note"]: obj for obj in _read_lines(folder_questions_file(folder))}
    followed = set(_renamed(lines, notes).values())
    pending: dict[Path, str | None] = {}  # with its hash: one answered before is given back (``bought``)
    for path, key in notes.items():
        line = lines.get(key)
        if key not in followed and (line is None or "note_hash" in line and line["note_hash"] != note_hash(path)):
            with contextlib.suppress(OSError):
                pending[path] = None
                pending[path] = note_hash(path)
    known = bought.known({d for d in pending.values() if d}, prompts_hash())
    return FolderState(folder, notes, [p for p, d in pending.items() if d not in known],
                       (folder / NEGATIVES_FILE).is_file(), {p: d for p, d in pending.items() if d and d in known})


@dataclass
class Cost:
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


def cost(state: FolderState, batch_notes: int) -> Cost:
    """What writing the pending notes' questions, restatements and negatives costs, in
    tokens, estimated from the prompts that would be sent (``estimate_tokens``)."""
    out = Cost()
    for part in batches(state.pending, batch_notes):
        for prompt, name in ((expand_prompt(part, keys=state.keys), EXPAND_PROMPT),
                             (restate_prompt(part, keys=state.keys), RESTATE_PROMPT)):
            out.requests += 1
            out.input_tokens += estimate_tokens(prompt)
            out.output_tokens += OUT_TOKENS_PER_NOTE[name] * len(part)
    shown = state.notes if state.owes_negatives else []  # as ``agentcli.generate_folder`` asks
    n = n_negatives(len(shown), state.has_negatives) if shown else 0
    if n:
        out.requests += 1
        out.input_tokens += estimate_tokens(negatives_prompt(shown, n, keys=state.keys))
        out.output_tokens += NEGATIVE_OUT_TOKENS * n
    return out


@dataclass
class Written:
    notes: int = 0
    questions: int = 0
    negatives: int = 0
    negatives_dropped: int = 0
    skipped: list[str] = field(default_factory=list)
    left_out: str | None = None  # the notes left out for what became of them during the run (``sending``)
    given_back: int = 0  # notes whose lines came back from what was bought before (``bought``), nothing sent


def write_questions(folder: Path, questions: dict[str, list[str]], restatements: dict[str, list[str]],
                    hashes: dict[str, str], by: str | Mapping[str, str]) -> int:
    """Replace the lines of the notes in ``hashes`` in the folder's questions file (others kept as written, in
    order, lines recall cannot read included; a generated line under the key of the note it belongs to,
    ``recall.notes.questions.renames``; generated lines of notes no longer in the folder dropped). A note that got
    a line written by hand (no ``note_hash``) while the agent worked keeps it, and the agent's lines for it, new and
    old, are dropped: the person's words win. What the agent wrote is masked as the index would mask it: the file
    sits in the notes folder, often shared. Every generated line written or dropped is kept by its note's hash
    (``bought``; ``by``: the agent, or each note's). Returns the lines written."""
    target = folder_questions_file(folder) or folder / QUESTIONS_FILE
    notes = keyed_notes(folder)
    known = set(notes.values())
    lines = _lines(target)
    by_hand = {read["note"] for read, _ in lines if read is not None and "note_hash" not in read}
    won = {key for key in hashes if key in by_hand}  # its generated line, stale, goes too: it stayed for good
    hashes = {key: digest for key, digest in hashes.items() if key not in by_hand}
    moved = _renamed({read["note"]: read for read, _ in lines if read is not None}, notes)
    kept, gone = [], []
    for read, line in lines:
        if read is not None and read["note"] in moved and moved[read["note"]] not in hashes:
            kept.append(json.dumps(moved_line(read, moved), ensure_ascii=False))
        elif read is not None and moved_line(read, moved) is None and read["note"] not in hashes:
            gone.append(read)  # the stale line of a note another's line moved to
        elif read is None or read["note"] not in hashes and not (
                "note_hash" in read and (read["note"] not in known or read["note"] in won)):
            kept.append(line.rstrip("\r"))
        elif "note_hash" in read:
            gone.append(read)
    new = []
    for key, digest in hashes.items():
        obj: dict = {"note": key, "questions": [mask_secrets(q) for q in questions.get(key, [])]}
        if restatements.get(key):
            obj["restatements"] = [mask_secrets(r) for r in restatements[key]]
        new.append({**obj, "note_hash": digest, "by": by if isinstance(by, str) else by.get(key, "")})
    bought.keep_lines([*gone, *new], prompts_hash())
    replace_private(target, "".join(line + "\n" for line in kept)
                    + "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in new), keep_mode=True)
    return len(new)


def note_questions(folder: Path) -> list[tuple[str, str]]:
    """(note key, question) for every question of the folder's questions file."""
    return [(obj["note"], q) for obj in _read_lines(folder_questions_file(folder)) if isinstance(obj.get("note"), str)
            for q in obj.get("questions", []) if isinstance(q, str)]


def append_negatives(folder: Path, negatives: list[dict], by: str) -> None:
    path = folder / NEGATIVES_FILE
    before = read_text(path, errors="replace") if path.is_file() else ""
    if before and not before.endswith("\n"):
        before += "\n"
    lines = (json.dumps({**n, "text": mask_secrets(n["text"]), "by": by}, ensure_ascii=False) for n in negatives)
    replace_private(path, before + "".join(line + "\n" for line in lines), keep_mode=True)
