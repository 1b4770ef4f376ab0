"""Judge generated dialogues turn by turn up to the first out-of-bounds system turn.

Rounds: round ``r`` judges the ``r``-th system turn of every dialogue still open; a
dialogue closes at its first out-of-bounds or unparsed verdict (the split drops everything
after it, so later turns are never judged: no wasted calls). Each round is one LLM batch,
so calls run concurrently across dialogues. With ``samples > 1`` every item is judged
``samples`` times (sample indices of the same request) and the majority decides. A panel
(``judge_dialogues_by_panel``) pools the votes of several judge models and of judges that
need no LLM (trained, rules: one vote per turn each) the same way; a tie flags the turn.

Every vote goes to the judge's sink, ``verdicts.jsonl`` in ``out_dir`` (raw output and
parse status; appended as produced). ``judge_dialogues_by_panel`` returns the counts, the dialogues
with their system turns' flags and the first-out-of-bounds examples; the pipeline
(``pipelines/dialogues.py``) writes them. A killed run resumes from the cache: finished
calls are not made again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rolecall.examples import examples_from_dialogue
from rolecall.jsonl import ResumableJsonl
from rolecall.judge.out_of_bounds import OUT_OF_BOUNDS, Item
from rolecall.judge.voting import Member, judge_by_panel
from rolecall.records import Dialogue, Example, Turn
from rolecall.rundir import Files


def _system_turns(dialogue: Dialogue) -> list[int]:
    return [i for i, t in enumerate(dialogue.turns) if t.role == "system"]


def _item(dialogue: Dialogue, index: int) -> Item:
    return Item(dialogue.id, index, tuple(dialogue.turns[:index]), dialogue.turns[index].text)


def judge_dialogues_by_panel(
    panel: Sequence[Member],
    dialogues: Sequence[Dialogue],
    out_dir: Path,
    samples: int = 1,
    progress: bool = True,
) -> tuple[dict[str, int], list[Dialogue], list[Example]]:
    """``(counts, judged dialogues, examples)``; the votes are in ``verdicts.jsonl``."""
    turns = {d.id: list(d.turns) for d in dialogues}
    open_ = {d.id: _system_turns(d) for d in dialogues}
    by_id = {d.id: d for d in dialogues}
    outcome = {"judged_turns": 0, "out_of_bounds": 0, "unparsed": 0, "failed": 0}
    with ResumableJsonl(
        # the model is in the key: two judges of a panel give votes of the same name
        out_dir / Files.VERDICTS,
        key=lambda r: (r["item_id"], r["judge"], r.get("model")),
    ) as votes_out:
        round_no = 0
        while any(open_.values()):
            items = [_item(by_id[d], open_[d][0]) for d in open_ if open_[d]]
            verdicts = judge_by_panel(
                panel, items, samples, votes_out, progress, f"judging turn {round_no + 1}"
            )
            for item, verdict in zip(items, verdicts):
                open_[item.dialogue_id].pop(0)
                outcome["judged_turns"] += 1
                if verdict.parse_status != "parsed":
                    outcome[verdict.parse_status] += 1
                    open_[item.dialogue_id] = []  # unknown label: the split stops here
                    continue
                flagged = verdict.label == OUT_OF_BOUNDS
                turns[item.dialogue_id][item.turn_index] = Turn(
                    role="system",
                    text=item.response,
                    out_of_bounds=flagged,
                    category=verdict.category if flagged else None,
                )
                if flagged:
                    outcome["out_of_bounds"] += 1
                    open_[item.dialogue_id] = []
            round_no += 1
    judged = [d.model_copy(update={"turns": turns[d.id]}) for d in dialogues]
    examples = [e for d in judged for e in examples_from_dialogue(d)]
    return outcome, judged, examples
