"""Comment corpora for the K/DA slang index: reading them, and cleaning them like the paper.

``read_corpus`` turns a file into ``(source_id, text)`` rows. The id is ``NAME:LINE`` (the
file name and the 1-based line the row starts on), so a retrieved comment can be recorded
as provenance and found again with ``sed -n LINEp NAME``. Three layouts:

- one text a line (any file without a column; ``.txt``),
- a delimited file with a header row, the text in a named column (``:comments``),
- a delimited file without a header, the text in a 1-based field (``:1``).

``.csv``/``.tsv`` files are parsed as spreadsheets write them (quoted fields may hold the
delimiter or a newline). Any other delimited file (``--delimiter '|'``) is split line by
line with no quoting; subtle: such files (``text|label``) put an unquoted delimiter inside
the text now and then, so a row with more fields than the header (or the first row) gets
the extra ones joined back into the text column — the other columns are labels and ids,
which never hold the delimiter. Spreadsheet files get no such repair: a bad row there is
an error that names its line.

``clean_comments`` / ``clean_records`` strip URLs and leading reply markers, collapse
whitespace (after NFC), and drop empty, too short, too long and duplicate comments,
counting each reason. Lines without Hangul are kept (slang is often romanised or mixed)
but counted, so the report shows how Korean the corpus really is.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

from rolecall.errors import ConfigError, InputFileError

SPREADSHEET_DELIMITERS = {".csv": ",", ".tsv": "\t"}
DELIMITER_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "pipe": "|", "semicolon": ";"}
DROP_REASONS = ("empty", "too_short", "too_long", "duplicate")

# http(s)/www links, and bare domains followed by a path (naver.me/5h07ulzU, youtu.be/x):
# a bare "word.com" without a path is left alone, it may be the comment's topic.
URL_RE = re.compile(r"(?:https?://|www\.)\S+"
                    r"|\b(?:[a-z0-9-]+\.)+(?:com|net|org|kr|me|be|ly|io|tv|at|gl)/\S*",
                    re.IGNORECASE)
# One leading reply marker: "@user", ">>"/"> ", "RE:", or the community "ㄴ" reply arrow.
# subtle: "ㄴ" is a marker only before a space, the end or a whole syllable ("ㄴ와 ...");
# "ㄴㄴ" (no-no), "ㄴㅁㅎ" (initials) and "ㄴㅏ경원" (jamo-split name) are words, kept.
REPLY_RE = re.compile(r"^(?:@\S+|>>+|>(?=\s)|re\s*:|ㄴ(?=\s|$|[가-힣]))\s*", re.IGNORECASE)
ZERO_WIDTH_RE = re.compile("[\u200b\u200c\u200d\u2060\ufeff]")
HANGUL_RE = re.compile("[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")


def _check_limits(min_chars: int, max_chars: int | None) -> None:
    if min_chars < 0 or (max_chars is not None and max_chars < max(min_chars, 1)):
        raise ConfigError(f"bad comment length limits min_chars={min_chars}, "
                          f"max_chars={max_chars}",
                          fix="use 0 <= min_chars <= max_chars (max_chars at least 1)")


def clean_text(text: str) -> tuple[str, bool, bool]:
    """One comment cleaned: ``(text, had_url, had_reply_marker)``; see the module docstring."""
    text = ZERO_WIDTH_RE.sub("", unicodedata.normalize("NFC", text))
    text, urls = URL_RE.subn(" ", text)
    text = " ".join(text.split())
    had_marker = False
    while True:  # "RE: @kim ㄴ ..." carries several markers in a row
        stripped = REPLY_RE.sub("", text, count=1)
        if stripped == text:
            break
        text, had_marker = stripped, True
    return text, urls > 0, had_marker


def clean_records(records: Iterable[tuple[str, str]], min_chars: int = 5,
                  max_chars: int | None = 300) -> tuple[list[tuple[str, str]], dict]:
    """Clean ``(id, text)`` rows; keep the first of duplicates, so ids stay the earliest.

    Lengths are in characters after cleaning. The report counts every input row exactly
    once: ``input == kept + sum(dropped.values())``; ``changed`` and
    ``kept_without_hangul`` count rows, not drops.
    """
    _check_limits(min_chars, max_chars)
    dropped = dict.fromkeys(DROP_REASONS, 0)
    changed = {"url_removed": 0, "reply_marker_removed": 0}
    seen: set[str] = set()
    kept: list[tuple[str, str]] = []
    total = no_hangul = 0
    for source_id, raw in records:
        total += 1
        text, had_url, had_marker = clean_text(raw)
        changed["url_removed"] += had_url
        changed["reply_marker_removed"] += had_marker
        if not text:
            reason = "empty"
        elif len(text) < min_chars:
            reason = "too_short"
        elif max_chars is not None and len(text) > max_chars:
            reason = "too_long"
        elif text in seen:
            reason = "duplicate"
        else:
            seen.add(text)
            kept.append((source_id, text))
            no_hangul += HANGUL_RE.search(text) is None
            continue
        dropped[reason] += 1
    report = {"input": total, "kept": len(kept), "dropped": dropped, "changed": changed,
              "kept_without_hangul": no_hangul, "min_chars": min_chars,
              "max_chars": max_chars}
    return kept, report


def clean_comments(lines: Iterable[str], min_chars: int = 5, max_chars: int | None = 300
                   ) -> tuple[list[str], dict]:
    """``clean_records`` for bare strings: the kept texts and the report."""
    kept, report = clean_records(((str(i), line) for i, line in enumerate(lines)),
                                 min_chars, max_chars)
    return [text for _, text in kept], report


def normalize_delimiter(delimiter: str | None) -> str | None:
    """``tab``/``\\t``/``pipe``/... or one character; shells make a literal tab awkward."""
    if delimiter is None:
        return None
    delimiter = DELIMITER_NAMES.get(delimiter.lower(), delimiter)
    if len(delimiter) != 1 or delimiter in "\r\n\"":
        raise ConfigError(f"bad delimiter {delimiter!r}",
                          fix="give one character, or tab, comma, pipe or semicolon")
    return delimiter


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise InputFileError(path, "file not found" if not path.exists() else "not a file",
                             fix="check the corpus path")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFileError(path, "is not UTF-8 text", line=line,
                             fix="convert it, e.g. iconv -f cp949 -t utf-8") from None
    return text.removeprefix("\ufeff")


def _lines(text: str) -> list[str]:
    """Physical lines (``\\n`` or ``\\r\\n``); not ``splitlines``, which also splits on
    U+2028 and friends and would make the line numbers in ids disagree with ``sed``."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if lines and lines[-1] == "" else lines


