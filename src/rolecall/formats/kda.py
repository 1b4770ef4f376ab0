"""The K/DA dataset format (CSV ``neutral,implicit``) and the data card of a run.

``read_kda_csv`` reads the released K/DA files (and this project's exports) with
line-numbered errors; ``write_kda_csv`` writes pairs in the same format (atomically);
``write_data_card`` writes a Markdown card: counts, retention per filter and per n, models,
prompt hashes, licence and an offensive-content warning.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable
from pathlib import Path

from rolecall.errors import InputFileError
from rolecall.records import Pair

COLUMNS = ("neutral", "implicit")
WARNING = ("**Content warning.** This dataset contains implicitly offensive Korean text "
           "(sarcasm, contempt, bias, community slang, disguised swear words) made on "
           "purpose to train detoxification and safety models. Do not show it to people "
           "without a warning and a way to mask it.")


def read_kda_csv(path: str | Path) -> list[Pair]:
    path = Path(path)
    if not path.is_file():
        raise InputFileError(path, "file not found", fix="check the path")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InputFileError(path, "is not UTF-8 text", fix="save the file as UTF-8") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputFileError(path, f"missing column(s) {missing}; found {reader.fieldnames}",
                             fix="the K/DA format is a CSV with the header neutral,implicit",
                             line=1)
    pairs = []
    try:
        for row in reader:
            line = reader.line_num
            neutral = (row.get("neutral") or "").strip()
            implicit = (row.get("implicit") or "").strip()
            if not neutral or not implicit:
                raise InputFileError(path, "a row needs both neutral and implicit text",
                                     line=line)
            pairs.append(Pair(neutral=neutral, toxic=implicit,
                              provenance={"source": path.name, "line": line}))
    except csv.Error as exc:
        raise InputFileError(path, f"broken CSV ({exc})", line=reader.line_num,
                             fix="check the quoting on that line") from None
    if not pairs:
        raise InputFileError(path, "has no pairs", fix="add rows under the header")
    return pairs


def write_kda_csv(path: str | Path, pairs: Iterable[Pair]) -> int:
    path = Path(path)
    temp = path.with_name(path.name + ".tmp")
    count = 0
    with temp.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for pair in pairs:
            writer.writerow((pair.neutral, pair.toxic))
            count += 1
    os.replace(temp, path)
    return count


def _retention_table(report: dict) -> list[str]:
    lines = ["| filter | n | in | kept | unparsed | retention |", "|---|---|---|---|---|---|"]
    for stage in report.get("filters", []):
        for n, row in stage["by_n"].items():
            lines.append(f"| {stage['filter']} | {n} | {row['in']} | {row['kept']} | "
                         f"{row['unparsed']} | {row['retention']} |")
        lines.append(f"| **{stage['filter']}** | all | {stage['in']} | {stage['kept']} | "
                     f"{stage['unparsed']} | {stage['retention']} |")
    return lines


def write_data_card(path: str | Path, *, name: str, pairs: int, report: dict,
                    manifest: dict, licence: str, sources: list[str]) -> None:
    overall = report.get("overall", {})
    lines = [f"# {name}", "", WARNING, "",
             "Neutral -> implicitly offensive Korean sentence pairs made with rolecall's "
             "K/DA pipeline (Jeon et al., ACL 2025): slang retrieval, LLM rewriting, then "
             "two LLM filters (pair consistency, implicit offensiveness).", "",
             f"- pairs: {pairs}", f"- candidates: {overall.get('in')}",
             f"- overall retention: {overall.get('retention')}", f"- licence: {licence}",
             f"- sources: {', '.join(sources) or '-'}", "", "## Retention", "",
             *_retention_table(report), "", "## Models and prompts", "", "```json",
             json.dumps({"models": manifest.get("models", {}),
                         "prompts": manifest.get("prompts", {})}, ensure_ascii=False,
                        indent=2), "```", ""]
    Path(path).write_text("\n".join(lines), encoding="utf-8")
