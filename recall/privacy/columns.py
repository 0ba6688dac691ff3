"""Secrets a table's header names: a CSV export, a TSV, a spreadsheet pasted as markdown.

``| Service | User | Password |`` then ``| db | admin | X |``: no row says "password", the
column's header does, so the rules of ``masking`` (which read a label beside its value) miss
X. Here each line that could be a header (a label word in it, then two or more cells split by
``|``, ``,``, ``;``, a tab, or two or more spaces: an aligned plain-text table, as a PDF's text
layer, ``psql`` or ``column -t`` print one) is read as one; when one of its cells names a secret, that
cell's column in the rows below it, up to the first line that is not a row of the same table,
is a secret wherever ``masking`` would call the value plausible (not a placeholder, a word or
a count: "see the vault", "***", "${DB_PASSWORD}" stay). A row with fewer cells than its header
(converters drop empty ones) has each cell the secret could have shifted into read as it.

Hand-written rather than ``csv``: the spans of the cells are needed, and a markdown table is no
CSV. Pure standard library, and cheap on text with no label word (one regex scan).
"""

from __future__ import annotations

import re
from collections.abc import Callable

# A header cell that names a secret, whole: qualifiers, then the secret's name.
_QUALIFIER = (r"(?:db|database|admin|root|user|account|app|api|access|client|private|auth|bearer|service|prod"
              r"|production|staging|dev|login|master|secret|refresh|personal|initial|temp|temporary|default)")
_NAME = (r"(?:password|passwd|passphrase|passcode|pass|pw|pwd|secret|secret[ _.\-]?key|api[ _.\-]?key|apikey"
         r"|access[ _.\-]?key|private[ _.\-]?key|token|credentials?|パスワード|暗証番号|密码|密碼|口令|비밀번호"
         r"|passwort|kennwort|mot de passe|contraseña|senha|пароль)")
# Qualifiers are the list above (written together too: "dbpassword") or up to three other
# words ("New password", "WiFi password"); after the name, a kind ("Secret value", "Pass
# phrase") and a note in brackets ("Password (prod)", "パスワード（本番）").
_HEADER_CELL = re.compile(rf"(?:{_QUALIFIER}[ _.\-]?)*(?:[a-z0-9]{{1,20}}[ _.\-]){{0,3}}(?:{_QUALIFIER}[ _.\-]?)*"
                          rf"{_NAME}s?(?:[ _.\-](?:value|phrase|string|code))?(?:[ \t]*[(（][^)）]{{1,20}}[)）])?")
# Where a header could be: a line holding one of the names (checked on lowered text).
_WORD = re.compile(r"pass|pw|secret|key|token|credential|パスワード|暗証番号|密码|密碼|口令|비밀번호|kennwort|senha"
                   r"|contraseña|пароль")
# A row of dashes under a header or around a table: markdown's ``|---|---|``, and the borders psql and
# MySQL draw with ``+`` where columns meet (``-----+-----``, ``+------+------+``), which ended the
# table before its first row (an outside tester's pasted ``SELECT usename, passwd``).
_SEPARATOR_ROW = re.compile(r"^[ \t]*[|+]?(?:[ \t]*:?-{2,}:?[ \t]*[|+])+[ \t]*(?::?-{2,}:?[ \t]*)?$")
_CELL_MAX = 60  # a header cell is a label, not a sentence
ALIGNED = "  "  # the separator of an aligned table: two or more spaces
_ALIGNED_CELL = re.compile(r"\S+(?: \S+)*")
_SEPARATORS = ("|", ",", ";", "\t", ALIGNED)
Span = tuple[int, int, str]


def _cells(line: str, at: int, sep: str) -> list[tuple[int, int]]:
    """(start, end) in the text of each cell of ``line`` (which starts at ``at``), split at
    ``sep`` outside double quotes; a markdown row's outer pipes open and close no cell. With
    ``ALIGNED``, a cell is a run of words one space apart."""
    if sep == ALIGNED:
        return [(at + m.start(), at + m.end()) for m in _ALIGNED_CELL.finditer(line)]
    cells, start, quoted = [], 0, False
    for i, c in enumerate(line):
        if c == '"':
            quoted = not quoted
        elif c == sep and not quoted and not (sep == "|" and i > 0 and line[i - 1] == "\\"):
            cells.append((start, i))
            start = i + 1
    cells.append((start, len(line)))
    if sep == "|":
        if cells and not line[: cells[0][1]].strip():
            cells = cells[1:]
        if cells and not line[cells[-1][0]:].strip():
            cells = cells[:-1]
    return [(at + s, at + e) for s, e in cells]


