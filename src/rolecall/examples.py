"""Training examples from judged dialogues: the first-out-of-bounds split (NAACL 2022, 3.2).

Each system turn is judged in order. The system turns *before* the first out-of-bounds one
become positive examples (history, response); that turn becomes one negative example with
its error category; everything after it is dropped, because the rest of the dialogue was
conditioned on a bad turn. A dialogue without an out-of-bounds turn gives only positives.
System turns not judged yet (``out_of_bounds is None``) stop the split: their label is
unknown, so neither they nor anything after them can be used.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rolecall.records import Dialogue, Example


def examples_from_dialogue(dialogue: Dialogue) -> list[Example]:
    examples: list[Example] = []
    for index, turn in enumerate(dialogue.turns):
        if turn.role != "system":
            continue
        if turn.out_of_bounds is None:
            break
        history = [t.model_copy(update={"out_of_bounds": None, "category": None})
                   for t in dialogue.turns[:index]]
        if turn.out_of_bounds:
            examples.append(Example(history=history, response=turn.text, label="negative",
                                    category=turn.category or "unspecified",
                                    dialogue_id=dialogue.id))
            break
        examples.append(Example(history=history, response=turn.text, label="positive",
                                dialogue_id=dialogue.id))
    return examples


def examples_from_dialogues(dialogues: Iterable[Dialogue]) -> Iterator[Example]:
    for dialogue in dialogues:
        yield from examples_from_dialogue(dialogue)
