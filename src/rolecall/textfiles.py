"""Reading the project's input files: text, line lists and delimited corpora.

``read_text_file`` decodes a file or raises an ``InputFileError`` naming the problem and
the fix (wrong encoding, a BOM, NUL bytes, a zip or gzip archive, a directory).
``input_lines`` reads one text a line (a path, or ``-`` for stdin). ``csv_rows`` parses a
spreadsheet file with line-precise errors.

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

Bad files (wrong encoding, NUL bytes, broken rows, a missing column, nothing in them) are
``InputFileError``s naming the file, the line and a fix; blank lines and giant lines are
read and left to cleaning to drop and count (``read_corpus`` says which and why).
"""

from __future__ import annotations

import codecs
import csv
import io
import shlex
from collections.abc import Iterator
from pathlib import Path

from rolecall.errors import ConfigError, InputFileError
from rolecall.korean import HANGUL_RE

SPREADSHEET_DELIMITERS = {".csv": ",", ".tsv": "\t"}
DELIMITER_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "pipe": "|", "semicolon": ";"}
# Byte-order marks, longest first: the UTF-32LE mark starts with the UTF-16LE one.
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
ARCHIVES = (
    (
        b"PK\x03\x04",
        "a zip archive (an Excel .xlsx?)",
        "save the sheet as 'CSV UTF-8', or unzip it and name the text file inside",
    ),
    (b"\x1f\x8b", "gzip-compressed", "decompress it first: gunzip -k {file}"),
)


def normalize_delimiter(delimiter: str | None) -> str | None:
    """``tab``/``\\t``/``pipe``/... or one character; shells make a literal tab awkward."""
    if delimiter is None:
        return None
    delimiter = DELIMITER_NAMES.get(delimiter.lower(), delimiter)
    if len(delimiter) != 1 or delimiter in '\r\n"':
        raise ConfigError(
            f"bad delimiter {delimiter!r}",
            fix="give one character, or tab, comma, pipe or semicolon",
        )
    return delimiter


def _quote(path: Path, suffix: str = "") -> str:
    return shlex.quote(str(path) + suffix)


def _path_problem(path: Path) -> InputFileError | None:
    if not path.exists():
        where = (
            ""
            if path.is_absolute()
            else f" (a relative path starts at {Path.cwd()}; in a "
            "config file, at the config's folder)"
        )
        return InputFileError(path, "file not found", fix=f"check the path{where}")
    if path.is_dir():
        files = sorted(p.name for p in path.iterdir() if p.is_file())
        listed = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        return InputFileError(
            path,
            "is a directory, not a file",
            # which file was meant is the user's to say: list, do not guess
            fix=f"name a file, not a directory (this one holds {listed})"
            if files
            else "name a file, not a directory",
        )
    if not path.is_file():
        return InputFileError(
            path, "is not a file (a device, pipe or socket)", fix="name a regular text file"
        )
    return None


def _read_bytes(path: Path) -> bytes:
    try:
        problem = _path_problem(path)
        if problem is None:
            return path.read_bytes()
    except OSError as exc:
        problem = InputFileError(
            path,
            f"cannot be read ({exc.strerror or exc})",
            fix="check that you may read it: ls -l " + _quote(path),
        )
    raise problem


def _check_encoding(encoding: str) -> None:
    try:
        "\n".encode(encoding)  # also refuses codecs that are not text encodings (base64)
    except LookupError:
        raise ConfigError(
            f"unknown text encoding {encoding!r}",
            fix="use utf-8 (the default), cp949 (Korean Windows, a superset of EUC-KR) or utf-16",
        ) from None


def _ascii_compatible(encoding: str) -> bool:
    return "\n|,\t".encode(encoding) == b"\n|,\t"


