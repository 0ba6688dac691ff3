"""What the team store's server returns, read as recall's own write path would have stored it.

A member's policies let them update their own rows with plain SQL: every field a teammate's row
holds is read here, capped and masked (``_read``), an ``extra`` that is not a small object read
as empty (``extra``), a source kind ``recall team push`` does not write shown ``other`` (``kind``).
"""

from __future__ import annotations

# What a bare `recall team push` sends, of the folders recall indexes here (``App.default_sources``):
# this project's memory (private) and the ``[sources] rules`` folders (team). An allow-list: a bare
# push shared ``[sources] libraries`` with the whole team (an outside tester's, D2), and any kind
# added to the local defaults later would have been shared too.
BARE_PUSH_KINDS = ("memory", "rule")
# The kinds `recall team push` writes (``--kind``): a source of another kind (a member's SQL) is shown "other".
SOURCE_KINDS = ("dir", *BARE_PUSH_KINDS)


def kind(value: object) -> str:
    return value if isinstance(value, str) and value in SOURCE_KINDS else "other"


def extra(text: object) -> dict:
    """A note's ``extra`` as the server returned it (text): an object of at most 64 KB, else {}
    (a member's row may hold anything jsonb takes: a list, a number, arrays 3,000 deep)."""
    import json

    if not isinstance(text, str) or len(text) > 65_536:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


# What is kept past a field's limit while it is masked: room for a secret that starts before the
# cut (a PEM key runs to ~3,300 characters). Masking a member's 20 MB field whole, then cutting
# it, held every teammate's search for 50 s (an outside tester's, stop 56).
MASKED_PAST_LIMIT = 8_192


def text(value: object, limit: int) -> str:
    """A text field as the server returned it, as recall's write path would have stored it: masked
    (``recall.privacy.masking``) and cut at ``limit`` characters (``recall.notes.files.cap_field``)."""
    from recall.notes.files import cap_field
    from recall.privacy.masking import mask_secrets

    raw = "" if value is None else str(value)
    return cap_field(mask_secrets(raw[: limit + MASKED_PAST_LIMIT]), limit)

