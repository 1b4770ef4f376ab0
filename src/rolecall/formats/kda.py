"""The K/DA dataset format (CSV ``neutral,implicit``) and the data card of a run.

``read_kda_csv`` reads the released K/DA files (and this project's exports) with
line-numbered errors; ``write_kda_csv`` writes pairs in the same format (atomically);
``write_data_card`` writes a Markdown card: counts, retention per filter and per n, models,
prompt hashes, licence and an offensive-content warning.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path

from rolecall.atomic import atomic_open
from rolecall.errors import InputFileError
from rolecall.formats.spreadsheet import restore
from rolecall.records import Pair

COLUMNS = ("neutral", "implicit")
WARNING = (
    "**Content warning.** This dataset contains implicitly offensive Korean text "
    "(sarcasm, contempt, bias, community slang, disguised swear words) made on "
    "purpose to train detoxification and safety models. Do not show it to people "
    "without a warning and a way to mask it."
)


def read_kda_csv(path: str | Path, *, encoding: str = "utf-8") -> list[Pair]:
    """Pairs from a K/DA CSV: a header with ``neutral`` and ``implicit`` (other columns are
    ignored), then one pair a row; ``provenance`` is the file name and the row's first line.

    Blank lines are skipped. Every other problem is an ``InputFileError`` with the line and
    a fix, never a skipped row: this file is a finished dataset, so a bad row means a
    broken export (an unquoted comma in a text shifts the fields, a stray quote swallows
    the rows after it), and dropping it would hide that. The errors: bytes that are not
    ``encoding`` (``read_text_file``: CP949 and UTF-16 are recognised, with the ``iconv``
    line), a missing column (the columns found are listed), a row with a different number
    of fields than the header, a row without one of its two texts, an unclosed quote.
    """
    # subtle: imported here, not at the top: rolecall.retrieval loads the slang index code
    from rolecall.textfiles import csv_rows, read_text_file

    path = Path(path)
    fix = "the K/DA format is a CSV with the header neutral,implicit"
    text = read_text_file(path, encoding)
    rows = csv_rows(path, text, ",")
    start, header = next(((n, f) for n, f in rows if any(x.strip() for x in f)), (1, None))
    if header is None:
        raise InputFileError(path, "is empty: no header row", fix=fix)
    names = [name.strip() for name in header]
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise InputFileError(
            path,
            f"has no column {' or '.join(map(repr, missing))}; its columns are: {', '.join(names)}",
            fix=fix,
            line=start,
        )
    neutral_at, implicit_at = names.index("neutral"), names.index("implicit")
    pairs = []
    for line, fields in rows:
        if not any(field.strip() for field in fields):
            continue
        if len(fields) != len(names):
            raise InputFileError(
                path,
                f"broken row: {len(fields)} fields, expected {len(names)}",
                line=line,
                fix="quote a text that holds "
                'a comma ("a, b"), and write a quote inside it twice ("")',
            )
        # restore: the web app's export quotes a cell a spreadsheet would run as a formula
        neutral, implicit = (restore(fields[at]).strip() for at in (neutral_at, implicit_at))
        if not neutral or not implicit:
            raise InputFileError(
                path,
                "a row needs both neutral and implicit text",
                line=line,
                fix="fill in the missing text, or delete the row",
            )
        pairs.append(
            Pair(neutral=neutral, toxic=implicit, provenance={"source": path.name, "line": line})
        )
    if not pairs:
        raise InputFileError(path, "has no pairs, only a header", fix="add rows under it")
    return pairs


def write_kda_csv(path: str | Path, pairs: Iterable[Pair]) -> int:
    path = Path(path)
    count = 0
    with atomic_open(path, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for pair in pairs:
            writer.writerow((pair.neutral, pair.toxic))
            count += 1
    return count


def _retention_table(report: dict) -> list[str]:
    lines = ["| filter | n | in | kept | unparsed | retention |", "|---|---|---|---|---|---|"]
    for stage in report.get("filters", []):
        for n, row in stage["by_n"].items():
            lines.append(
                f"| {stage['filter']} | {n} | {row['in']} | {row['kept']} | "
                f"{row['unparsed']} | {row['retention']} |"
            )
        lines.append(
            f"| **{stage['filter']}** | all | {stage['in']} | {stage['kept']} | "
            f"{stage['unparsed']} | {stage['retention']} |"
        )
    return lines


def _judge_lines(manifest: dict) -> list[str]:
    """Who filtered: the default judges chosen for the run (kind, judge, why) and the
    warnings a reader of the data should see (an embedded LLM judging near random)."""
    lines = []
    for task, entry in manifest.get("judge_defaults", {}).items():
        lines.append(
            f"- {task} judge: {entry.get('kind')} `{entry.get('judge')}` ({entry.get('reason')})"
        )
    lines += [f"- warning: {w}" for w in manifest.get("warnings", [])]
    return [*lines, ""] if lines else []


def write_data_card(
    path: str | Path,
    *,
    name: str,
    pairs: int,
    report: dict,
    manifest: dict,
    licence: str,
    sources: list[str],
) -> None:
    overall = report.get("overall", {})
    lines = [
        f"# {name}",
        "",
        WARNING,
        "",
        "Neutral -> implicitly offensive Korean sentence pairs made with rolecall's "
        "K/DA pipeline (Jeon et al., ACL 2025): slang retrieval, LLM rewriting, then "
        "two filters (pair consistency, implicit offensiveness) by the judges below.",
        "",
        *_judge_lines(manifest),
        f"- pairs: {pairs}",
        f"- candidates: {overall.get('in')}",
        f"- overall retention: {overall.get('retention')}",
        f"- licence: {licence}",
        f"- sources: {', '.join(sources) or '-'}",
        "",
        "## Retention",
        "",
        *_retention_table(report),
        "",
        "## Models and prompts",
        "",
        "```json",
        json.dumps(
            {"models": manifest.get("models", {}), "prompts": manifest.get("prompts", {})},
            ensure_ascii=False,
            indent=2,
        ),
        "```",
        "",
    ]
    Path(path).write_text("\n".join(lines), encoding="utf-8")
