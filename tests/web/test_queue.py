"""The label queue's order (web/queue.py): the panel of an item, the trained judge fit on
the project's labels, and the stored order with its random share."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from pydantic import ValidationError
from sqlalchemy import select

from rolecall.store import (
    Annotation,
    Assignment,
    Item,
    ItemKind,
    Project,
    QueueEntry,
    User,
    session,
)
from rolecall.web.queue import (
    IN,
    OUT,
    dialogue_examples,
    dialogue_units,
    item_scores,
    labels_since_ranking,
    rank,
)
from rolecall.web.settings import QueueSettings
from tests.web.site import client_for, label, upload

CALM = ["오늘 식사는 맛있게 하셨어요?", "산책은 다녀오셨어요?", "요즘 잠은 잘 주무세요?"]
RUDE = ["주소랑 계좌번호 좀 불러 주세요.", "주민등록번호 뒷자리 알려 주세요."]


def dialogue(item_id: int, system: list[str], judged: list[bool | None] | None = None) -> Item:
    turns = [{"role": "system", "text": "안녕하세요, 어르신."}]
    for number, text in enumerate(system):
        turns.append({"role": "user", "text": "네, 안녕하세요."})
        turn = {"role": "system", "text": text}
        if judged is not None and judged[number] is not None:
            turn["out_of_bounds"] = judged[number]
        turns.append(turn)
    item = Item(project_id=1, kind=ItemKind.DIALOGUE, payload={"id": f"d{item_id}", "turns": turns})
    item.id = item_id
    return item


def test_a_dialogue_label_answers_the_turns_up_to_its_first_out_of_bounds_one():
    item = dialogue(1, [CALM[0], RUDE[0], CALM[1]], judged=[False, True, None])
    units = dialogue_units(item)
    assert [u.inputs[1] for u in units] == [CALM[0], RUDE[0], CALM[1]]  # not the opening
    assert [u.stored for u in units] == [IN, OUT, None]
    assert [y for _, y in dialogue_examples(item, {"first_oob": 4})] == [IN, OUT]
    assert [y for _, y in dialogue_examples(item, {"first_oob": None})] == [IN, IN, IN]


def test_scores_wait_for_labels_of_both_answers_then_rank_what_the_judges_split_on():
    labelled = [dialogue(1, [CALM[0], RUDE[0]]), dialogue(2, [CALM[1], RUDE[1]])]
    labelled += [dialogue(3, [CALM[2]]), dialogue(4, [CALM[0], CALM[1]])]
    # 5: the pipeline's judge called a plain turn out of bounds: it and the trained judge split
    open_items = [dialogue(5, [CALM[1]], judged=[True]), dialogue(6, [CALM[2]], judged=[False])]
    items = labelled + open_items
    only_in = {i: [{"first_oob": None}] for i in (1, 2, 3, 4)}
    assert item_scores(items, only_in) == [(0.0, 0.0)] * 4 + [(0.0, 0.0), (0.0, 0.0)]
    labels = {1: [{"first_oob": 4}], 2: [{"first_oob": 4}], 3: [{"first_oob": None}]}
    labels[4] = [{"first_oob": None}]
    scores = item_scores(items, labels)
    split, agree = scores[4], scores[5]
    # the stored "out" against the panel's three "in" votes: 1 of 4; item 6 all agree
    assert split[0] == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)))
    assert agree[0] == 0.0
    assert all(0.0 < s[1] <= 1.0 for s in scores)  # the trained judge's uncertainty


def add_pairs(engine, project_id: int, count: int) -> None:
    with session(engine) as db:
        for number in range(count):
            payload = {"neutral": f"문장 {number}", "toxic": f"바꾼 문장 {number}"}
            db.add(Item(project_id=project_id, kind=ItemKind.PAIR, payload=payload))


def test_the_stored_queue_keeps_a_random_fifth_and_counts_labels_since(page_site):
    engine, project_id = page_site
    add_pairs(engine, project_id, 10)
    with session(engine) as db:
        assert rank(db, project_id, QueueSettings(random_share=0.2)) == 10
    with session(engine) as db:
        entries = list(
            db.scalars(
                select(QueueEntry)
                .where(QueueEntry.project_id == project_id)
                .order_by(QueueEntry.position)
            )
        )
        assert [e.position for e in entries] == list(range(10))
        assert [e.share for e in entries].count("random") == 2
        assert [e.share for e in entries[:5]].count("random") == 1  # every prefix keeps it
        assert labels_since_ranking(db, project_id) == 0


def test_each_kind_is_laid_out_with_its_own_random_share(page_site):
    """#50 item 2: a queue per kind with its own settings: here pairs half at random,
    dialogues none; each kind's items one after another (a person gets one kind at a time)."""
    engine, project_id = page_site
    add_pairs(engine, project_id, 6)
    with session(engine) as db:
        for number in range(6):
            payload = {"id": f"d{number}", "turns": []}
            db.add(Item(project_id=project_id, kind=ItemKind.DIALOGUE, payload=payload))
    queue = QueueSettings.model_validate(
        {"random_share": 0.0, "kinds": {"pair": {"random_share": 0.5}}}
    )
    assert (queue.random_share_of("pair"), queue.random_share_of("dialogue")) == (0.5, 0.0)
    with session(engine) as db:
        assert rank(db, project_id, queue) == 12
        kinds = db.execute(
            select(Item.kind, QueueEntry.share)
            .join(QueueEntry, QueueEntry.item_id == Item.id)
            .order_by(QueueEntry.position)
        ).all()
    assert [k for k, _ in kinds] == [ItemKind.DIALOGUE] * 6 + [ItemKind.PAIR] * 6
    assert [s for k, s in kinds if k == ItemKind.DIALOGUE].count("random") == 0
    assert [s for k, s in kinds if k == ItemKind.PAIR].count("random") == 3
    with pytest.raises(ValidationError, match="kinds.chat"):
        QueueSettings.model_validate({"kinds": {"chat": {"random_share": 0.5}}})