def _bare(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """``span`` less the white space, quotes and markdown marks around the cell's value."""
    s, e = span
    while s < e and text[s] in " \t\"'`*":
        s += 1
    while e > s and text[e - 1] in " \t\"'`*\r":
        e -= 1
    return s, e


def _secret_columns(text: str, low: str, cells: list[tuple[int, int]], sep: str) -> list[int]:
    names = [low[s:e] for s, e in (_bare(text, c) for c in cells)]
    if len(cells) < 2 or (sep != "|" and any(len(n) > _CELL_MAX or n.count(" ") > 3 for n in names)):
        return []
    return [i for i, n in enumerate(names) if len(n) <= _CELL_MAX and _HEADER_CELL.fullmatch(n)]


def column_spans(text: str, low: str, plausible: Callable[[str], bool]) -> list[Span]:
    """(start, end, "column") of each value under a header cell that names a secret; ``low`` is
    ``text`` lowered with its offsets kept (``masking._ascii_lower``)."""
    spans: list[Span] = []
    done = -1  # the end of the last table read: its rows are no headers
    for m in _WORD.finditer(low):
        if m.start() < done:
            continue
        head = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.start())
        end = len(text) if end < 0 else end
        done = end
        for sep in _SEPARATORS:
            if sep not in text[head:end]:
                continue
            cells = _cells(text[head:end], head, sep)
            columns = _secret_columns(text, low, cells, sep)
            if columns:
                done = _rows(text, end, sep, len(cells), columns, plausible, spans)
                break
    return spans


def _rows(text: str, pos: int, sep: str, width: int, columns: list[int], plausible: Callable[[str], bool],
          spans: list[Span]) -> int:
    """Adds the secret cells of the rows after a header (ending at ``pos``); returns where the
    table ends."""
    while pos < len(text):
        start = pos + 1
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        if sep == "|" and _SEPARATOR_ROW.match(line):
            pos = end
            continue
        cells = _cells(line, start, sep) if sep in line else []
        if not line.strip() or len(cells) < 2 or (sep != "|" and len(cells) > width):
            break
        # A row short of cells (a converter dropped the empty ones) may have shifted the secret
        # left: each cell it could have landed in is read as the secret's.
        shift = max(0, width - len(cells))
        for i in columns:
            for j in range(max(0, i - shift), min(i, len(cells) - 1) + 1):
                s, e = _bare(text, cells[j])
                if e > s and not any(c.isspace() for c in text[s:e]) and plausible(text[s:e]):
                    spans.append((s, e, "column"))
        pos = end
    return pos


# A key/value table drawn column by column, as a PDF's text layer lists it: its labels one per
# line, then its values one per line in the same order (an outside tester's server sheet: Host,
# Username, Password, Port, then db1.internal, admin, Vb7$..., 5432; stop 45).
_LABEL_LINE = re.compile(r"[^\W\d_][^\W\d]*(?:[ _.\-][^\W\d]+){0,3}(?:[ \t]*[(（][^)）\n]{1,20}[)）])?:?")
_STACK_MAX = 12


def stacked_spans(text: str, low: str, plausible: Callable[[str], bool]) -> list[Span]:
    """(start, end, "column") of each value of a column-by-column table whose label names a
    secret: a run of 2 to 12 label lines, then as many value lines."""
    spans: list[Span] = []
    lines, pos = [], 0
    for line in text.split("\n"):
        lines.append((pos, pos + len(line)))
        pos += len(line) + 1
    i = 0
    while i < len(lines):
        run = i
        while run < len(lines) and run - i <= _STACK_MAX and _LABEL_LINE.fullmatch(text[slice(*lines[run])].strip()):
            run += 1
        values: list[tuple[int, int]] = []
        while run + len(values) < len(lines) and len(values) < run - i:
            value = _bare(text, lines[run + len(values)])
            if value[1] <= value[0]:
                break
            values.append(value)
        k = len(values)  # the labels are the run's last k lines: a title may come before them
        if 2 <= k <= _STACK_MAX:
            for j, (s, e) in enumerate(values):
                label = low[slice(*lines[run - k + j])].strip().rstrip(":")
                if _HEADER_CELL.fullmatch(label) and " " not in text[s:e] and plausible(text[s:e]):
                    spans.append((s, e, "column"))
        i = max(run, i + 1)
    return spans
