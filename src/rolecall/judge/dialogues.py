"""Judge generated dialogues turn by turn up to the first out-of-bounds system turn.

Rounds: round ``r`` judges the ``r``-th system turn of every dialogue still open; a
dialogue closes at its first out-of-bounds or unparsed verdict (the split drops everything
after it, so later turns are never judged: no wasted calls). Each round is one LLM batch,
so calls run concurrently across dialogues. With ``samples > 1`` every item is judged
``samples`` times (sample indices of the same request) and the majority decides.

Outputs in ``out_dir``: ``verdicts.jsonl`` (every vote, with raw output and parse status;
appended as produced), then ``judged.jsonl`` (dialogues with their system turns' flags) and
``examples.jsonl`` (the first-out-of-bounds split), both rewritten atomically at the end.
A killed run resumes from the cache: finished calls are not made again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rolecall.examples import examples_from_dialogue
from rolecall.jsonl import ResumableJsonl, write_jsonl
from rolecall.judge.out_of_bounds import OUT_OF_BOUNDS, Item, OutOfBoundsJudge
from rolecall.judge.voting import majority
from rolecall.llm import LLM
from rolecall.records import Dialogue, Turn, Verdict


def _system_turns(dialogue: Dialogue) -> list[int]:
    return [i for i, t in enumerate(dialogue.turns) if t.role == "system"]


def _item(dialogue: Dialogue, index: int) -> Item:
    return Item(dialogue.id, index, tuple(dialogue.turns[:index]), dialogue.turns[index].text)


def _judge_round(llm: LLM, judge: OutOfBoundsJudge, items: list[Item], samples: int,
                 votes_out: ResumableJsonl, progress: bool, round_no: int) -> list[Verdict]:
    per_item = [judge.format_input(item) for item in items]
    flat = [request for requests in per_item for request in requests]
    results = llm.generate(flat, n=samples, progress=progress,
                           description=f"judging turn {round_no + 1}")
    verdicts, start = [], 0
    for item, requests in zip(items, per_item):
        answers = results[start: start + len(requests)]
        start += len(requests)
        votes = []
        for s in range(samples):
            completions = [a[s].completion for a in answers]
            if any(c is None for c in completions):
                errors = "; ".join(a[s].error for a in answers if a[s].error)
                vote = Verdict(judge=judge_name(judge, s), item_id=item.id, raw_output=errors,
                               parse_status="failed", model=llm.model_id)
            else:
                vote = judge.parse_output(item, completions, llm.model_id)
                vote = vote.model_copy(update={"judge": judge_name(judge, s)})
            votes.append(vote)
            if vote.parse_status != "failed":  # failed calls are retried by the next run
                votes_out.append(vote)
        verdicts.append(majority(votes))
    return verdicts


def judge_name(judge: OutOfBoundsJudge, sample: int) -> str:
    return f"out_of_bounds/{judge.mode}/{sample}"


def judge_dialogues(llm: LLM, judge: OutOfBoundsJudge, dialogues: Sequence[Dialogue],
                    out_dir: Path, samples: int = 1, progress: bool = True) -> dict[str, int]:
    turns = {d.id: list(d.turns) for d in dialogues}
    open_ = {d.id: _system_turns(d) for d in dialogues}
    by_id = {d.id: d for d in dialogues}
    outcome = {"judged_turns": 0, "out_of_bounds": 0, "unparsed": 0, "failed": 0}
    with ResumableJsonl(out_dir / "verdicts.jsonl",
                        key=lambda r: (r["item_id"], r["judge"])) as votes_out:
        round_no = 0
        while any(open_.values()):
            items = [_item(by_id[d], open_[d][0]) for d in open_ if open_[d]]
            for item, verdict in zip(items, _judge_round(llm, judge, items, samples,
                                                         votes_out, progress, round_no)):
                open_[item.dialogue_id].pop(0)
                outcome["judged_turns"] += 1
                if verdict.parse_status != "parsed":
                    outcome[verdict.parse_status] += 1
                    open_[item.dialogue_id] = []  # unknown label: the split stops here
                    continue
                flagged = verdict.label == OUT_OF_BOUNDS
                turns[item.dialogue_id][item.turn_index] = Turn(
                    role="system", text=item.response, out_of_bounds=flagged,
                    category=verdict.category if flagged else None)
                if flagged:
                    outcome["out_of_bounds"] += 1
                    open_[item.dialogue_id] = []
            round_no += 1
    judged = [d.model_copy(update={"turns": turns[d.id]}) for d in dialogues]
    examples = [e for d in judged for e in examples_from_dialogue(d)]
    write_jsonl(out_dir / "judged.jsonl", judged)
    write_jsonl(out_dir / "examples.jsonl", examples)
    outcome["positive_examples"] = sum(e.label == "positive" for e in examples)
    outcome["negative_examples"] = sum(e.label == "negative" for e in examples)
    return outcome
