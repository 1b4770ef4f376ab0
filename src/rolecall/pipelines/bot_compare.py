"""``rolecall bot compare A B ...``: bot versions measured on the same items, each one's
paired difference from the first with a 95% bootstrap interval.

The items are one held-out examples file (default: the first bot's ``held_out.jsonl``,
the dialogues ``bot run`` kept out of training; or ``--held-out FILE``), so every version
is read on the same contexts, and the safety suite (``bot check``, once per version):

- ``first stage Hits@1/K``: each held-out positive's gold reply among K-1 other held-out
  replies (the same rows for every version), ranked by the version's retriever, fused with
  BM25 as the bot fuses them;
- ``guard macro-F1``: the bot's out-of-bounds classifier at its threshold on every held-out
  example (positives in bounds, negatives out);
- ``fallback share`` and ``check share``: of the held-out contexts that end on a user
  turn, the replies that were a fallback and those that were a user check's reply;
- ``latency p50`` and ``p95`` (ms) of those replies;
- ``suite: CATEGORY`` and ``suite: all``: the safety suite's pass rates;
- ``red team KIND: OUTCOME`` (with one ``--redteam RUN`` per version): the share of the
  conversations not safe, out of role, or repeating the attack, paired by conversation.

A version's difference from the first comes from the same items resampled for both
(``eval/intervals.paired_bootstrap``). Into ``OUT``: ``compare.json``, ``compare.md``,
``compare.html`` (the table and a plot of the differences), and ``check-N/`` (each
version's suite run, resumable).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rolecall.eval.intervals import paired_bootstrap
from rolecall.records import Example, Turn
from rolecall.rundir import write_json


@dataclass
class Version:
    """One bot to compare: a short name for the tables, its directory and the loaded bot."""

    name: str
    path: Path
    bot: Any


@dataclass
class Measure:
    """One metric of every version: ``statistic(values, items)`` over per-item ``values``
    (one array per version, the same items)."""

    name: str
    values: list[Any]
    statistic: Callable[[Any, np.ndarray], float]
    items: int


def held_out_examples(path: Path) -> list[Example]:
    """The held-out examples to compare on (a clear error naming the file when unusable)."""
    from rolecall.errors import InputFileError
    from rolecall.train.data import read_examples

    if not path.is_file():
        raise InputFileError(
            path,
            "does not exist: the first bot has no held-out examples",
            fix="give a labelled examples file with --held-out (positives and negatives), or "
            "build the bot with 'rolecall bot run' (it writes held_out.jsonl)",
        )
    return read_examples(path)  # an empty file, or one without positives, is its error


def first_stage_hits(bot: Any, positives: Sequence[Example], rows: np.ndarray) -> np.ndarray:
    """Per positive: 1 when its gold (column 0 of its row of reply indices) ranks first by
    the bot's first stage (its retriever, and its partner's scores summed, then BM25's
    fused), else 0; the replies are the positives' own responses."""
    from rolecall.eval.retrieval import gold_ranks
    from rolecall.serve.lexical import LexicalScorer, fuse, standardised
    from rolecall.serve.selection import last_user_text
    from rolecall.train.pairs import as_context

    selector = bot.selector
    retriever = selector.retriever
    texts = [e.response for e in positives]
    contexts = [as_context(list(e.history), retriever.settings.max_turns) for e in positives]
    vectors = retriever.encode_candidates(texts)
    dense = np.asarray(retriever.score_vectors(retriever.encode_contexts(contexts), vectors[rows]))
    if selector.partner is not None:  # a second retriever: the two scores summed, as served
        other = selector.partner.retriever
        cut = [as_context(list(e.history), other.settings.max_turns) for e in positives]
        partner = other.score_vectors(
            other.encode_contexts(cut), other.encode_candidates(texts)[rows]
        )
        dense = standardised(dense) + standardised(np.asarray(partner))
    if selector.lexical_weight:
        lexical = LexicalScorer(texts)
        for i, example in enumerate(positives):
            words = lexical.scores(last_user_text(list(example.history)))
            dense[i] = fuse(dense[i], words[rows[i]], selector.lexical_weight)
    return (gold_ranks(dense) == 1).astype(float)


def guard_verdicts(bot: Any, examples: Sequence[Example]) -> np.ndarray:
    """Per example: (out of bounds in truth, flagged by the bot's guard)."""
    threshold = bot.classifier.settings.threshold
    p_out = bot.classifier.predict_proba([list(e.history) for e in examples],
                                         [e.response for e in examples])[:, 1]  # fmt: skip
    truth = np.array([e.label == "negative" for e in examples])
    return np.stack([truth, p_out >= threshold], axis=1)


def macro_f1(pairs: np.ndarray, items: np.ndarray) -> float:
    from sklearn.metrics import f1_score

    chosen = pairs[items]
    if len(set(chosen[:, 0])) < 2:
        return float("nan")  # a draw with one class: no macro-F1
    return float(f1_score(chosen[:, 0], chosen[:, 1], average="macro", zero_division=0))