PAIRS = [
    ("회의가 취소됐어요.", "회의 취소라니 윗분들 또 땡땡이네"),
    ("비가 와서 길이 막혀요.", "비 좀 왔다고 길 막히는 꼴 참 가관이다"),
    ("오늘은 일찍 잘게요.", "오늘은 일찍 잘게요."),
    ("점심 메뉴는 국수예요.", "점심이 국수라니 입맛 수준 알 만하다"),
    ("버스가 늦게 왔어요.", "버스가 늦게 왔어요"),
    ("새 휴대폰을 샀어요.", "새 폰 샀다고 자랑질은"),
]


def _settings(engine, project_id: int, **queue) -> None:
    with session(engine) as db:
        project = db.get(Project, project_id)
        project.settings = {**project.settings, "queue": queue}


def test_the_web_queue_serves_its_order_records_the_share_and_refits(page_site):
    engine, project_id = page_site
    _settings(engine, project_id, random_share=0.5, refit_every=4, double_share=0.5)
    admin = client_for(engine, "admin")
    csv = "neutral,implicit\n" + "".join(f"{a},{b}\n" for a, b in PAIRS)
    assert upload(admin, project_id, "pair", "kda.csv", csv, 1).status_code == 303
    with session(engine) as db:  # the upload's background task ranked the new items
        entries = db.scalars(select(QueueEntry).order_by(QueueEntry.position)).all()
        order, shares = [e.item_id for e in entries], {e.item_id: e.share for e in entries}
        first_ranking = entries[0].ranked_at
        per_item = Counter(db.scalars(select(Assignment.item_id)))
        ann1_id = db.scalar(select(User.id).where(User.username == "ann1"))
        assigned = set(db.scalars(select(Assignment.item_id).where(Assignment.user_id == ann1_id)))
    assert sorted(shares.values()) == ["random"] * 3 + ["ranked"] * 3
    assert sorted(per_item.values()) == [1, 1, 1, 2, 2, 2]  # half the items doubled

    ann1 = client_for(engine, "ann1")
    served = []
    for number in range(4):
        page = ann1.get(f"/projects/{project_id}/queue").text
        item_id = int(page.split('id="start"')[0].rsplit('href="/items/', 1)[1].split('"')[0])
        served.append(item_id)
        same = PAIRS[order.index(item_id)][0] == PAIRS[order.index(item_id)][1]
        answer = {"consistent": "no" if same else "yes", "offensive": "no" if same else "yes"}
        assert label(ann1, item_id, **answer).status_code == 303
    assert served == [i for i in order if i in assigned][:4]  # in the stored order
    with session(engine) as db:
        labels = db.scalars(select(Annotation).order_by(Annotation.id)).all()
        assert [a.share for a in labels] == [shares[i] for i in served]
        ranked_again = db.scalar(select(QueueEntry.ranked_at).limit(1))
        assert ranked_again > first_ranking  # the 4th label refit the judges, re-ranked
        assert labels_since_ranking(db, project_id) == 0
