"""A workbook's sheets as text: one markdown table per sheet, of the cells that hold a value.

openpyxl reads the workbook read-only, streaming each sheet's rows as the file lists them; the
dimension a sheet states is dropped first (``reset_dimensions``), so rows and cells the file does
not hold are never made. markitdown's converter went through pandas, which builds a dense table
over a sheet's whole used range: a 5 KB workbook with one cell at A1 and one at A1048576 (or
AX100000) cost ~120 s and ~4 GB and was skipped (an outside tester's). Here time and memory go
with the cells that hold a value: a table keeps only the rows and the columns that hold one.

What a reader never sees (hidden sheets, rows and columns, ``;;;`` cells, rows past
``shown.MAX_ROWS``) is taken out before (``recall.notes.documents.shown.shown_xlsx``).
"""

from __future__ import annotations

import itertools
import operator
from typing import BinaryIO

from recall.notes.documents.shown import MAX_ROWS


def sheet_tables(stream: BinaryIO) -> list[tuple[str, str]]:
    """(sheet name, its table) for each sheet with a value, in the workbook's order."""
    from openpyxl import load_workbook

    book = load_workbook(stream, read_only=True, data_only=True)
    try:
        out = []
        for sheet in book.worksheets:
            if hasattr(sheet, "reset_dimensions"):  # a chartsheet has no cells
                sheet.reset_dimensions()
                table = _table(_rows(sheet))
                if table:
                    out.append((str(sheet.title), table))
        return out
    finally:
        book.close()


def _rows(sheet) -> list[dict[int, str]]:
    """A sheet's rows that hold a value, each as {column index: text}, at most ``MAX_ROWS``."""
    rows: list[dict[int, str]] = []
    for values in sheet.iter_rows(values_only=True):
        if not values:  # a row the file does not hold: openpyxl yields it empty
            continue
        present = itertools.compress(range(len(values)), map(operator.is_not, values, itertools.repeat(None)))
        row = {i: text for i in present if (text := _cell(values[i]))}
        if row:
            rows.append(row)
            if len(rows) >= MAX_ROWS:
                break
    return rows


def _cell(value: object) -> str:
    """A cell's value as one line of a markdown table's cell."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).split()).replace("|", "\\|")


def _table(rows: list[dict[int, str]]) -> str:
    """The rows as a markdown table whose columns are those holding a value; the first row heads it."""
    if not rows:
        return ""
    columns = sorted(set().union(*rows))
    lines = ["| " + " | ".join(row.get(c, "") for c in columns) + " |" for row in rows]
    lines.insert(1, "|" + " --- |" * len(columns))
    return "\n".join(lines)
