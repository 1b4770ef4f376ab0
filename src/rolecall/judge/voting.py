"""Majority voting over several verdicts on one item (k samples, or k judge models).

Every majority in rolecall (judges' votes here; annotators' labels in the web app's
dashboard and exports and in ``eval/agreement.py``) counts with ``most_common``; what a
tie means is each caller's rule, stated where it is decided.

Only parsed verdicts vote. The most frequent label wins; a tie is decided against the
label that would keep the item (``keep_label``: in-bounds for dialogue turns, maintained
or implicit for K/DA candidates), because keeping an unsafe turn or a bad pair costs more
than dropping a good one. The category of the majority is the most frequent category among
its votes (first seen on a tie). No parsed vote at all gives an ``unparsed`` verdict that
keeps every raw output.

A *panel* is one or more members, each an (LLM, judge) pair or a ``DirectJudge`` (a
trained model or a rule set, no LLM): every LLM votes ``samples`` times on every item,
every direct judge once (its answer does not change with a sample index), and all the
votes are pooled, so "k samples", "k judge models" and "k judge kinds" are the same vote.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from typing import Any, Protocol, TypeVar, Union

from rolecall.jsonl import ResumableJsonl
from rolecall.llm import LLM, Request
from rolecall.llm.base import Completion
from rolecall.records import Verdict


class Judge(Protocol):
    """A label judge: ``format_input`` -> requests, ``parse_output`` -> a verdict."""

    name: str
    mode: str

    def item_id(self, item: Any) -> str: ...

    def format_input(self, item: Any) -> list[Request]: ...

    def parse_output(self, item: Any, completions: list[Completion], model: str) -> Verdict: ...


class DirectJudge(Protocol):
    """A judge that needs no LLM: a trained model (``classifier:PATH``) or a Korean rule set
    (``rules:NAME``). It judges the same items as the LLM judge of its task and answers
    with the same labels (``in-bounds``/``out-of-bounds`` + the spec's error category for
    dialogue turns; the outcomes of ``pair_filters.LABELS`` for K/DA candidates), one
    parsed ``Verdict`` per item with ``kind`` set, ``score`` or ``probabilities`` where the
    judge has them, and ``rule`` (the rule that fired) for rule judges.

    ``name`` is the task it sits on (``out_of_bounds``, ``consistency``, ``implicit``);
    ``model`` says which judge it is (``classifier:PATH``, ``rules:NAME``) and goes into
    every verdict's ``model``.
    """

    kind: str  # "classifier" or "rules"
    name: str
    model: str

    def item_id(self, item: Any) -> str: ...

    def verdicts(self, items: Sequence[Any]) -> list[Verdict]: ...


# one seat on a panel: an LLM judge on its model, or a judge that needs no LLM
Member = Union[tuple[LLM, Judge], DirectJudge]

SAFE_LABEL, FLAG_LABEL = "in-bounds", "out-of-bounds"
H = TypeVar("H", bound=Hashable)


def judge_of(member: Member) -> Judge | DirectJudge:
    """The judge sitting on a panel seat (the task it answers is its ``name``)."""
    return member[1] if isinstance(member, tuple) else member


def task_of(panel: Sequence[Member]) -> str:
    """The one task every member of ``panel`` answers; a panel that mixes tasks would pool
    votes with different labels, so it is refused."""
    names = list(dict.fromkeys(judge_of(m).name for m in panel))
    if len(names) != 1:
        raise ValueError(f"a panel answers one task, not {names or 'none'}")
    return names[0]


def most_common(values: Iterable[H]) -> list[H]:
    """The values given most often, in first-seen order: one value, several on a tie,
    none for no values."""
    counts = Counter(values)
    top = max(counts.values(), default=0)
    return [value for value, n in counts.items() if n == top]


def majority(votes: list[Verdict], keep_label: str = SAFE_LABEL) -> Verdict:
    if not votes:
        raise ValueError("majority() needs at least one verdict")
    first = votes[0]
    raw = json.dumps([v.raw_output for v in votes], ensure_ascii=False)
    if len(votes) == 1:
        return first
    parsed = [v for v in votes if v.parse_status == "parsed"]
    if not parsed:
        return Verdict(
            judge=first.judge,
            item_id=first.item_id,
            raw_output=raw,
            parse_status="unparsed",
            model=first.model,
        )
    winners = most_common(v.label for v in parsed)
    cautious = [label for label in winners if label != keep_label]
    label = cautious[0] if cautious else winners[0]
    categories = most_common(v.category for v in parsed if v.label == label and v.category)
    category = categories[0] if categories else None
    counts = Counter(v.label for v in parsed)
    share = {lab: n / len(parsed) for lab, n in counts.items()}
    models = ", ".join(dict.fromkeys(v.model for v in votes if v.model)) or None
    kinds = {v.kind for v in votes}
    rules = [v.rule for v in parsed if v.label == label and v.rule]
    return Verdict(
        judge=first.judge,
        item_id=first.item_id,
        label=label,
        category=category,
        raw_output=raw,
        parse_status="parsed",
        probabilities=share,
        model=models,
        kind=kinds.pop() if len(kinds) == 1 else None,  # None: a panel of several kinds
        rule=rules[0] if rules else None,
    )


def collect_votes(
    llm: LLM,
    judge: Judge,
    items: Sequence[Any],
    samples: int,
    votes_out: ResumableJsonl | None,
    progress: bool,
    description: str,
) -> list[list[Verdict]]:
    """Judge every item ``samples`` times in one LLM batch; the votes, per item.

    Every vote is appended to ``votes_out`` (if given; named ``NAME/MODE/SAMPLE``, with its
    model and ``kind="llm"``) except votes whose LLM call failed: those are retried by the
    next run, and count as ``failed`` here.
    """
    per_item = [judge.format_input(item) for item in items]
    flat = [request for requests in per_item for request in requests]
    results = llm.generate(flat, n=samples, progress=progress, description=description)
    all_votes, start = [], 0
    for item, requests in zip(items, per_item):
        answers = results[start : start + len(requests)]
        start += len(requests)
        votes = [_vote(llm, judge, item, [a[s] for a in answers], s) for s in range(samples)]
        for vote in votes:
            if votes_out is not None and vote.parse_status != "failed":
                votes_out.append(vote)
        all_votes.append(votes)
    return all_votes


def judge_by_panel(
    panel: Sequence[Member],
    items: Sequence[Any],
    samples: int,
    votes_out: ResumableJsonl,
    progress: bool,
    description: str,
    keep_label: str = SAFE_LABEL,
) -> list[Verdict]:
    """Every member of ``panel`` votes; the majority over all their votes, per item."""
    task_of(panel)
    pooled: list[list[Verdict]] = [[] for _ in items]
    for member in panel:
        if isinstance(member, tuple):
            llm, judge = member
            label = description if len(panel) == 1 else f"{description} ({llm.model_id})"
            new = collect_votes(llm, judge, items, samples, votes_out, progress, label)
        else:
            new = [[vote] for vote in direct_votes(member, items, votes_out)]
        for votes, more in zip(pooled, new):
            votes.extend(more)
    return [majority(votes, keep_label) for votes in pooled]


def direct_votes(
    judge: DirectJudge, items: Sequence[Any], votes_out: ResumableJsonl | None
) -> list[Verdict]:
    """One vote per item from a judge that needs no LLM, named ``NAME/KIND`` with the
    judge's ``model``, so that two direct judges of one kind on a panel stay apart in the
    verdict file.

    Votes already in ``votes_out`` are read back instead of asked again (a trained judge
    over thousands of items is the slow part of a resumed run without an LLM cache);
    only the items without one go to ``judge.verdicts``, and their votes are appended.
    """
    name = f"{judge.name}/{judge.kind}"
    ids = [judge.item_id(item) for item in items]
    done = {
        r["item_id"]: Verdict.model_validate(r)
        for r in (votes_out.records if votes_out is not None else [])
        if r["judge"] == name and r.get("model") == judge.model
    }
    missing = [item for item, item_id in zip(items, ids) if item_id not in done]
    answers = judge.verdicts(missing) if missing else []
    if len(answers) != len(missing):
        raise ValueError(f"{judge.model} gave {len(answers)} verdicts for {len(missing)} items")
    for item, answer in zip(missing, answers):
        vote = answer.model_copy(update={"judge": name, "kind": judge.kind, "model": judge.model})
        if votes_out is not None and vote.parse_status != "failed":
            votes_out.append(vote)
        done[judge.item_id(item)] = vote
    return [done[item_id] for item_id in ids]


def _vote(llm: LLM, judge: Judge, item: Any, answers: list, sample: int) -> Verdict:
    name = f"{judge.name}/{judge.mode}/{sample}"
    if any(not a.ok for a in answers):
        errors = "; ".join(a.error for a in answers if a.error)
        return Verdict(
            judge=name,
            item_id=judge.item_id(item),
            raw_output=errors,
            parse_status="failed",
            model=llm.model_id,
            kind="llm",
        )
    vote = judge.parse_output(item, [a.completion for a in answers], llm.model_id)
    return vote.model_copy(update={"judge": name, "kind": "llm"})
