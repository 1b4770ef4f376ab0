"""``rolecall bot check``: the safety suite (``eval/safety_suite.py``) put to one bot, its
replies scored, and a report.

Into ``OUT`` (resumable: a killed run asks again only the items it has no reply to):

- ``replies.jsonl``: per item, the bot's reply and how it was made (its provenance, for a
  rolecall bot: the path, the user-turn check that fired, the scores);
- ``check.jsonl``: per item, the reply with ``passed`` and ``why``;
- ``summary.json``: pass rates per category with 95% intervals, and, where the bot tells
  its path, how many small-talk turns it answered with a fallback or a check's reply and
  how many with a crisis reply (false alarms);
- ``check.md`` and ``check.html``: the table and every failed item, to read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rolecall.errors import InputFileError
from rolecall.eval.safety_suite import SuiteItem, load_suite, pass_rates, score_replies
from rolecall.jsonl import ResumableJsonl, write_jsonl
from rolecall.records import RoleSpec
from rolecall.rundir import write_json
from rolecall.serve.version import one_bot_version

CONTROL = "small_talk"  # the category that must be answered as usual
WARNING = (
    "This report quotes user turns about suicide, abuse and insults, written for testing "
    "(이 보고서에는 시험용으로 쓴 자살, 학대, 욕설 문장이 들어 있습니다)."
)


def run_bot_check(
    bot: Any,
    spec: RoleSpec,
    out: Path,
    suite: Path | None = None,
    progress: bool = True,
    say: Callable[[str], None] = print,
    replace_stale: bool = False,
    judges: Sequence[Any] = (),
) -> dict[str, Any]:
    """Ask ``bot`` (a ``ChatBot``) every item of ``suite``, score the replies against
    ``spec``'s help lines and rules, write the files above; returns the summary.
    ``replace_stale``: replies of another bot version in ``out`` are dropped (the demo,
    whose bot was trained again), not an error. ``judges``: trained out-of-bounds judges an
    in-role reply must pass too (``eval/safety_suite.score_replies``)."""
    from rolecall.progress import progress_bar

    items = load_suite(suite)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputFileError(
            out, f"cannot be made ({exc.strerror})", fix="give --out a directory you can write"
        ) from None
    version = getattr(bot, "version", None)
    one_bot_version(
        out / "replies.jsonl",
        "bot",
        version,
        f"give a new --out, or delete {out / 'replies.jsonl'} to check this bot there",
        replace_stale,
        say,
    )
    with ResumableJsonl(out / "replies.jsonl", key=lambda r: r["id"]) as replies:
        todo = [item for item in items if item.id not in replies.done]
        if len(todo) < len(items):
            say(f"resuming: {len(items) - len(todo)} of {len(items)} replies already in {out}")
        with progress_bar(len(items), "bot check", progress, start=len(items) - len(todo)) as bar:
            for item in todo:
                reply = bot.reply(item.history())
                record = {"id": item.id, "bot": version, "reply": reply.text}
                replies.append({**record, **reply.provenance()})
                bar(1)
        by_id = {r["id"]: r for r in replies.records}
    answered = [by_id[item.id] for item in items]
    scored = score_replies(items, [r["reply"] for r in answered], spec, judges)
    rows = [
        {**item.model_dump(mode="json"), **s, "reply": r["reply"], "path": r.get("path")}
        for item, s, r in zip(items, scored, answered)
    ]
    write_jsonl(out / "check.jsonl", rows)
    summary = {
        "bot": getattr(bot, "version", None),
        "suite": str(suite or "the shipped suite"),
        "judges": ["rules:carecall"] + [judge.model for judge in judges],
        "items": len(items),
        "rates": pass_rates(items, scored),
        "control": control_paths(items, answered),
        "by_check": fired_checks(answered),
    }
    write_json(out / "summary.json", summary)
    (out / "check.md").write_text(markdown(summary, rows), encoding="utf-8")
    (out / "check.html").write_text(html(summary, rows), encoding="utf-8")
    return summary


def control_paths(items: Sequence[SuiteItem], answered: Sequence[dict]) -> dict[str, Any]:
    """On the small-talk control: the share of replies that were a fallback, a check's
    reply, a crisis reply (None when the bot does not tell its path)."""
    control = [r for item, r in zip(items, answered) if item.category == CONTROL]
    if not control or all(r.get("path") is None for r in control):
        return {"n": len(control)}

    def share(test: Callable[[dict], bool]) -> float:
        return round(sum(map(test, control)) / len(control), 4)

    return {
        "n": len(control),
        "fallback_share": share(lambda r: r.get("path") == "fallback"),
        "checked_share": share(lambda r: r.get("path") == "checked"),
        "crisis_share": share(lambda r: _check(r).get("kind") == "crisis"),
    }


def fired_checks(answered: Sequence[dict]) -> dict[str, int]:
    """How often each user-turn check answered."""
    counts: dict[str, int] = {}
    for r in answered:
        name = _check(r).get("check")
        if name:
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def _check(reply: dict) -> dict:
    return next((s for s in reply.get("stages") or [] if s.get("stage") == "user_check"), {})


def rate_table(rates: dict[str, dict]) -> list[tuple[str, str, str, str]]:
    """(category, passed/n, rate, 95% interval) rows, ``all`` last."""
    names = [n for n in rates if n != "all"] + ["all"]
    rows = []
    for name in names:
        r = rates[name]
        low, high = r["ci95"] or (None, None)
        interval = f"{low:.2f}-{high:.2f}" if low is not None else "-"
        rows.append((name, f"{r['k']}/{r['n']}", f"{r['rate']:.2f}", interval))
    return rows


def markdown(summary: dict, rows: Sequence[dict]) -> str:
    lines = [
        "# Safety suite check",
        "",
        f"> {WARNING}",
        "",
        f"Bot: `{summary['bot']}`; {summary['items']} items.",
        "",
        "| category | passed | rate | 95% interval |",
        "|---|---|---|---|",
    ]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rate_table(summary["rates"])]
    control = summary["control"]
    if "fallback_share" in control:
        lines += [
            "",
            f"Small talk ({control['n']} turns): fallback {control['fallback_share']:.2f}, "
            f"a check's reply {control['checked_share']:.2f}, "
            f"a crisis reply {control['crisis_share']:.2f}.",
        ]
    lines += ["", "## Failed items", ""]
    for row in rows:
        if not row["passed"]:
            lines.append(
                f"- `{row['id']}` ({row['expect']}): user: {_one_line(row['turn'])} / "
                f"bot: {_one_line(row['reply'])} — {row['why']}"
            )
    return "\n".join(lines) + "\n"


def html(summary: dict, rows: Sequence[dict]) -> str:
    """The report as one self-contained page (``redteam/html.py``: every value escaped)."""
    from html import escape

    from rolecall.pipelines.redteam.html import page, table

    failed = [
        (r["id"], r["expect"], r["turn"], r["reply"], r["why"]) for r in rows if not r["passed"]
    ]
    headers = ["category", "passed", "rate", "95% interval"]
    body = (
        f"<p>{escape(WARNING)}</p>"
        f"<p>Bot: <code>{escape(str(summary['bot']))}</code>; {summary['items']} items.</p>"
        + table(headers, rate_table(summary["rates"]), numeric=headers[1:])
        + "<h2>Failed items</h2>"
        + table(["id", "expected", "user", "bot", "why"], failed)
    )
    return page("Safety suite check", body)


def _one_line(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1][:160]
