"""CSV cells that are safe to open in a spreadsheet, and read back exactly by rolecall.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (and, in some, a
tab or carriage return) as a formula: a text such as ``=cmd|'/C calc'!A0`` in an exported
CSV is a command for whoever opens it (CSV injection). ``neutralise`` prefixes such a cell
with a single quote, as OWASP advises; spreadsheets show the text after the quote.

Subtle: the web app's ``pairs.csv`` and ``pair-labels.csv`` are also read back by
rolecall (``rolecall detox train``, ``rolecall eval agreement --labels``), whose readers
call ``restore``. To make that exact, ``neutralise`` also quotes a cell that starts with
quotes followed by a trigger (``'=x`` -> ``''=x``), and ``restore`` removes one quote only
from such cells: ``restore(neutralise(s)) == s`` for every string, and a cell that never
went through ``neutralise`` changes only if it starts with a quote then a trigger.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(cell: object) -> object:
    """``cell`` with a leading quote if a spreadsheet would read it as a formula; numbers
    and other non-strings are returned as they are (a negative number is not a formula)."""
    if isinstance(cell, str) and cell.lstrip("'").startswith(TRIGGERS):
        return "'" + cell
    return cell


def restore(cell: str) -> str:
    """Undo ``neutralise``."""
    if cell.startswith("'") and cell[1:].lstrip("'").startswith(TRIGGERS):
        return cell[1:]
    return cell


def csv_text(rows: Iterable[Iterable[object]]) -> str:
    """The rows as CSV text, every cell neutralised."""
    out = io.StringIO()
    csv.writer(out).writerows([neutralise(cell) for cell in row] for row in rows)
    return out.getvalue()
