"""A person's worklist (``web/worklist.py``): the queue page per kind, the next item of
the same kind, their own labels to change."""

from __future__ import annotations

import json

from tests.web.site import (
    DIALOGUES,
    client_for,
    dialogue_and_pair,
    item_ids,
    label,
    upload,
)


def test_the_queue_page_offers_each_kind_not_each_item_and_enter_keeps_to_a_kind(page_site):
    """Issue 50 items 2 and 6: the page listed every item as a link (cherry-picking past
    the queue's order and its random share), and one queue mixed kinds, so that the digit
    keys changed meaning from one item to the next."""
    engine, project_id = page_site
    admin = client_for(engine, "admin")
    jsonl = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DIALOGUES)
    csv = "neutral,implicit\n" + "".join(f"문장 {n}.,바꾼 문장 {n}\n" for n in range(2))
    assert upload(admin, project_id, "pair", "kda.csv", csv, 2).status_code == 303
    assert upload(admin, project_id, "dialogue", "gen.jsonl", jsonl, 2).status_code == 303
    dialogues, pairs = item_ids(engine, "dialogue"), item_ids(engine, "pair")
    ann1 = client_for(engine, "ann1")
    page = ann1.get(f"/projects/{project_id}/queue").text
    assert page.count('href="/items/') == 3  # start, and one start per kind
    for kind in ("dialogue", "pair"):
        assert f'data-kind="{kind}" data-count="2"' in page
    first_dialogue = int(page.split('id="start-dialogue"')[0].rsplit('href="/items/', 1)[1][:-2])
    assert first_dialogue in dialogues
    # a dialogue's label opens the other dialogue, although pairs came first in the queue
    after = label(ann1, first_dialogue, first_oob="none")
    other = next(d for d in dialogues if d != first_dialogue)
    assert after.headers["location"] == f"/items/{other}"
    # the last dialogue done: the next kind
    assert label(ann1, other, first_oob="none").headers["location"] in {
        f"/items/{p}" for p in pairs
    }


def test_my_labels_lists_each_answer_latest_first_with_a_way_to_change_it(page_site):
    """Issue 50 item 7: no history of one's own labels, and nothing to undo from the done
    page; times are written in the project's time zone (KST by default), offset said."""
    engine, project_id = page_site
    dialogue, pair = dialogue_and_pair(engine, project_id)
    ann1 = client_for(engine, "ann1")
    assert label(ann1, dialogue, first_oob="2", category="policy violation").status_code == 303
    assert label(ann1, pair, consistent="yes", offensive="no").status_code == 303
    done = ann1.get(f"/projects/{project_id}/queue").text
    assert 'id="done"' in done and f'href="/projects/{project_id}/labels"' in done
    mine = ann1.get(f"/projects/{project_id}/labels").text
    table = mine.split('id="my-labels"')[1]
    assert table.index(f'data-item="{pair}"') < table.index(f'data-item="{dialogue}"')
    assert "2번째 시스템 발화가 범위를 벗어남 (정책 위반)" in table  # turn 2: the 2nd system one
    assert "내용 유지: 예" in table and "(UTC+09:00)</time>" in table
    assert '<time datetime="' in table and '+09:00">' in table
    # the item opens with the answer given, to change
    assert 'value="2" aria-describedby="turn-2" checked' in ann1.get(f"/items/{dialogue}").text
    # another annotator sees none of these
    other = client_for(engine, "ann2").get(f"/projects/{project_id}/labels").text
    assert 'id="no-labels"' in other
