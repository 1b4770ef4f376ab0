"""Training examples from judged dialogues: the first-out-of-bounds split (NAACL 2022, 3.2).

Each system turn is judged in order. The system turns *before* the first out-of-bounds one
become positive examples (history, response); that turn becomes one negative example with
its error category; everything after it is dropped, because the rest of the dialogue was
conditioned on a bad turn. A dialogue without an out-of-bounds turn gives only positives.
System turns not judged yet (``out_of_bounds is None``) stop the split: their label is
unknown, so neither they nor anything after them can be used.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence

from rolecall.records import Dialogue, Example, RoleSpec


def examples_from_dialogue(dialogue: Dialogue) -> list[Example]:
    examples: list[Example] = []
    for index, turn in enumerate(dialogue.turns):
        if turn.role != "system":
            continue
        if turn.out_of_bounds is None:
            break
        history = [
            t.model_copy(update={"out_of_bounds": None, "category": None})
            for t in dialogue.turns[:index]
        ]
        if turn.out_of_bounds:
            examples.append(
                Example(
                    history=history,
                    response=turn.text,
                    label="negative",
                    category=turn.category or "unspecified",
                    dialogue_id=dialogue.id,
                )
            )
            break
        examples.append(
            Example(history=history, response=turn.text, label="positive", dialogue_id=dialogue.id)
        )
    return examples


def marked_in_bounds(dialogue: Dialogue) -> Dialogue:
    """A dialogue written to be in bounds (e.g. the shipped examples): every system turn
    marked so, which makes every system turn a positive example."""
    return dialogue.model_copy(
        update={
            "turns": [
                t.model_copy(update={"out_of_bounds": False}) if t.role == "system" else t
                for t in dialogue.turns
            ]
        }
    )


def examples_from_dialogues(dialogues: Iterable[Dialogue]) -> Iterator[Example]:
    for dialogue in dialogues:
        yield from examples_from_dialogue(dialogue)


def examples_from_forbidden(
    spec: RoleSpec, dialogues: Sequence[Dialogue], per_example: int = 3, seed: int = 0
) -> list[Example]:
    """Negatives from the role spec: each forbidden example as the system's reply after
    ``per_example`` contexts drawn from ``dialogues`` (a history ending in a user turn),
    labelled with its category's error category. All placements of one forbidden example
    share a ``dialogue_id`` (``spec:CATEGORY:N``), so a split by dialogue keeps each text on
    one side and a held-out score measures texts the model has not seen.

    A forbidden example that opens with a stage direction, e.g. "(어르신이 방금 점심을
    드셨다고 했는데) 오늘 점심은 드셨어요?", is out of bounds only in the context it
    describes, which a random context is not: such examples are skipped.
    """
    contexts = [
        d.turns[:i]
        for d in dialogues
        for i, t in enumerate(d.turns)
        if t.role == "system" and i > 0 and d.turns[i - 1].role == "user"
    ]
    if not contexts:
        return []
    rng = random.Random(seed)
    examples = []
    for category in spec.categories:
        for number, text in enumerate(category.forbidden_examples):
            if text.lstrip().startswith("("):
                continue
            for history in rng.sample(contexts, min(per_example, len(contexts))):
                examples.append(
                    Example(
                        history=[
                            t.model_copy(update={"out_of_bounds": None, "category": None})
                            for t in history
                        ],
                        response=text.strip(),
                        label="negative",
                        category=category.error_category,
                        dialogue_id=f"spec:{category.name}:{number}",
                    )
                )
    return examples
