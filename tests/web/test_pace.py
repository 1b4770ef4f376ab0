"""Item pages (web/pace.py, annotate.undo): progress "done / assigned", the median time
per label, the keys of each answer (categories by letter in the spec's order, with their
Korean names), and undo of the person's last label; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re

from sqlalchemy import select, update

from rolecall.store import Annotation, Item, User, session
from tests.web.site import (
    DIALOGUES,
    PAIRS_CSV,
    client_for,
    hidden_fields,
    item_ids,
    label,
    post,
    upload,
)


def progress(page: str) -> tuple[int, int]:
    found = re.search(r'id="progress" data-done="(\d+)" data-total="(\d+)"', page)
    return int(found.group(1)), int(found.group(2))


def labelled(engine, username: str) -> list[int]:
    with session(engine) as db:
        return list(
            db.scalars(
                select(Annotation.item_id)
                .join(User, User.id == Annotation.user_id)
                .where(User.username == username)
                .order_by(Annotation.item_id)
            )
        )


def two_dialogue_items(engine, project_id: int) -> list[int]:
    """The ids of two dialogue items uploaded by the admin into the project."""
    admin = client_for(engine, "admin")
    jsonl = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DIALOGUES)
    assert upload(admin, project_id, "dialogue", "gen.jsonl", jsonl, 2).status_code == 303
    with session(engine) as db:
        return list(db.scalars(select(Item.id).order_by(Item.id)))


def test_progress_pace_keys_and_undo_on_the_item_pages(site):
    engine, project_id = site
    first, second = two_dialogue_items(engine, project_id)
    ann1 = client_for(engine, "ann1")
    page = ann1.get(f"/items/{first}").text
    assert progress(page) == (0, 2) and "이 종류 라벨링 <strong>0 / 2</strong>" in page
    assert "라벨당 시간: 아직 없음" in page and 'id="undo-form"' not in page
    # system turns by number, none by 0 / n, categories by letter in the spec's order
    assert re.findall(r'name="first_oob" value="(\w+)"[^>]*data-keys="([\w ]+)"', page) == [
        ("0", "1"),
        ("2", "2"),
        ("none", "0 n"),
    ]
    keys = re.findall(
        r'name="category" value="([^"]+)"[^>]*data-keys="(\w)"> <kbd>\w</kbd> ([^<]+)<', page
    )
    assert [(c, k) for c, k, _ in keys] == [
        ("not sensible", "a"),
        ("style", "b"),
        ("not safe", "c"),
        ("wrong persona", "d"),
        ("policy violation", "e"),
    ]
    assert [name for *_, name in keys] == [
        "맥락에 맞지 않음",
        "말투",
        "안전하지 않음",
        "페르소나 위반",
        "정책 위반",
    ]

    assert label(ann1, first, first_oob="2", category="policy violation").status_code == 303
    assert label(ann1, second, first_oob="none").status_code == 303
    with session(engine) as db:  # measured times of 3 s and 5 s: the median is 4
        for item, seconds in ((first, 3.0), (second, 5.0)):
            db.execute(
                update(Annotation).where(Annotation.item_id == item).values(seconds_spent=seconds)
            )
    page = ann1.get(f"/items/{second}").text
    assert progress(page) == (2, 2) and "라벨당 시간(중앙값): 4.0초" in page
    # another kind has its own progress and time per label (issue 50 item 2)
    admin = client_for(engine, "admin")
    assert upload(admin, project_id, "pair", "kda.csv", PAIRS_CSV, 2).status_code == 303
    pair_page = ann1.get(f"/items/{item_ids(engine, 'pair')[0]}").text
    assert progress(pair_page) == (0, 1) and "라벨당 시간: 아직 없음" in pair_page
    assert label(client_for(engine, "ann2"), first, first_oob="none").status_code == 303

    # u: the last label saved goes, then the one before; ann2's stays
    undo = f"/projects/{project_id}/undo"
    response = post(ann1, undo, f"/items/{second}")
    assert response.status_code == 303 and response.headers["location"] == f"/items/{second}"
    assert labelled(engine, "ann1") == [first]
    assert progress(ann1.get(f"/items/{second}").text) == (1, 2)
    assert post(ann1, undo, f"/items/{second}").headers["location"] == f"/items/{first}"
    assert labelled(engine, "ann1") == [] and labelled(engine, "ann2") == [first]
    refused = ann1.post(undo, data={**_fields(ann1, first), "once": "x" * 24})
    assert refused.status_code == 409 and "되돌릴 것이 없습니다" in refused.text
    stranger = client_for(engine, "ann3")  # not a member: no such project
    assert stranger.post(undo, data={**_fields(stranger), "once": "y" * 24}).status_code == 404


def test_undo_from_three_tabs_takes_back_one_label(site):
    """Issue 50 D7: three tabs show the same last label; their undos take it back once,
    and the other two delete nothing (not the labels before it)."""
    engine, project_id = site
    first, second = two_dialogue_items(engine, project_id)
    ann1 = client_for(engine, "ann1")
    assert label(ann1, first, first_oob="none").status_code == 303
    assert label(ann1, second, first_oob="none").status_code == 303
    undo = f"/projects/{project_id}/undo"
    tabs = [hidden_fields(ann1.get(f"/items/{second}").text, undo) for _ in range(3)]
    assert len({tab["once"] for tab in tabs}) == 3 and len({tab["label"] for tab in tabs}) == 1
    answers = [ann1.post(undo, data=tab) for tab in tabs]
    assert [a.status_code for a in answers] == [303, 409, 409]
    assert "다른 탭이나 창에서 마지막 라벨이 바뀌었습니다" in answers[1].text
    assert labelled(engine, "ann1") == [first]


def _fields(client, item: int | None = None) -> dict:
    """The CSRF token of the client's session (any page shows it)."""
    page = client.get(f"/items/{item}" if item else "/").text
    return {"csrf": re.search(r'name="csrf" value="([^"]+)"', page).group(1)}
