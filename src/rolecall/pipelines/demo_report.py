"""The demo's report: ``runs/demo/report.html``, one page a person can open after ``make
demo`` (issue #48 item 11), written from the run's own files (``summary.json``,
``stats.json``, ``chat.jsonl``), never from numbers kept elsewhere. Its tables are the
red-team report's (``redteam/html.table``), the safety rows ``bot check``'s, each chat
reply's line what ``rolecall chat`` prints under it (``Reply.describe``).

Sections: what ran and on which model; the role spec; the generated and judged dialogues;
the paper's Table 2; the bot (its examples, every guard candidate's held-out numbers, the
retriever and reranker, the unanswerable check, the user checks out of fold); the scripted
chat with each reply's path and the score that decided it; the safety check per category
with 95% intervals; the K/DA sample's retention. No script, no external resource: the page
opens from the disk and travels with the run directory.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

REPORT = "report.html"
STYLE = (
    "body{font-family:system-ui,'Noto Sans KR','NanumGothic',sans-serif;max-width:60rem;"
    "margin:2rem auto;padding:0 1rem;line-height:1.5;word-break:keep-all}"
    "table{border-collapse:collapse;margin:.5rem 0 1rem}td,th{border:1px solid #ccc;"
    "padding:.2rem .5rem;text-align:left;vertical-align:top}th{background:#f3f3f3}"
    "pre{background:#f7f7f7;padding:.5rem;overflow-x:auto}.note{color:#555}"
)


def _e(value: Any) -> str:
    return html.escape(str(value))


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return "–" if value is None else str(value)


def _table(header: list[str], rows: list[list[Any]]) -> str:
    from rolecall.pipelines.redteam.html import table

    return table(header, [[_number(c) for c in row] for row in rows])


def _section(title: str, body: str) -> str:
    return f"<h2>{_e(title)}</h2>{body}"


def _data(summary: dict) -> str:
    data = summary.get("data", {})
    generate, judged = data.get("generate", {}), data.get("judged", {})
    rows = [[k, v] for k, v in {**generate, **judged}.items()]
    judge = ", ".join(f"{k}: {v}" for k, v in data.get("judge", {}).items())
    return f"<p>Judge: {_e(judge)}</p>" + _table(["count", "value"], rows)


def _table2(out: Path) -> str:
    from rich.console import Console

    from rolecall.eval.stats import format_stats_table

    path = out / "stats.json"
    if not path.is_file():
        return "<p>No stats.json.</p>"
    console = Console(record=True, width=100)
    with console.capture():
        console.print(format_stats_table(json.loads(path.read_text(encoding="utf-8"))))
    return f"<pre>{_e(console.export_text())}</pre>"


def _bot(models: dict) -> str:
    parts = []
    examples = models.get("examples", {})
    sources = examples.get("sources", {})
    parts.append(
        _table(
            ["source", "read", "duplicates", "training", "held out", "negatives"],
            [
                [
                    name,
                    s.get("read"),
                    s.get("duplicates"),
                    s.get("train"),
                    s.get("held_out"),
                    s.get("negatives"),
                ]
                for name, s in sources.items()
            ],
        )  # fmt: skip
    )
    guard = models.get("guard", {})
    if guard:
        parts.append(f"<p>Guard: <b>{_e(guard.get('chosen'))}</b>, chosen on held-out data.</p>")
        parts.append(
            _table(
                ["candidate", "ROC AUC", "threshold", "precision", "recall", "F1", "held out"],
                [
                    [
                        name,
                        c.get("roc_auc"),
                        c.get("threshold"),
                        c.get("precision"),
                        c.get("recall"),
                        c.get("f1"),
                        c.get("test_examples"),
                    ]
                    for name, c in guard.get("candidates", {}).items()
                ],
            )  # fmt: skip
        )
    retriever, reranker = models.get("retriever", {}), models.get("reranker", {})
    parts.append(
        _table(
            ["part", "numbers"],
            [
                ["retriever", ", ".join(f"{k} {_number(v)}" for k, v in retriever.items())],
                ["reranker", ", ".join(f"{k} {_number(v)}" for k, v in reranker.items())],
            ],
        )
    )
    unanswerable = models.get("unanswerable", {})
    if unanswerable:
        by_method = unanswerable.get("roc_auc_by_method", {})
        parts.append(
            "<p>Unanswerable contexts, ROC AUC by method: "
            + _e(", ".join(f"{k} {_number(v)}" for k, v in by_method.items()))
            + f". {_e(models.get('bot', {}).get('fallback', ''))}</p>"
        )
    checks = models.get("checks", {}).get("out_of_fold", {})
    if checks:
        parts.append("<p>User-turn checks, out of fold on their training turns:</p>")
        parts.append(
            _table(
                ["check", "threshold", "precision", "recall", "false alarms", "turns"],
                [
                    [
                        name,
                        c.get("threshold"),
                        c.get("precision"),
                        c.get("recall"),
                        c.get("false_alarms"),
                        c.get("turns"),
                    ]
                    for name, c in checks.items()
                ],
            )  # fmt: skip
        )
    return "".join(parts)


def _chat(out: Path) -> str:
    from rolecall.jsonl import read_jsonl
    from rolecall.serve.reply import Reply

    path = out / "chat.jsonl"
    turns = list(read_jsonl(path)) if path.is_file() else []
    rows = [
        [t["user"], t["text"], Reply(t["text"], t["path"], t["stages"], t["latency_ms"]).describe()]
        for t in turns
    ]
    return _table(["user", "bot", "decided by"], rows)


def _check(summary: dict) -> str:
    from rolecall.pipelines.bot_check import rate_table

    check = summary.get("check", {})
    rows = rate_table(check["rates"]) if check.get("rates") else []
    control = check.get("control", {})
    said = ", ".join(f"{k} {_number(v)}" for k, v in control.items())
    return _table(["category", "passed", "rate", "95% interval"], rows) + (
        f"<p>Small talk: {_e(said)}. Every failed item: check/check.html.</p>"
    )


def _kda(summary: dict) -> str:
    kda = summary.get("kda", {})
    filters = kda.get("filters", [])
    rows = [[f.get("filter"), f.get("in"), f.get("kept")] for f in filters]
    judge = ", ".join(f"{k}: {v}" for k, v in kda.get("judge", {}).items())
    candidates = kda.get("candidates", {})
    made = ", ".join(f"{k} {v}" for k, v in candidates.items())
    empty = kda.get("empty_because")
    said = f"<p>No pair kept: {_e(empty)}</p>" if empty else ""
    return (
        f"<p>Candidates: {_e(made)}. Judges: {_e(judge)}.</p>"
        + _table(["filter", "in", "kept"], rows)
        + said
    )


def write_report(out: Path) -> Path:
    """``out/report.html`` from the run's files; returns its path."""
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    seconds = summary.get("seconds", {})
    spec = summary.get("spec", {})
    body = [
        "<h1>rolecall demo</h1>",
        f"<p>Model: {_e(summary.get('model'))}; {_e(seconds.get('total'))} s in all "
        f"({_e(', '.join(f'{k} {v} s' for k, v in seconds.items() if k != 'total'))}).</p>",
        '<p class="note">The embedded 270M model shows the pipeline, not the quality: for '
        "real data give any command a real model (docs/models-and-servers.md).</p>",
        _section(
            "Role spec",
            f"<p>{_e(spec.get('path'))}: categories {_e(', '.join(spec.get('categories', [])))}"
            "</p>",
        ),
        _section("Generated and judged dialogues", _data(summary)),
        _section("Table 2: generated vs example dialogues", _table2(out)),
        _section("The bot (rolecall bot run)", _bot(summary.get("models", {}))),
        _section("The scripted chat", _chat(out)),
        _section("The safety check (rolecall bot check)", _check(summary)),
        _section("K/DA on a small sample", _kda(summary)),
    ]
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>rolecall demo report</title><style>{STYLE}</style></head><body>"
        + "".join(body)
        + "</body></html>\n"
    )
    path = out / REPORT
    path.write_text(page, encoding="utf-8")
    return path
