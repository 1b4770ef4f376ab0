"""Comparing red-team runs of bot versions (``rolecall redteam-compare``, issue #19):
``compare.json``, ``compare.md`` and ``compare.html`` from each run's ``report.json``.

Per attack kind and per run (a bot version: the run's ``bot_versions`` label, and its
directory), the not-safe and out-of-role rates with their 95% Wilson intervals, and the
difference of each rate from the first run's with Newcombe's 95% interval for a
difference of two independent proportions (``eval/intervals.py``). An interval that
holds 0 says the runs do not tell the versions apart at that size.

Why a warning and not a refusal when the runs' settings differ in anything but the bot
(seeds, attacks, turns, judges, users, spec): the rates are still rates, but then the
versions met different users or were judged differently, so a difference is no longer
the bot's alone. With the same settings, conversation ``i`` of both runs has the same
seed, topic and attack (``pipelines/redteam/run.py``); the interval still treats the runs as
independent samples, which errs wide when the paired outcomes agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rolecall.atomic import write_text_atomic
from rolecall.errors import ConfigError, InputFileError
from rolecall.eval.intervals import difference_record
from rolecall.jsonl import read_json_object
from rolecall.pipelines.redteam.html import compare_page, percent, signed
from rolecall.pipelines.redteam.report import REPORT_JSON
from rolecall.rundir import write_json

COMPARE_JSON, COMPARE_MD, COMPARE_HTML = "compare.json", "compare.md", "compare.html"
RATES = ("not_safe", "out_of_role")
# the bot's own settings: they differ between versions by design
BOT_SETTINGS = {"bot", "bot_temperature", "bot_max_tokens"}
_FIX = "give the --out directory of a finished `rolecall redteam` run (it writes report.json)"


def read_report(run_dir: Path) -> dict[str, Any]:
    """The ``report.json`` of a red-team run directory (or the file itself)."""
    path = run_dir if run_dir.suffix == ".json" else run_dir / REPORT_JSON
    if not path.is_file():
        where = "no such directory" if not run_dir.exists() else "no report.json there"
        raise InputFileError(
            path,
            f"file not found ({where})",
            fix=_FIX + "; a killed run writes it when rerun with the same command",
        )
    report = read_json_object(path, _FIX)
    kinds = report.get("kinds")
    if (
        not isinstance(kinds, dict)
        or "settings" not in report
        or not all(isinstance(row, dict) and {"n", *RATES} <= set(row) for row in kinds.values())
    ):
        raise InputFileError(
            path,
            "not a red-team report (it needs 'settings' and 'kinds' with n, not_safe and "
            "out_of_role per attack kind)",
            fix=_FIX,
        )
    return report


def version_label(report: dict[str, Any]) -> str:
    """The run's bot version label(s); the bot setting for a report from before
    ``bot_versions`` was recorded."""
    versions = [v for v in report.get("bot_versions") or {} if v != "unknown"]
    return ", ".join(versions) or report["settings"]["bot"]


def setting_differences(reports: Sequence[dict[str, Any]]) -> list[str]:
    """One line per setting (other than the bot's own) where a run differs from the
    first, and one per run that holds more than one bot version."""
    first = reports[0]["settings"]
    lines = []
    for number, report in enumerate(reports[1:], start=2):
        settings = report["settings"]
        for key in sorted((set(first) | set(settings)) - BOT_SETTINGS):
            if first.get(key) != settings.get(key):
                lines.append(
                    f"run {number} differs from run 1 in {key}: "
                    f"{settings.get(key)!r} instead of {first.get(key)!r}"
                )
    for number, report in enumerate(reports, start=1):
        if len(report.get("bot_versions") or {}) > 1:
            lines.append(
                f"run {number} holds conversations of {len(report['bot_versions'])} bot "
                "versions (its bot changed between resumed runs); its rates mix them"
            )
    return lines


def _difference(row: dict[str, Any], base: dict[str, Any] | None, rate: str):
    """``row``'s rate minus ``base``'s, with Newcombe's 95% interval; None for the
    first run itself or without counts."""
    if base is None or row is base or not row["n"] or not base["n"]:
        return None
    return difference_record(row[rate]["k"], row["n"], base[rate]["k"], base["n"])


def compare(run_dirs: Sequence[Path], reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The comparison of ``reports`` (read from ``run_dirs``), the first as the base."""
    if len(reports) < 2:
        raise ConfigError(
            "a comparison needs two or more red-team runs",
            fix="give the run directories of two bot versions: "
            "rolecall redteam-compare RUN_A RUN_B --out DIR",
        )
    warnings = setting_differences(reports)
    kinds: dict[str, list[dict[str, Any]]] = {}
    for kind in dict.fromkeys(k for report in reports for k in report["kinds"]):
        base = reports[0]["kinds"].get(kind)
        kinds[kind] = [
            {
                "run": number,
                "label": version_label(report),
                "n": row["n"],
                **{rate: row[rate] for rate in RATES},
                **{f"{rate}_vs_first": _difference(row, base, rate) for rate in RATES},
            }
            for number, report in enumerate(reports, start=1)
            if (row := report["kinds"].get(kind)) is not None
        ]
    return {
        "runs": [
            {
                "run": number,
                "dir": str(run_dir),
                "label": version_label(report),
                "bot": report["settings"]["bot"],
                "bot_versions": report.get("bot_versions") or {},
                "conversations": report.get("conversations"),
            }
            for number, (run_dir, report) in enumerate(zip(run_dirs, reports), start=1)
        ],
        "paired": not warnings,
        "warnings": warnings,
        "kinds": kinds,
    }


def markdown(comparison: dict[str, Any]) -> str:
    """``compare.md``: the runs, any warning, and one table row per kind and run."""
    lines = ["# Red-team comparison of bot versions", ""]
    for warning in comparison["warnings"]:
        lines.append(f"> **Not paired:** {warning}.")
    if comparison["warnings"]:
        lines.append("")
    lines += ["| run | bot version | directory | conversations |", "|---|---|---|---|"]
    for run in comparison["runs"]:
        lines.append(
            f"| {run['run']} | `{run['label']}` | `{run['dir']}` | {run['conversations']} |"
        )
    lines += [
        "",
        "Rates per conversation with 95% Wilson intervals (the count in parentheses); the "
        "difference from run 1 in percentage points with Newcombe's 95% interval.",
        "",
        "| attack | run | n | not safe | out of role | not safe vs run 1 | out of role vs run 1 |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, rows in comparison["kinds"].items():
        for row in rows:
            lines.append(
                f"| {kind} | {row['run']} | {row['n']} | {percent(row['not_safe'])} | "
                f"{percent(row['out_of_role'])} | {signed(row['not_safe_vs_first'])} | "
                f"{signed(row['out_of_role_vs_first'])} |"
            )
    return "\n".join(lines) + "\n"


def write_comparison(out: Path, run_dirs: Sequence[Path]) -> dict[str, Any]:
    """Read every run's report, write ``compare.json``, ``.md`` and ``.html`` into
    ``out``; return the comparison."""
    reports = [read_report(Path(run_dir)) for run_dir in run_dirs]
    comparison = compare(run_dirs, reports)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / COMPARE_JSON, comparison)
    write_text_atomic(out / COMPARE_MD, markdown(comparison))
    write_text_atomic(out / COMPARE_HTML, compare_page(comparison))
    return comparison
