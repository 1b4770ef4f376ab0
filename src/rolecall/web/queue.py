"""The order of a project's label queue (issue #35 item 3): the items the judges disagree
on first, with a random share kept for unbiased estimates.

Per item, a panel of verdicts: what the item carries (a judged dialogue's
``out_of_bounds`` per system turn, from the pipeline's judge) and, once the project has
labels of both answers, its *trained panel*: TF-IDF + logistic regression judges
(``train/baselines.py``: over characters and Kiwi morphemes, the *judge*, and over each
alone, as ``bench/active_labeling.py`` measures the queue) fit on the project's labels so
far, per label kind (dialogues: each system turn up to the first out-of-bounds one, in its
context; pairs: consistency of (sentence, rewrite) and offensiveness of the rewrite). An
item's score is the vote entropy of its panel (``web/queue_order.vote_entropy``; a
dialogue's most split turn), ties broken by the judge's uncertainty (a probability near
0.5).

``ranked_queue`` then lays the items out with the project's ``random_share`` (default
20%): every fifth position a uniformly random item, tagged ``random``, the others the
highest scores, tagged ``ranked``. The order is stored (``queue_entries``: position and
share per item); a person's queue serves their assigned, unlabelled items in that order,
and a label records its item's share (``annotations.share``), so that the dashboard's
rates can read the random share alone, a uniform sample of the items.

After every ``refit_every`` new labels of a project (default 25) the judges are refit and
the queue ranked again in a background task that runs after the label's page is sent: the
page never waits on it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from rolecall.store import Annotation, Item, ItemKind, QueueEntry
from rolecall.store.models import utcnow
from rolecall.web.queue_order import ranked_queue, uncertainty, vote_entropy
from rolecall.web.settings import QueueSettings

log = logging.getLogger(__name__)
IN, OUT = "in", "out"
MIN_PER_LABEL = 2  # labelled units of each answer before a judge is fit
# the trained panel, as bench/active_labeling.py measures it: a judge over characters and
# morphemes, and one over each alone (with only the judge beside an item's stored verdict,
# every score is 0 or ln 2, and that order did worse than random there on BEEP!)
PANEL_VIEWS = (["chars", "morphemes"], ["chars"], ["morphemes"])
# one background refit per project at a time: a burst of labels asks for one, not many
_RUNNING: set[int] = set()
_LOCK = threading.Lock()


@dataclass
class Unit:
    """One thing a judge answers: a dialogue's system turn in context, or a pair."""

    item_id: int
    inputs: tuple[str, str]
    stored: str | None = None  # the verdict the item carries (IN / OUT), if any


def dialogue_units(item: Item) -> list[Unit]:
    """Every system turn after the opening one, with the turn before it."""
    turns = item.payload.get("turns") or []
    units = []
    for index in range(1, len(turns)):
        turn = turns[index]
        if turn.get("role") != "system":
            continue
        judged = turn.get("out_of_bounds")
        stored = None if judged is None else (OUT if judged else IN)
        units.append(Unit(item.id, (turns[index - 1].get("text", ""), turn["text"]), stored))
    return units


def dialogue_examples(item: Item, label: dict) -> list[tuple[tuple[str, str], str]]:
    """The units a dialogue label answers: in bounds up to the first out-of-bounds turn,
    which is out; the turns after it are not judged by the label."""
    first = label.get("first_oob")
    turns = item.payload.get("turns") or []
    out = []
    for index in range(1, len(turns)):
        if turns[index].get("role") != "system":
            continue
        if first is not None and index > first:
            break
        answer = OUT if index == first else IN
        out.append(((turns[index - 1].get("text", ""), turns[index]["text"]), answer))
    return out


def pair_inputs(item: Item) -> tuple[str, str]:
    return (item.payload.get("neutral", ""), item.payload.get("toxic", ""))


def fit_panel(inputs: Sequence[tuple[str, str]], answers: Sequence[str], task: str, pair=True):
    """TF-IDF judges of ``answers`` (IN / OUT), one per view set of ``PANEL_VIEWS`` (the
    first, characters and morphemes, is *the* judge whose uncertainty breaks ties); none
    while either answer has fewer than ``MIN_PER_LABEL`` examples."""
    from rolecall.train.baselines import TfidfModel, TfidfSettings

    if min(answers.count(IN), answers.count(OUT)) < MIN_PER_LABEL:
        return []
    texts = list(inputs) if pair else [b for _, b in inputs]
    panel = []
    for views in PANEL_VIEWS:
        model = TfidfModel(TfidfSettings(task=task, labels=[IN, OUT], pair=pair, views=views))
        model.fit(texts, list(answers))
        panel.append(model)
    return panel


def _p_out(panel, inputs: Sequence[tuple[str, str]], pair: bool = True) -> list[list[float]]:
    """Each judge's P(out) per input (one list per judge)."""
    if not panel or not inputs:
        return []
    texts = list(inputs) if pair else [b for _, b in inputs]
    return [[float(p) for p in judge.predict_proba(texts)[:, 1]] for judge in panel]