def _utf16_without_bom(data: bytes) -> str | None:
    """``UTF-16LE``/``UTF-16BE`` if ``data`` looks like it: NUL high bytes on one side.

    subtle: ASCII characters (newlines, spaces, digits) are ``xx 00`` in UTF-16LE, so their
    NULs sit at odd offsets, at least one a line; Hangul syllables seldom have a zero byte.
    A stray NUL or two in UTF-8 text is not enough.
    """
    sample = data[:65536]
    if sample.count(0) < max(2, len(sample) // 100):
        return None
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    name = "UTF-16LE" if odd > 4 * even else "UTF-16BE" if even > 4 * odd else None
    if name is None:
        return None
    try:
        sample[: len(sample) & ~1].decode(name)
    except UnicodeDecodeError:
        return None
    return name


def _guess_encoding(data: bytes, offset: int, encoding: str) -> str | None:
    """The encoding the bad line at ``offset`` is probably in (one with Hangul in it)."""
    utf16 = _utf16_without_bom(data)
    if utf16:
        return utf16
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    line = data[start : end if end >= 0 else len(data)]
    for candidate in ("cp949", "utf-8"):
        if codecs.lookup(candidate) == codecs.lookup(encoding):
            continue
        try:
            if HANGUL_RE.search(line.decode(candidate)):
                return candidate.upper()
        except UnicodeDecodeError:
            pass
    return None


def _convert_fix(path: Path, source: str | None) -> str:
    if source == "UTF-8":
        return "it is UTF-8: read it with encoding='utf-8' (the default)"
    q = _quote(path)
    if source is None:
        return (
            f"find its encoding (file -i {q}) and convert it: "
            f"iconv -f ENCODING -t utf-8 {q} > {_quote(path, '.utf8')}"
        )
    return f"convert it: iconv -f {source.lower()} -t utf-8 {q} > {_quote(path, '.utf8')}"


def _decode_error(
    path: Path, data: bytes, encoding: str, exc: UnicodeDecodeError
) -> InputFileError:
    name = "UTF-8" if encoding == "utf-8-sig" else encoding.upper()
    line = data.count(b"\n", 0, exc.start) + 1 if _ascii_compatible(encoding) else None
    guess = _guess_encoding(data, exc.start, encoding)
    looks = {
        None: "",
        "CP949": "; it looks like CP949/EUC-KR, the Korean Windows encoding",
        "UTF-8": "; it looks like UTF-8",
    }.get(guess, f"; it looks like {guess} without a byte-order mark")
    return InputFileError(
        path,
        f"is not {name} text: byte {exc.start} (0x{data[exc.start]:02x}) does not decode{looks}",
        fix=_convert_fix(path, guess),
        line=line,
    )


def _nul_error(path: Path, data: bytes, text: str, encoding: str) -> InputFileError:
    """NUL never belongs in text: UTF-16 read as UTF-8, a binary file or a broken export."""
    line = text.count("\n", 0, text.index("\x00")) + 1
    utf16 = _utf16_without_bom(data) if _ascii_compatible(encoding) else None
    if utf16:
        return InputFileError(
            path,
            f"has NUL bytes: it looks like {utf16} without a byte-order mark",
            fix=_convert_fix(path, utf16),
            line=line,
        )
    where = f" (byte {data.index(0)})" if _ascii_compatible(encoding) else ""
    return InputFileError(
        path,
        f"has a NUL character{where}: text has none, so this is a binary file or a broken export",
        line=line,
        fix=f"check the file; to delete the NULs: tr -d '\\000' < "
        f"{_quote(path)} > {_quote(path, '.clean')}",
    )


def input_lines(source: str | Path) -> list[str]:
    """The non-blank lines, stripped, of a text file (``read_text_file``'s checks) or of
    stdin for ``-``: what the line-per-item commands (chat scripts, rewrites) read."""
    import sys

    text = sys.stdin.read() if str(source) == "-" else read_text_file(source)
    return [line.strip() for line in text.splitlines() if line.strip()]


def read_text_file(path: str | Path, encoding: str = "utf-8") -> str:
    """The text of a file, or an ``InputFileError`` that names the problem and the fix.

    A byte-order mark wins over ``encoding`` (a UTF-8 BOM is dropped; a UTF-16/32 file
    with a BOM is read as such: the mark leaves no doubt). Bytes that do not decode give
    the line and byte offset and a guess (CP949/EUC-KR, UTF-16 without a BOM) with the
    ``iconv`` line that converts the file; NUL characters, zip/gzip files, directories
    and missing files are errors too. The whole file is read: ids need line numbers, and
    a corpus of 93k comments is about 10 MB.
    """
    path = Path(path)
    _check_encoding(encoding)
    data = _read_bytes(path)
    for magic, what, fix in ARCHIVES:
        if data.startswith(magic):
            raise InputFileError(
                path, f"is {what}, not a text file", fix=fix.format(file=_quote(path))
            )
    encoding = next((name for bom, name in BOMS if data.startswith(bom)), encoding)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise _decode_error(path, data, encoding, exc) from None
    if "\x00" in text:
        raise _nul_error(path, data, text, encoding)
    return text.removeprefix("\ufeff")


def _lines(path: Path, text: str) -> list[str]:
    """Physical lines (``\\n`` or ``\\r\\n``); not ``splitlines``, which also splits on
    U+2028 and friends and would make the line numbers in ids disagree with ``sed``."""
    if "\r" in text and "\n" not in text:
        raise InputFileError(
            path,
            "has old Mac line endings (CR only), so the whole file would read as one line",
            fix=f"convert them: tr '\\r' '\\n' < {_quote(path)} > {_quote(path, '.unix')}",
        )
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if lines and lines[-1] == "" else lines


def _csv_error(path: Path, exc: csv.Error, start: int, stop: int) -> InputFileError:
    if "unexpected end of data" in str(exc):
        return InputFileError(
            path,
            "broken row: a quote opened in it is never closed (the "
            "file ends inside the quoted field)",
            line=start,
            fix='close the quote; a quote inside a quoted field is written twice ("")',
        )
    return InputFileError(
        path,
        f"broken row ({exc}; the parser stopped at line {stop})",
        line=start,
        fix="a quoted field must end with its quote right "
        'before the delimiter; write a quote inside it twice ("")',
    )


def csv_rows(path: Path, text: str, delimiter: str = ",") -> Iterator[tuple[int, list[str]]]:
    """``(first line, fields)`` per row of a quoted spreadsheet file (a blank line: ``[]``).

    A quote never closed, or text after a closing quote, is an ``InputFileError`` naming
    the row's first line. A field may be as long as the file.
    """
    # subtle: csv refuses fields over 131072 characters with a process-wide limit; raise it
    # (never lower it) to the size of this text, which is in memory already, so a giant
    # comment reaches clean_records (and its too_long count) instead of crashing the read.
    limit = min(len(text) + 1, 2**31 - 1)  # a C long on Windows
    if csv.field_size_limit() < limit:
        csv.field_size_limit(limit)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    start = 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise _csv_error(path, exc, start, reader.line_num) from None
        yield start, fields
        start = reader.line_num + 1


def _split_rows(path: Path, text: str, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    for number, line in enumerate(_lines(path, text), start=1):
        yield number, line.split(delimiter) if line else []


def _blank(fields: list[str]) -> bool:
    return not any(field.strip() for field in fields)


def _column_index(
    path: Path, rows: Iterator[tuple[int, list[str]]], column: str
) -> tuple[int, int | None]:
    """``(index, width)``; a name consumes the header row, a number means no header."""
    if column.isdigit():
        if int(column) < 1:
            raise ConfigError(
                f"column numbers start at 1, got {column}",
                fix=f"use {path.name}:1 for the first field",
            )
        return int(column) - 1, None
    header = next((fields for _, fields in rows if not _blank(fields)), None)
    if header is None:
        raise InputFileError(path, "is empty: no header row", fix="check the corpus file")
    header = [name.strip() for name in header]
    if column not in header:
        named = [name for name in header if name] or ["1"]
        same = [name for name in named if name.lower() == column.strip().lower()]
        shown = ", ".join(header[:20]) + (
            f", ... ({len(header)} in all)" if len(header) > 20 else ""
        )
        raise InputFileError(
            path,
            f"has no column {column!r}; its columns are: {shown}",
            fix=f"names are case-sensitive: {path.name}:{same[0]}"
            if same
            else f"name one of them, e.g. {path.name}:{named[0]}; or, if "
            "the file has no header row, give a field number "
            f"({path.name}:1 for the first)",
        )
    return header.index(column), len(header)


def _delimited_rows(
    path: Path, text: str, column: str, delimiter: str, quoted: bool
) -> list[tuple[int, str]]:
    rows = csv_rows(path, text, delimiter) if quoted else _split_rows(path, text, delimiter)
    index, width = _column_index(path, rows, column)
    out: list[tuple[int, str]] = []
    for line, fields in rows:
        if _blank(fields):  # "", "   " or only delimiters: a blank row, not a broken one
            out.append((line, ""))
            continue
        width = width or len(fields)  # no header: the first row sets the width
        if len(fields) <= index or len(fields) < width or (quoted and len(fields) > width):
            fix = (
                "fix this row: a missing or extra delimiter, or a quote that is not "
                "closed (a text holding the delimiter must be quoted)"
                if quoted
                else "fix this row: a missing delimiter, or a text split over two lines by a "
                "newline inside it"
            )
            raise InputFileError(
                path,
                f"broken row: {len(fields)} fields, expected {max(width, index + 1)}",
                line=line,
                fix=fix,
            )
        extra = len(fields) - width  # > 0 only unquoted: delimiters inside the text
        out.append((line, delimiter.join(fields[index : index + extra + 1])))
    return out


def _columns_hint(path: Path, text: str, delimiter: str) -> str:
    header = next((f for _, f in csv_rows(path, text, delimiter) if not _blank(f)), [])
    return ", ".join(h.strip() for h in header) or "(none: the file is empty)"


def _why_empty(text: str, column: str | int | None, rows: list[tuple[int, str]]) -> str:
    if not text:
        return "the file is empty (0 bytes)"
    if not text.strip():
        return "the file has only blank lines"
    if not rows and column is not None and not str(column).isdigit():
        return "it has a header row and nothing under it"
    return f"column {column} is blank in every row"


def read_corpus(
    path: str | Path,
    column: str | int | None = None,
    delimiter: str | None = None,
    *,
    encoding: str = "utf-8",
) -> list[tuple[str, str]]:
    """``(NAME:LINE, text)`` for every row, blank ones included (cleaning counts them).

    ``column`` is a header name or a 1-based field number (no header); without it the file
    is one text a line, except ``.csv``/``.tsv``, which must name their text column.
    ``delimiter`` defaults from the extension (``.csv`` comma, ``.tsv`` tab). ``encoding``
    is the file's when it is not UTF-8 (``cp949``); see ``read_text_file``.

    Bad input, and why each policy: blank and whitespace-only lines (and rows whose fields
    are all blank) become empty rows, which ``clean_records`` drops and counts as
    ``empty``; text in other scripts is kept (``kept_without_hangul``); a giant line or
    field is read and left to ``max_chars`` (``too_long``). Everything else is an
    ``InputFileError`` naming the file, the line where it makes sense, and a fix: bytes
    that are not in ``encoding``, NUL characters, a missing column (the error lists the
    columns), an unclosed quote, and a row with too few or (quoted) too many fields.
    subtle: such a row is an error rather than a drop because it means the parse is off
    (a stray quote swallows the rows after it, a newline inside an unquoted text splits it
    into two rows, a wrong delimiter shifts the column): the rows around it would be indexed
    wrong too, silently, while the line number makes it a one-line fix.
    """
    path = Path(path)
    text = read_text_file(path, encoding)
    if not text.strip():
        raise InputFileError(
            path,
            f"is an empty corpus: {_why_empty(text, None, [])}",
            fix="check the path: is it the corpus you meant?",
        )
    suffix = path.suffix.lower()
    quoted = suffix in SPREADSHEET_DELIMITERS
    delimiter = normalize_delimiter(delimiter) or SPREADSHEET_DELIMITERS.get(suffix)
    if column is None and quoted:
        raise InputFileError(
            path,
            "a .csv/.tsv corpus needs its text column; columns: "
            + _columns_hint(path, text, delimiter),
            fix=f"name it after a colon: {path}:COLUMN",
        )
    if column is None and delimiter is not None:
        raise ConfigError(
            f"{path}: a delimiter was given but no column",
            fix=f"name the text column: {path}:COLUMN (a name, or 1 for "
            "the first field of a file without a header)",
        )
    if column is None:
        rows = list(enumerate(_lines(path, text), start=1))
    elif delimiter is None:
        raise ConfigError(
            f"{path}: a column was given but no delimiter",
            fix="pass the delimiter, e.g. --delimiter '|' (or tab), or name the file .csv/.tsv",
        )
    else:
        rows = _delimited_rows(path, text, str(column), delimiter, quoted)
    if not any(row_text.strip() for _, row_text in rows):
        raise InputFileError(
            path,
            f"is an empty corpus: {_why_empty(text, column, rows)}",
            fix="check the file (and the column, if you named one)",
        )
    return [(f"{path.name}:{line}", row_text) for line, row_text in rows]
