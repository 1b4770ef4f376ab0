"""What people's labels say about the data, for the dashboard (issue #35 items 3 and 5).

- **label error rates**, per label kind and question: the items whose annotators' majority
  answer (as the exports read it: ``ERRORS``) is the error (a dialogue with an
  out-of-bounds turn, a rewrite that does not keep its content or is not offensive, a bot
  turn not sensible or not specific), with a 95% Wilson interval, over the items served
  from the queue's **random share** only (``web/queue.py``): the ranked items are the ones
  the judges disagree on, the hard ones, so counting them would bias every rate; how many
  labelled items were left out is shown.
- **agreement per category**: Krippendorff's alpha (nominal) of the error category people
  chose for a dialogue, and one binary alpha per category ("chose this category or not"),
  each over the items labelled by two or more people, with that count.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session

from rolecall.eval.agreement import krippendorff_alpha
from rolecall.eval.intervals import wilson_interval
from rolecall.store import Annotation, Item
from rolecall.web.export import majority_first_oob
from rolecall.web.items import annotators_only, decided, labels_by_item, majority_yes
from rolecall.web.queue_order import RANDOM

# per label kind, each question's error, read from an item's labels by the rules the
# exports use: the majority first out-of-bounds turn (a tie goes to the turn), the
# majority yes/no answer (a tie is "no")
ERRORS: dict[str, dict[str, Callable[[list[dict]], bool]]] = {
    "oob": {"out_of_bounds": lambda labels: majority_first_oob(labels)[0] is not None},
    "pair": {
        "not_consistent": lambda labels: not majority_yes(labels, "consistent"),
        "not_offensive": lambda labels: not majority_yes(labels, "offensive"),
    },
    "ssa": {
        "not_sensible": lambda labels: not majority_yes(labels, "sensible"),
        "not_specific": lambda labels: not majority_yes(labels, "specific"),
    },
}


def random_share_items(db: Session, project_id: int) -> set[int]:
    """The items some annotator was served from the queue's random share."""
    return set(
        db.scalars(
            select(Annotation.item_id)
            .join(Item, Item.id == Annotation.item_id)
            .where(Item.project_id == project_id, Annotation.share == RANDOM)
        )
    )


def label_error_rates(db: Session, project_id: int) -> list[dict]:
    """One row per label kind and question (see the module docstring)."""
    sampled = random_share_items(db, project_id)
    rows = []
    for kind, questions in ERRORS.items():
        labels = labels_by_item(db, project_id, kind)
        sample = [decided(group) for item_id, group in labels.items() if item_id in sampled]
        for question, is_error in questions.items():
            k = sum(map(is_error, sample))
            low, high = wilson_interval(k, len(sample)) or (None, None)
            rows.append(
                {
                    "kind": kind,
                    "question": question,
                    "sampled": len(sample),
                    "errors": k,
                    "error_rate": k / len(sample) if sample else None,
                    "low": low,
                    "high": high,
                    "ranked_left_out": len(labels) - len(sample),
                }
            )
    return rows


def category_agreement(db: Session, project_id: int, categories: list[str]) -> list[dict]:
    """Alpha of the chosen error category over dialogues with 2+ labels, then one binary
    alpha per category of ``categories`` (the spec's order)."""
    every = labels_by_item(db, project_id, "oob").values()
    groups = [g for g in map(annotators_only, every) if len(g) >= 2]
    chosen = [[str(label.get("category")) for label in group] for group in groups]
    rows = [_row("category", chosen)]
    for name in categories:
        rows.append(_row(name, [[label.get("category") == name for label in g] for g in groups]))
    return rows


def _row(category: str, units: list[list]) -> dict:
    return {
        "category": category,
        "items_with_2_or_more": len(units),
        "krippendorff_alpha": krippendorff_alpha(units),
    }