def _csv_rows(path: Path, text: str, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """``(first line, fields)`` per row of a quoted spreadsheet file."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    start = 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputFileError(path, f"broken row ({exc}; the parser stopped at line "
                                 f"{reader.line_num})", line=start,
                                 fix="fix the quoting of this row") from None
        yield start, fields
        start = reader.line_num + 1


def _split_rows(text: str, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    for number, line in enumerate(_lines(text), start=1):
        yield number, line.split(delimiter) if line else []


def _column_index(path: Path, rows: Iterator[tuple[int, list[str]]], column: str
                  ) -> tuple[int, int | None]:
    """``(index, width)``; a name consumes the header row, a number means no header."""
    if column.isdigit():
        if int(column) < 1:
            raise ConfigError(f"column numbers start at 1, got {column}",
                              fix=f"use {path.name}:1 for the first field")
        return int(column) - 1, None
    header = next((fields for _, fields in rows if fields), None)
    if header is None:
        raise InputFileError(path, "is empty: no header row", fix="check the corpus file")
    header = [name.strip() for name in header]
    if column not in header:
        raise InputFileError(path, f"has no column {column!r}; its columns are: "
                             f"{', '.join(header)}",
                             fix=f"name one of them, e.g. {path.name}:{header[0]}")
    return header.index(column), len(header)


def _delimited_rows(path: Path, text: str, column: str, delimiter: str, quoted: bool
                    ) -> list[tuple[int, str]]:
    rows = _csv_rows(path, text, delimiter) if quoted else _split_rows(text, delimiter)
    index, width = _column_index(path, rows, column)
    out: list[tuple[int, str]] = []
    for line, fields in rows:
        if not fields:
            out.append((line, ""))
            continue
        width = width or len(fields)  # no header: the first row sets the width
        if len(fields) <= index or len(fields) < width or (quoted and len(fields) > width):
            raise InputFileError(path, f"broken row: {len(fields)} fields, expected {width}",
                                 line=line, fix="fix this row (a missing or extra "
                                 "delimiter, or a quote that is not closed)")
        extra = len(fields) - width  # > 0 only unquoted: delimiters inside the text
        out.append((line, delimiter.join(fields[index: index + extra + 1])))
    return out


def _columns_hint(path: Path, text: str, delimiter: str) -> str:
    header = next((fields for _, fields in _csv_rows(path, text, delimiter) if fields), [])
    return ", ".join(h.strip() for h in header) or "(none: the file is empty)"


def read_corpus(path: str | Path, column: str | int | None = None,
                delimiter: str | None = None) -> list[tuple[str, str]]:
    """``(NAME:LINE, text)`` for every row, blank ones included (cleaning counts them).

    ``column`` is a header name or a 1-based field number (no header); without it the file
    is one text a line, except ``.csv``/``.tsv``, which must name their text column.
    ``delimiter`` defaults from the extension (``.csv`` comma, ``.tsv`` tab).
    """
    path = Path(path)
    text = _read_text(path)
    suffix = path.suffix.lower()
    quoted = suffix in SPREADSHEET_DELIMITERS
    delimiter = normalize_delimiter(delimiter) or SPREADSHEET_DELIMITERS.get(suffix)
    if column is None and quoted:
        raise InputFileError(path, "a .csv/.tsv corpus needs its text column; columns: "
                             + _columns_hint(path, text, delimiter),
                             fix=f"name it after a colon: {path}:COLUMN")
    if column is None and delimiter is not None:
        raise ConfigError(f"{path}: a delimiter was given but no column",
                          fix=f"name the text column: {path}:COLUMN (a name, or 1 for "
                              "the first field of a file without a header)")
    if column is None:
        rows = list(enumerate(_lines(text), start=1))
    elif delimiter is None:
        raise ConfigError(f"{path}: a column was given but no delimiter",
                          fix="pass the delimiter, e.g. --delimiter '|' (or tab), or "
                              "name the file .csv/.tsv")
    else:
        rows = _delimited_rows(path, text, str(column), delimiter, quoted)
    if not any(row_text.strip() for _, row_text in rows):
        raise InputFileError(path, "is an empty corpus: no text in it",
                             fix="check the file (and the column, if you named one)")
    return [(f"{path.name}:{line}", row_text) for line, row_text in rows]
