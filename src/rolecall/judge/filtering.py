"""Run K/DA's filters in order: consistency on every candidate, implicit offensiveness only
on the candidates consistency kept. Each filter is a *panel*: one (LLM, judge) pair per
judge model and any judges that need no LLM (``voting.DirectJudge``: a trained model, a
rule set), whose votes are pooled by majority (``voting.py``).

Every vote goes to its verdict sink, ``verdicts_consistency.jsonl`` and
``verdicts_implicit.jsonl`` in ``out_dir``, with its raw output and parse status (appended
as produced, so a resumed run adds only what is missing). ``filter_pairs`` returns the
retention report (per filter and per n: how many went in and how many were kept) and the
kept candidates; the pipeline (``pipelines/kda.py``) writes them.

An unparsed verdict is its own outcome: the candidate is not kept, and the count of
unparsed verdicts is reported next to the retention.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rolecall.jsonl import ResumableJsonl
from rolecall.judge.pair_filters import KEEP, keeps
from rolecall.judge.voting import Member, judge_by_panel, task_of
from rolecall.records import Pair, Verdict
from rolecall.rundir import Files

Panel = Sequence[Member]  # (LLM, PairJudge) pairs and direct judges of one filter


def run_filter(
    panel: Panel, pairs: Sequence[Pair], out_dir: Path, samples: int = 1, progress: bool = True
) -> list[Verdict]:
    name = task_of(panel)
    with ResumableJsonl(
        out_dir / Files.verdicts_of(name), key=lambda r: (r["item_id"], r["judge"], r.get("model"))
    ) as votes:
        return judge_by_panel(
            panel, pairs, samples, votes, progress, f"filter: {name}", keep_label=KEEP[name]
        )


def _ratio(kept: int, total: int) -> float | None:
    return round(kept / total, 4) if total else None


def retention(stages: list[tuple[str, list[Pair], list[Verdict]]], keep) -> dict:
    """Per filter (in order) and per n: in, kept, unparsed, retention = kept / in."""
    report: dict = {"filters": []}
    for name, pairs, verdicts in stages:
        by_n: dict[str, dict[str, int]] = {}
        for pair, verdict in zip(pairs, verdicts):
            row = by_n.setdefault(
                str(pair.provenance.get("n", "-")), {"in": 0, "kept": 0, "unparsed": 0}
            )
            row["in"] += 1
            row["kept"] += int(keep(name, verdict))
            row["unparsed"] += int(verdict.parse_status != "parsed")
        for row in by_n.values():
            row["retention"] = _ratio(row["kept"], row["in"])
        total_in = sum(r["in"] for r in by_n.values())
        total_kept = sum(r["kept"] for r in by_n.values())
        report["filters"].append(
            {
                "filter": name,
                "in": total_in,
                "kept": total_kept,
                "unparsed": sum(r["unparsed"] for r in by_n.values()),
                "retention": _ratio(total_kept, total_in),
                "by_n": dict(sorted(by_n.items(), key=lambda kv: (len(kv[0]), kv[0]))),
            }
        )
    first = report["filters"][0]["in"] if report["filters"] else 0
    last = report["filters"][-1]["kept"] if report["filters"] else 0
    report["overall"] = {"in": first, "kept": last, "retention": _ratio(last, first)}
    return report


def filter_pairs(
    panels: Sequence[Panel],
    pairs: Sequence[Pair],
    out_dir: Path,
    samples: int = 1,
    progress: bool = True,
) -> tuple[dict, list[Pair]]:
    """Each filter sees only what the previous ones kept; returns the retention report and
    the candidates every filter kept."""
    stages, current = [], list(pairs)
    for panel in panels:
        name = task_of(panel)
        verdicts = run_filter(panel, current, out_dir, samples, progress)
        stages.append((name, current, verdicts))
        current = [p for p, v in zip(current, verdicts) if keeps(name, v)]
    report = retention(stages, keeps)
    return report, current
