"""The report of a red-team run (``pipelines/redteam/run.py``): ``report.json``,
``report.md`` and ``report.html`` (a chart, ``html.py``), rewritten whole from
``conversations.jsonl`` at the end of every run.

Per attack kind, over its conversations (``n``):

- ``not_safe``: conversations with at least one bot reply judged out of bounds in the
  safety category (``not safe``), from the attack on;
- ``out_of_role``: conversations with at least one reply judged out of bounds in any
  category (not safe included);
- each with its 95% Wilson interval (``eval/intervals.py``);
- ``fallback_share``: the share of judged replies that took the bot's ``fallback`` path;
- ``repeat_share``: conversations where a reply repeated a content morpheme of the attack;
- ``paths``: the judged replies per path, and the path of every flagged reply.

``bot_versions``: the conversations held per bot version (``serve/version.py``).

``worst``: the conversations with the most flagged replies (not safe first, then out of
role, then repeats), with the attack and the first flagged or repeating reply.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rolecall.atomic import write_text_atomic
from rolecall.eval.intervals import rate_record
from rolecall.judge.out_of_bounds import OUT_OF_BOUNDS
from rolecall.pipelines.judges import describe
from rolecall.pipelines.redteam.html import percent, report_page, share
from rolecall.records import RedteamConversation, RedteamTurn, tally
from rolecall.rundir import Files, write_json

REPORT_JSON, REPORT_MD, REPORT_HTML = Files.REPORT_JSON, "report.md", "report.html"
WORST = 10


def _judged(record: RedteamConversation) -> list[RedteamTurn]:
    return [t for t in record.turns if t.verdict is not None]


def _flagged(turns: Sequence[RedteamTurn]) -> list[RedteamTurn]:
    return [t for t in turns if t.verdict.label == OUT_OF_BOUNDS]


def summarize_kind(records: Sequence[RedteamConversation]) -> dict[str, Any]:
    """The numbers of one attack kind's conversations."""
    counts = tally([r.outcome for r in records])
    n = counts["n"]
    replies = [t for r in records for t in _judged(r)]
    flagged = _flagged(replies)
    return {
        "n": n,
        "not_safe": rate_record(counts["not_safe"], n),
        "out_of_role": rate_record(counts["out_of_role"], n),
        "replies": len(replies),
        "unjudged_replies": sum(t.verdict.parse_status != "parsed" for t in replies),
        "fallback_share": round(sum(t.path == "fallback" for t in replies) / len(replies), 4)
        if replies
        else None,
        "repeat_share": round(counts["repeated"] / n, 4) if n else None,
        "paths": dict(Counter(t.path for t in replies)),
        "flagged_paths": dict(Counter(t.path for t in flagged)),
        "categories": dict(Counter(t.verdict.category for t in flagged)),
    }


def _badness(record: RedteamConversation) -> tuple[int, int, int]:
    judged = _judged(record)
    flagged = _flagged(judged)
    return (
        int(record.outcome.not_safe) * len(flagged),
        len(flagged),
        sum(bool(t.repeated) for t in judged),
    )


def worst_cases(records: Sequence[RedteamConversation], limit: int = WORST) -> list[dict[str, Any]]:
    """The worst conversations (see the module docstring), each shown by its first
    flagged or repeating reply."""
    bad = [r for r in records if any(_badness(r))]
    bad.sort(key=lambda r: (*(-x for x in _badness(r)), r.kind, r.seed))
    out = []
    for record in bad[:limit]:
        judged = _judged(record)
        shown = next(
            (t for t in judged if t.verdict.label == OUT_OF_BOUNDS or t.repeated), judged[0]
        )
        out.append(
            {
                "id": record.id,
                "kind": record.kind,
                "seed": record.seed,
                "attack": record.attack.get("text"),
                "reply": shown.text,
                "path": shown.path,
                "verdict": shown.verdict.model_dump(mode="json"),
                "repeated": shown.repeated,
                "outcome": record.outcome.model_dump(mode="json"),
            }
        )
    return out


def build_report(records: Sequence[RedteamConversation], settings, panel) -> dict[str, Any]:
    kinds = {kind: [r for r in records if r.kind == kind] for kind in settings.attacks}
    return {
        "settings": settings.model_dump(mode="json"),
        "judges": [describe(member) for member in panel],
        "conversations": len(records),
        # more than one when the bot directory changed between resumed runs
        "bot_versions": dict(Counter(r.bot_version or "unknown" for r in records)),
        "kinds": {kind: summarize_kind(rs) for kind, rs in kinds.items()},
        "worst": worst_cases(records),
    }


def markdown(report: dict[str, Any]) -> str:
    """``report.md``: the table per attack kind, then the worst cases."""
    settings = report["settings"]
    judges = ", ".join(j["model"] for j in report["judges"])
    lines = [
        "# Red-team report",
        "",
        f"Bot `{settings['bot']}` (version {', '.join(f'`{v}`' for v in report['bot_versions'])}); "
        f"{report['conversations']} conversations of "
        f"{settings['turns']} user turns, the attack at turn {settings['attack_turn']}; "
        f"judges: {judges}. Rates are per conversation, with 95% Wilson intervals "
        "(the count in parentheses).",
        "",
        "| attack | n | not safe | out of role | fallback (replies) | repeats offence |",
        "|---|---|---|---|---|---|",
    ]
    for kind, row in report["kinds"].items():
        lines.append(
            f"| {kind} | {row['n']} | {percent(row['not_safe'])} | "
            f"{percent(row['out_of_role'])} | {share(row['fallback_share'])} | "
            f"{share(row['repeat_share'])} |"
        )
    lines += ["", "## Worst cases", ""]
    if not report["worst"]:
        lines.append("No reply was flagged or repeated an attack.")
    for case in report["worst"]:
        verdict = case["verdict"]
        why = verdict["category"] or verdict["label"]
        if verdict.get("rule"):
            why += f", rule {verdict['rule']}"
        lines += [
            f"- **{case['id']}** ({case['path']}; {why}"
            + (f"; repeats {', '.join(case['repeated'])}" if case["repeated"] else "")
            + ")",
            f"  - user: {_quoted(case['attack'])}",
            f"  - bot: {_quoted(case['reply'])}",
        ]
    return "\n".join(lines) + "\n"


def _quoted(text: str | None) -> str:
    return "`" + (text or "").replace("`", "'") + "`"


def write_report(path: Path, records, settings, panel) -> dict[str, Any]:
    """Write ``report.json``, ``report.md`` and ``report.html`` into ``path``; return
    the report."""
    report = build_report(records, settings, panel)
    write_json(path / REPORT_JSON, report)
    write_text_atomic(path / REPORT_MD, markdown(report))
    write_text_atomic(path / REPORT_HTML, report_page(report))
    return report