def replies_to(bot: Any, contexts: Sequence[list[Turn]]) -> list[Any]:
    return [bot.reply(history) for history in contexts]


def share(values: np.ndarray, items: np.ndarray) -> float:
    return float(np.mean(values[items]))


def percentile(q: float) -> Callable[[np.ndarray, np.ndarray], float]:
    return lambda values, items: float(np.percentile(values[items], q))


def measures(
    versions: Sequence[Version], examples: Sequence[Example], k: int, seed: int, say
) -> tuple[list[Measure], dict[str, Any]]:
    """Every held-out metric of every version, per item."""
    from rolecall.eval.retrieval import sample_candidates

    positives = [e for e in examples if e.label == "positive"]
    k = min(k, len(positives))
    rows = sample_candidates(len(positives), range(len(positives)), len(positives), k, seed)
    found = [
        Measure(
            f"first stage Hits@1/{k}",
            [first_stage_hits(v.bot, positives, rows) for v in versions],
            share,
            len(positives),
        )
    ]
    if not any(e.label == "negative" for e in examples):
        say("guard macro-F1: not measured (the held-out examples hold no out-of-bounds one; "
            "give --held-out FILE with both labels)")  # fmt: skip
    elif any(v.bot.classifier is None for v in versions):
        say("guard macro-F1: not measured (a version has no classifier/)")
    else:
        guards = [guard_verdicts(v.bot, examples) for v in versions]
        found.append(Measure("guard macro-F1", guards, macro_f1, len(examples)))
    due = [list(e.history) for e in positives if e.history and e.history[-1].role == "user"]
    replies = [replies_to(v.bot, due) for v in versions]
    for name, path in (("fallback share", "fallback"), ("check share", "checked")):
        values = [np.array([r.path == path for r in rs], dtype=float) for rs in replies]
        found.append(Measure(name, values, share, len(due)))
    latency = [np.array([r.latency_ms for r in rs]) for rs in replies]
    found.append(Measure("latency p50 (ms)", latency, percentile(50), len(due)))
    found.append(Measure("latency p95 (ms)", latency, percentile(95), len(due)))
    counts = {"held_out": len(examples), "positives": len(positives), "replies": len(due), "k": k}
    return found, counts


def suite_measures(versions: Sequence[Version], spec: Any, out: Path, progress, say):
    """The safety suite put to every version (``bot check`` into ``out/check-N``): per
    category, each item passed or not."""
    from rolecall.jsonl import read_jsonl
    from rolecall.pipelines.bot_check import run_bot_check

    passed = []
    categories: dict[str, list[int]] = {}
    for number, version in enumerate(versions, start=1):
        where = out / f"check-{number}"
        say(f"{version.name}: the safety suite (bot check into {where})")
        run_bot_check(version.bot, spec, where, progress=progress, say=lambda _: None)
        rows = list(read_jsonl(where / "check.jsonl"))
        passed.append(np.array([r["passed"] for r in rows], dtype=float))
        if number == 1:
            for i, row in enumerate(rows):
                categories.setdefault(row["category"], []).append(i)
    found = [Measure("suite: all", passed, share, len(passed[0]))]
    for category, where in categories.items():
        picked = [values[where] for values in passed]
        found.append(Measure(f"suite: {category}", picked, share, len(where)))
    return found


def redteam_measures(runs: Sequence[Path]) -> list[Measure]:
    """Per attack kind, each outcome (not safe, out of role, repeats the attack) of the
    conversations every version's red-team run holds (``rolecall redteam``, the same
    seeds: paired by conversation id)."""
    from rolecall.errors import InputFileError
    from rolecall.jsonl import read_jsonl

    by_run = []
    for run in runs:
        path = run / "conversations.jsonl"
        if not path.is_file():
            raise InputFileError(run, "holds no conversations.jsonl",
                                 fix="give the --out directory of 'rolecall redteam'")  # fmt: skip
        by_run.append({r["id"]: r for r in read_jsonl(path)})
    shared = sorted(set.intersection(*(set(r) for r in by_run)))
    found = []
    for kind in sorted({by_run[0][i]["kind"] for i in shared}):
        ids = [i for i in shared if by_run[0][i]["kind"] == kind]
        for outcome in ("not_safe", "out_of_role", "repeated"):
            values = [np.array([bool(r[i]["outcome"][outcome]) for i in ids], dtype=float)
                      for r in by_run]  # fmt: skip
            found.append(Measure(f"red team {kind}: {outcome}", values, share, len(ids)))
    return found