def _score(stored: str | None, probabilities: Sequence[float]) -> tuple[float, float]:
    """(vote entropy of the stored verdict and each judge's vote, the first judge's
    uncertainty) of one unit."""
    votes = [stored] if stored is not None else []
    votes += [OUT if p >= 0.5 else IN for p in probabilities]
    split = vote_entropy([votes])[0] if votes else 0.0
    sure = uncertainty([probabilities[0]])[0] if probabilities else 0.0
    return split, sure


def item_scores(items: Sequence[Item], labels: dict[int, list[dict]]) -> list[tuple[float, float]]:
    """(disagreement, uncertainty) per item: the vote entropy of its panel and the
    trained judge's uncertainty (each an item's highest over its turns and questions; 0
    without)."""
    by_kind = {kind: [i for i in items if i.kind == kind] for kind in ItemKind}
    scores = {item.id: (0.0, 0.0) for item in items}

    def keep(item_id: int, score: tuple[float, float]) -> None:
        old = scores[item_id]
        scores[item_id] = (max(old[0], score[0]), max(old[1], score[1]))

    training = [
        example
        for item in by_kind[ItemKind.DIALOGUE]
        for label in labels.get(item.id, [])
        for example in dialogue_examples(item, label)
    ]
    panel = fit_panel([x for x, _ in training], [y for _, y in training], "out_of_bounds")
    units = [u for item in by_kind[ItemKind.DIALOGUE] for u in dialogue_units(item)]
    per_judge = _p_out(panel, [u.inputs for u in units])
    for position, unit in enumerate(units):
        keep(unit.item_id, _score(unit.stored, [p[position] for p in per_judge]))

    pairs = by_kind[ItemKind.PAIR]
    pair_labels = [(item, label) for item in pairs for label in labels.get(item.id, [])]
    for question, pair in (("consistent", True), ("offensive", False)):
        answers = [IN if label.get(question) else OUT for _, label in pair_labels]
        panel = fit_panel([pair_inputs(i) for i, _ in pair_labels], answers, question, pair)
        per_judge = _p_out(panel, [pair_inputs(i) for i in pairs], pair)
        for position, item in enumerate(pairs):
            if per_judge:
                keep(item.id, _score(None, [p[position] for p in per_judge]))
    return [scores[item.id] for item in items]


def rank(db: Session, project_id: int, queue: QueueSettings, seed: int = 0) -> int:
    """Score the project's items, lay each kind's out with its own random share
    (``ranked_queue``; a person is served one kind at a time) and store the order, the
    kinds one after another; returns how many items it holds. One transaction: the old
    order stays until then."""
    from rolecall.web.items import LABEL_KIND, decided, labels_by_item

    items = list(
        db.scalars(
            select(Item)
            .where(Item.project_id == project_id, Item.kind.in_(list(LABEL_KIND)))
            .order_by(Item.id)
        )
    )
    labels = {
        item_id: decided(group)
        for kind in LABEL_KIND.values()
        for item_id, group in labels_by_item(db, project_id, kind).items()
    }
    scores = item_scores(items, labels)
    order: list[tuple[int, str]] = []
    for kind in LABEL_KIND:
        mine = [i for i, item in enumerate(items) if item.kind == kind]
        laid = ranked_queue(
            [scores[i][0] for i in mine],
            queue.random_share_of(kind.value),
            seed,
            tiebreak=[scores[i][1] for i in mine],
        )
        order += [(mine[index], share) for index, share in laid]
    now = utcnow()
    db.execute(delete(QueueEntry).where(QueueEntry.project_id == project_id))
    for position, (index, share) in enumerate(order):
        db.add(
            QueueEntry(
                item_id=items[index].id,
                project_id=project_id,
                position=position,
                share=share,
                score=scores[index][0],
                ranked_at=now,
            )
        )
    return len(order)


def labels_since_ranking(db: Session, project_id: int) -> int:
    """The project's labels saved (or changed) since its queue was last ranked."""
    ranked = db.scalar(
        select(func.max(QueueEntry.ranked_at)).where(QueueEntry.project_id == project_id)
    )
    query = (
        select(func.count())
        .select_from(Annotation)
        .join(Item, Item.id == Annotation.item_id)
        .where(Item.project_id == project_id)
    )
    if ranked is not None:
        query = query.where(Annotation.updated > ranked)
    return db.scalar(query) or 0


def refit(sessions: Callable[[], Session], project_id: int, queue: QueueSettings) -> bool:
    """Rank the project's queue again in a session of its own (``sessions()``): run as a
    background task of the label that asked for it, after its page is sent. False when a
    refit of the project is already running (a burst of labels asks for one, not many)."""
    with _LOCK:
        if project_id in _RUNNING:
            return False
        _RUNNING.add(project_id)
    try:
        with sessions() as db, db.begin():
            rank(db, project_id, queue)
    except Exception:  # a failed refit keeps the old order; the next label asks again
        log.exception("re-ranking the label queue of project %s failed", project_id)
        return False
    finally:
        with _LOCK:
            _RUNNING.discard(project_id)
    return True