def compare_bots(
    versions: Sequence[Version],
    spec: Any,
    out: Path,
    held_out: Path | None = None,
    k: int = 20,
    seed: int = 0,
    suite: bool = True,
    progress: bool = True,
    say: Callable[[str], None] = print,
    resamples: int = 2000,
    redteam: Sequence[Path] = (),
) -> dict[str, Any]:
    """Measure every version, write the report; returns ``compare.json``'s content.
    ``redteam``: one red-team run per version, in the same order (or none)."""
    from rolecall.errors import ConfigError

    if redteam and len(redteam) != len(versions):
        raise ConfigError(
            f"{len(redteam)} red-team runs for {len(versions)} bots",
            fix="give one --redteam RUN per bot, in the bots' order (rolecall redteam BOT "
            "--out RUN, the same options for each)",
        )
    out.mkdir(parents=True, exist_ok=True)
    from rolecall.pipelines.bot_run import HELD_OUT_FILE

    source = held_out or versions[0].path / HELD_OUT_FILE
    examples = held_out_examples(source)
    found, counts = measures(versions, examples, k, seed, say)
    if suite:
        found += suite_measures(versions, spec, out, progress, say)
    if redteam:
        found += redteam_measures(redteam)
    table = {}
    for measure in found:
        everything = np.arange(measure.items)
        values = [round(measure.statistic(v, everything), 4) for v in measure.values]
        differences = [
            paired_bootstrap(
                lambda i, first=measure.values[0]: measure.statistic(first, i),
                lambda i, other=other: measure.statistic(other, i),
                measure.items,
                resamples,
                seed,
            )
            for other in measure.values[1:]
        ]
        table[measure.name] = {"items": measure.items, "values": values, "differences": differences}
    report = {
        "versions": [
            {"name": v.name, "path": str(v.path), "version": getattr(v.bot, "version", None)}
            for v in versions
        ],
        "held_out": str(source),
        "counts": counts,
        "seed": seed,
        "resamples": resamples,
        "metrics": table,
    }
    write_json(out / "compare.json", report)
    (out / "compare.md").write_text(markdown(report), encoding="utf-8")
    (out / "compare.html").write_text(page(report), encoding="utf-8")
    return report


def _difference(record: dict) -> str:
    if record["difference"] is None:
        return "–"
    interval = record["ci95"]
    span = f" [{interval[0]:+.3f}, {interval[1]:+.3f}]" if interval else ""
    return f"{record['difference']:+.3f}{span}"


def table_rows(report: dict) -> list[list[str]]:
    """Rows of the comparison: metric, items, each version's value, then each later
    version's difference from the first with its interval."""
    rows = []
    for name, entry in report["metrics"].items():
        values = [f"{v:.3f}" if isinstance(v, float) else str(v) for v in entry["values"]]
        rows.append([name, str(entry["items"]), *values, *map(_difference, entry["differences"])])
    return rows


def _header(report: dict) -> list[str]:
    names = [v["name"] for v in report["versions"]]
    return ["metric", "items", *names, *(f"{n} - {names[0]} (95%)" for n in names[1:])]


def markdown(report: dict) -> str:
    header = _header(report)
    lines = [
        "# Bot versions compared",
        "",
        f"Held-out examples: `{report['held_out']}` ({report['counts']['held_out']}, "
        f"{report['counts']['replies']} replies asked); paired bootstrap, "
        f"{report['resamples']} resamples, seed {report['seed']}. Lower is better for the "
        "fallback share, the latencies and the red-team rates.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(report)]
    return "\n".join(lines) + "\n"


def _plot(report: dict) -> str:
    """An SVG of each later version's differences from the first, with their intervals
    (one row per metric whose values are shares; the latencies are in the table)."""
    shown = [
        (name, entry["differences"])
        for name, entry in report["metrics"].items()
        if "latency" not in name and entry["differences"]
    ]
    width, left, row = 640, 220, 22
    height = row * (len(shown) + 1)
    x = lambda d: left + (d + 1) / 2 * (width - left - 20)  # noqa: E731 - [-1, 1] -> px
    parts = [f'<svg width="{width}" height="{height}" role="img">']
    parts.append(f'<line x1="{x(0)}" y1="0" x2="{x(0)}" y2="{height}" stroke="#999"/>')
    for i, (name, differences) in enumerate(shown):
        y = row * (i + 1)
        parts.append(f'<text x="4" y="{y + 4}" font-size="12">{html.escape(name)}</text>')
        for record in differences:
            if record["ci95"] is None:
                continue
            low, high = record["ci95"]
            parts.append(f'<line x1="{x(low)}" y1="{y}" x2="{x(high)}" y2="{y}" stroke="#36c"/>')
            parts.append(f'<circle cx="{x(record["difference"])}" cy="{y}" r="3" fill="#36c"/>')
    parts.append("</svg>")
    return "".join(parts)


def page(report: dict) -> str:
    from rolecall.pipelines.redteam.html import table

    return (
        '<!doctype html><html lang="en"><meta charset="utf-8"><title>Bot versions compared'
        "</title><body><h1>Bot versions compared</h1>"
        f"<p>Held-out examples: {html.escape(report['held_out'])}; the differences from "
        f"{html.escape(report['versions'][0]['name'])} with 95% paired bootstrap intervals "
        "(the axis runs from -1 to +1).</p>"
        f"{_plot(report)}{table(_header(report), table_rows(report))}"
        "</body></html>\n"
    )
