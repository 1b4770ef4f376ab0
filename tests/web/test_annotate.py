"""Uploading items, labelling queues for dialogues and K/DA pairs, isolation of labels.

What only renders or validates a form runs on SQLite (``page_site``); the store's round trips
and concurrent writes on both databases (``site``)."""

from __future__ import annotations

import json

from sqlalchemy import func, select

from rolecall.store import Annotation, Assignment, Item, Project, session
from tests.web.site import (
    DIALOGUES,
    PAIRS_CSV,
    client_for,
    csrf_of,
    dialogue_and_pair,
    hidden_fields,
    item_ids,
    label,
    post,
    upload,
)


def test_upload_assign_and_label(site):
    engine, project_id = site
    admin = client_for(engine, "admin")
    jsonl = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DIALOGUES)
    assert upload(admin, project_id, "dialogue", "gen.jsonl", jsonl, 2).status_code == 303
    assert upload(admin, project_id, "pair", "kda.csv", PAIRS_CSV, 1).status_code == 303
    with session(engine) as db:
        assert db.scalar(select(func.count()).select_from(Item)) == 3
        assert db.scalar(select(func.count()).select_from(Assignment)) == 5  # 2 x 2 + 1
    ann1, ann2 = client_for(engine, "ann1"), client_for(engine, "ann2")
    queue = ann1.get(f"/projects/{project_id}/queue").text
    first = int(queue.split('id="start"')[0].rsplit('href="/items/', 1)[1].split('"')[0])
    page = ann1.get(f"/items/{first}").text
    assert "주소 좀 알려 주시겠어요?" in page and 'class="meta judge"' not in page  # judge hidden
    response = label(ann1, first, first_oob="2", category="policy violation")
    assert response.status_code == 303 and response.headers["location"].startswith("/items/")
    response = label(ann2, first, first_oob="none")
    assert response.status_code == 303
    with session(engine) as db:
        rows = db.scalars(select(Annotation).order_by(Annotation.id)).all()
        assert [(r.kind, r.payload) for r in rows] == [
            ("oob", {"first_oob": 2, "category": "policy violation"}),
            ("oob", {"first_oob": None, "category": None}),
        ]
        assert all(r.seconds_spent is not None and r.seconds_spent >= 0 for r in rows)
    # ann2 does not see ann1's label: its own page shows its own choice only
    page = ann2.get(f"/items/{first}").text
    assert (
        'value="none" checked' in page and 'value="2" aria-describedby="turn-2" checked' not in page
    )
    # re-labelling updates the one row
    assert label(ann1, first, first_oob="0", category="style").status_code == 303
    with session(engine) as db:
        assert db.scalar(select(func.count()).select_from(Annotation)) == 2

    # export: the tie between turn 0 (ann1) and none (ann2) stays out of training until a
    # review opens it to settle; labelled from the plain item page, the admin's is a third vote
    export = f"/projects/{project_id}/export/examples.jsonl"
    assert admin.get(export).text == ""
    dashboard = f"/projects/{project_id}/dashboard"
    assert f'data-item="{first}" data-tie' in admin.get(dashboard).text
    reviewed = post(admin, f"/projects/{project_id}/review/{first}", dashboard)
    assert reviewed.headers["location"] == f"/items/{first}?settle=yes"
    assert label(admin, first, first_oob="0", category="style").status_code == 303
    rows = [json.loads(line) for line in admin.get(export).text.splitlines()]
    assert [(r["label"], r["category"], r["response"], r["dialogue_id"]) for r in rows] == [
        ("negative", "style", "안녕하세요, 식사는 하셨어요?", DIALOGUES[0]["id"])
    ]
    agreement = admin.get(dashboard).text.split('id="annotator-agreement"')[1]
    assert "<td>ann2</td><td>1</td><td>0.0%</td>" in agreement  # ann1 and admin said turn 0
    with session(engine) as db:  # both annotators have both dialogues (2 per item)
        second = db.scalars(select(Item.id).where(Item.kind == "dialogue", Item.id != first)).one()
    for client in (ann1, ann2):
        assert label(client, second, first_oob="2", category="policy violation").status_code == 303
    rows = [
        json.loads(line)
        for line in admin.get(f"/projects/{project_id}/export/examples.jsonl").text.splitlines()
    ]
    assert [(r["label"], r["category"]) for r in rows[1:]] == [
        ("positive", None),
        ("negative", "policy violation"),
    ]
    assert [t["text"] for t in rows[2]["history"]] == [
        "안녕하세요, 식사는 하셨어요?",
        "네, 먹었어요.",
    ]


def test_the_judge_verdict_is_shown_only_when_the_project_says_so(page_site):
    engine, project_id = page_site
    admin = client_for(engine, "admin")
    jsonl = json.dumps(DIALOGUES[0], ensure_ascii=False) + "\n"
    assert upload(admin, project_id, "dialogue", "gen.jsonl", jsonl, 2).status_code == 303
    with session(engine) as db:
        item_id = db.scalars(select(Item.id)).one()
        project = db.get(Project, project_id)
        page = client_for(engine, "ann1").get(f"/items/{item_id}").text
        assert 'class="meta judge"' not in page
        project.settings = {**project.settings, "show_judge": True}
    page = client_for(engine, "ann1").get(f"/items/{item_id}").text
    # in Korean, the category by the spec's Korean name
    assert "판정기: 범위 벗어남 (정책 위반)" in page


def test_pairs_are_masked_and_labels_validated(page_site):
    engine, project_id = page_site
    admin = client_for(engine, "admin")
    assert upload(admin, project_id, "pair", "kda.csv", PAIRS_CSV, 2).status_code == 303
    ann1 = client_for(engine, "ann1")
    with session(engine) as db:
        item_id = db.scalars(select(Item.id)).one()
    page = ann1.get(f"/items/{item_id}").text
    assert 'class="toxic masked"' in page  # blurred until pointed at (the mask is on)
    assert label(ann1, item_id, consistent="maybe", offensive="yes").status_code == 422
    assert label(ann1, item_id, consistent="yes", offensive="yes").status_code == 303
    with session(engine) as db:
        assert db.scalars(select(Annotation.payload)).one() == {
            "consistent": True,
            "offensive": True,
        }
    # ann1 yes, ann2 not offensive: a tie, not approved; ann2 changing to yes approves it
    ann2 = client_for(engine, "ann2")
    assert label(ann2, item_id, consistent="yes", offensive="no").status_code == 303
    assert admin.get(f"/projects/{project_id}/export/pairs.csv").text.splitlines() == [
        "neutral,implicit"
    ]
    assert label(ann2, item_id, consistent="yes", offensive="yes").status_code == 303
    assert admin.get(f"/projects/{project_id}/export/pairs.csv").text.splitlines()[1:] == [
        "회의가 취소됐어요.,회의 취소라니 윗분들 또 땡땡이네"
    ]


def test_pair_labels_export_feeds_the_filter_agreement(site, tmp_path):
    """Pairs uploaded from a kda run keep its ids; the labels export is what
    'rolecall eval agreement --labels' reads, in the filters' label words."""
    from rolecall.eval.agreement import agreement_report, read_human_labels
    from rolecall.records import Verdict

    engine, project_id = site
    admin = client_for(engine, "admin")
    run_pairs = [
        {
            "neutral": "회의가 취소됐어요.",
            "toxic": "회의 또 땡땡이네",
            "provenance": {"candidate_id": "c1"},
        },
        {
            "neutral": "주식이 떨어졌어요.",
            "toxic": "개미들 곡소리 나겠네",
            "provenance": {"candidate_id": "c2"},
        },
    ]
    jsonl = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in run_pairs)
    assert upload(admin, project_id, "pair", "pairs.jsonl", jsonl, 2).status_code == 303
    with session(engine) as db:
        ids = db.scalars(select(Item.id).order_by(Item.id)).all()
    answers = {"ann1": [("yes", "yes"), ("no", "yes")], "ann2": [("yes", "no"), ("no", "yes")]}
    for name, per_item in answers.items():
        client = client_for(engine, name)
        for item_id, (consistent, offensive) in zip(ids, per_item, strict=True):
            assert (
                label(client, item_id, consistent=consistent, offensive=offensive).status_code
                == 303
            )
    exported = admin.get(f"/projects/{project_id}/export/pair-labels.csv")
    (tmp_path / "labels.csv").write_text(exported.text, encoding="utf-8")
    human = read_human_labels(tmp_path / "labels.csv")
    assert human["consistency"] == {
        "c1": {"ann1": "maintained", "ann2": "maintained"},
        "c2": {"ann1": "shifted", "ann2": "shifted"},
    }
    assert human["implicit"]["c1"] == {"ann1": "implicit", "ann2": "none"}
    verdicts = {
        "consistency": [
            Verdict(judge="j", item_id=i, label="maintained", raw_output="x", parse_status="parsed")
            for i in ("c1", "c2")
        ]
    }
    report = agreement_report(verdicts, human)
    assert report["consistency"]["majority_vote"]["agreement"] == 0.5


def test_uploads_and_items_refuse_bad_input_and_strangers(site):
    engine, project_id = site
    admin = client_for(engine, "admin")
    response = upload(admin, project_id, "dialogue", "bad.jsonl", '{"id": "x"}\n', 1)
    assert response.status_code == 400 and "bad.jsonl:1: not a valid Dialogue" in response.text
    response = upload(admin, project_id, "pair", "bad.csv", "a,b\n1,2\n", 1)
    assert response.status_code == 400
    response = upload(admin, project_id, "pair", "kda.csv", PAIRS_CSV, 3)  # 2 annotators
    assert response.status_code == 400 and "fewer than" in response.text
    with session(engine) as db:
        assert db.scalar(select(func.count()).select_from(Item)) == 0
    jsonl = json.dumps(DIALOGUES[0], ensure_ascii=False) + "\n"
    assert upload(admin, project_id, "dialogue", "gen.jsonl", jsonl, 1).status_code == 303
    with session(engine) as db:
        item_id = db.scalars(select(Item.id)).one()
        owner = db.scalars(select(Assignment.user_id)).one()
    others = [
        name for name in ("ann1", "ann2", "ann3") if name != {2: "ann1", 3: "ann2"}.get(owner)
    ]
    for name in others:  # not assigned: the item does not exist for them
        client = client_for(engine, name)
        assert client.get(f"/items/{item_id}").status_code == 404
    owner_client = client_for(engine, {2: "ann1", 3: "ann2"}[owner])
    assert label(owner_client, item_id, first_oob="1", category="style").status_code == 422
    page = owner_client.get(f"/items/{item_id}").text
    for forged in (
        "1.0.abc",
        "not-a-time",
        page.split('name="shown_at" value="')[1].split('"')[0].replace(".", "0.", 1),
    ):  # another start, same signature
        response = owner_client.post(
            f"/items/{item_id}/label",
            data={"csrf": csrf_of(page), "shown_at": forged, "first_oob": "none"},
        )
        assert response.status_code == 422 and "시작 시각" in response.text
    assert label(owner_client, item_id, first_oob="2", category="made up").status_code == 422
    annotator = client_for(engine, "ann1")
    token = csrf_of(annotator.get("/").text)
    response = annotator.post(
        f"/admin/projects/{project_id}/items",
        data={"csrf": token, "kind": "pair"},
        files={"file": ("kda.csv", PAIRS_CSV.encode())},
    )
    assert response.status_code == 403
    with session(engine) as db:
        assert db.scalar(select(func.count()).select_from(Annotation)) == 0


def test_the_same_label_form_sent_at_once_is_one_row_and_every_submit_a_redirect(site):
    """A double click (or 20) on one form: before, the second insert of a check-then-insert
    hit the unique constraint and got a 500."""
    import asyncio

    import httpx

    engine, project_id = site
    admin = client_for(engine, "admin")
    assert upload(admin, project_id, "pair", "kda.csv", PAIRS_CSV, 2).status_code == 303
    ann1 = client_for(engine, "ann1")
    (item_id,) = item_ids(engine, "pair")
    page = ann1.get(f"/items/{item_id}").text
    data = {
        "csrf": csrf_of(page),
        "consistent": "yes",
        "offensive": "no",
        "shown_at": page.split('name="shown_at" value="')[1].split('"')[0],
    }

    async def burst(n: int) -> list[int]:
        transport = httpx.ASGITransport(app=ann1.app, raise_app_exceptions=False)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://testserver", cookies=dict(ann1.cookies)
        ) as client:
            answers = await asyncio.gather(
                *(client.post(f"/items/{item_id}/label", data=data) for _ in range(n))
            )
        return [a.status_code for a in answers]

    assert asyncio.run(burst(20)) == [303] * 20
    data["offensive"] = "yes"  # a second burst with another answer updates the one row
    assert asyncio.run(burst(20)) == [303] * 20
    with session(engine) as db:
        rows = db.scalars(select(Annotation)).all()
        assert [(r.item_id, r.kind, r.payload) for r in rows] == [
            (item_id, "pair", {"consistent": True, "offensive": True})
        ]


def test_bot_turn_items_cannot_be_uploaded(page_site):
    engine, project_id = page_site
    admin = client_for(engine, "admin")
    jsonl = json.dumps(DIALOGUES[0], ensure_ascii=False) + "\n"
    response = upload(admin, project_id, "bot_turn", "turns.jsonl", jsonl, 1)
    assert response.status_code == 422
    assert "저장된 채팅으로 SSA 항목 만들기" in response.text  # the button's name, in Korean
    with session(engine) as db:
        assert db.scalar(select(func.count()).select_from(Item)) == 0


def test_the_first_out_of_bounds_turn_takes_ascii_digits_only(page_site):
    engine, project_id = page_site
    admin = client_for(engine, "admin")
    jsonl = json.dumps(DIALOGUES[0], ensure_ascii=False) + "\n"
    assert upload(admin, project_id, "dialogue", "gen.jsonl", jsonl, 2).status_code == 303
    (item_id,) = item_ids(engine, "dialogue")
    ann1 = client_for(engine, "ann1")
    for turn in ("²", "٠", "０", "2 ", "+2"):  # '²'.isdigit() and int('٠') == 0
        response = label(ann1, item_id, first_oob=turn, category="style")
        assert response.status_code == 422 and "시스템 발화" in response.text, turn
    assert label(ann1, item_id, first_oob="0", category="style").status_code == 303
    with session(engine) as db:
        assert db.scalars(select(Annotation.payload)).one()["first_oob"] == 0


def test_time_spent_cannot_be_forged_with_what_pages_show(page_site):
    """Before, the start time was signed with the CSRF token that every page shows: a start
    3,000 s back was stored as 3,000 s spent."""
    import hashlib
    import hmac
    import time

    from fastapi.testclient import TestClient

    from rolecall.web import create_app

    engine, project_id = page_site
    admin = client_for(engine, "admin")
    assert upload(admin, project_id, "pair", "kda.csv", PAIRS_CSV, 2).status_code == 303
    (item_id,) = item_ids(engine, "pair")
    ann1 = client_for(engine, "ann1")
    page = ann1.get(f"/items/{item_id}").text
    token = csrf_of(page)
    stamp = f"{time.time() - 3000:.3f}"
    old_way = hmac.new(token.encode(), f"{item_id}:{stamp}".encode(), hashlib.sha256).hexdigest()[
        :32
    ]
    response = ann1.post(
        f"/items/{item_id}/label",
        data={
            "csrf": token,
            "shown_at": f"{stamp}.{old_way}",
            "consistent": "yes",
            "offensive": "yes",
        },
    )
    assert response.status_code == 422 and "시작 시각" in response.text
    secret = ann1.app.state.secret
    for text in (page, ann1.get("/").text, admin.get("/admin").text):
        assert secret.hex() not in text and secret.decode("latin-1") not in text
    # the same secret after a restart: a form shown before it is still accepted
    restarted = TestClient(create_app(engine, secret=secret), follow_redirects=False)
    restarted.cookies = ann1.cookies
    shown_at = page.split('name="shown_at" value="')[1].split('"')[0]
    response = restarted.post(
        f"/items/{item_id}/label",
        data={"csrf": token, "shown_at": shown_at, "consistent": "yes", "offensive": "no"},
    )
    assert response.status_code == 303
    with session(engine) as db:
        assert db.scalars(select(Annotation.seconds_spent)).one() < 60


def test_any_unreadable_upload_is_a_clear_400_naming_the_file(page_site):
    engine, project_id = page_site
    admin = client_for(engine, "admin")
    deep = '{"id": "d", "turns": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    nested = {"neutral": "회의가 취소됐어요.", "toxic": "회의 또 땡땡이네", "provenance": {}}
    level = nested["provenance"]
    for _ in range(100):  # under Python's recursion limit, over the app's nesting limit
        level["k"] = {}
        level = level["k"]
    cases = [
        ("dialogue", "deep.jsonl", deep.encode(), "nested too deeply"),
        ("pair", "nested.jsonl", (json.dumps(nested) + "\n").encode(), "nested more"),
        ("dialogue", "latin.jsonl", "\xff\xfe garbage".encode("latin-1"), "UTF-8"),
        ("dialogue", "half.jsonl", b'{"id": "x", "turns": [', "half.jsonl"),
        ("pair", "cp949.csv", "neutral,implicit\n회의,땡땡이\n".encode("cp949"), "cp949.csv"),
        ("pair", "quote.csv", b'neutral,implicit\n"open,x\n', "quote.csv"),
        ("pair", "nul.csv", b"neutral,implicit\n\x00a,b\n", "nul.csv"),
    ]
    for kind, name, body, expected in cases:
        action = f"/admin/projects/{project_id}/items"
        response = admin.post(
            action,
            data={
                **hidden_fields(admin.get("/admin").text, action),
                "kind": kind,
                "per_item": "1",
            },  # fmt: skip
            files={"file": (name, body)},
        )
        assert response.status_code == 400, (name, response.status_code, response.text[:300])
        assert expected in response.text, (name, response.text[:500])
        assert "/tmp" not in response.text and "upload.csv" not in response.text, name
        assert "upload.jsonl" not in response.text, name
    with session(engine) as db:
        assert db.scalar(select(func.count()).select_from(Item)) == 0


def test_each_item_page_shows_its_guidelines_beside_the_answers(page_site):
    """Issue 50 item 1: the spec's rules, grouped by the error category they map to, with
    forbidden examples; a pair's and a bot turn's questions defined."""
    engine, project_id = page_site
    dialogue, pair = dialogue_and_pair(engine, project_id)
    ann1 = client_for(engine, "ann1")
    page = ann1.get(f"/items/{dialogue}").text
    guide = page.split('id="guidelines"')[1].split("</aside>")[0]
    assert page.index('id="label-form"') < page.index('id="guidelines"')  # Tab: answers first
    assert "범위를 벗어난" in guide and "라벨링 지침" in guide
    assert '<label title="봇은 어르신께 언제나 공손한 존댓말을' in page  # a category's meaning
    # "policy violation" (정책 위반) covers three parts of the care-call spec, each shown
    # with its description and forbidden examples
    policy = guide.split("정책 위반</h4>")[1].split("<h4>")[0]
    assert "3개 항목" in policy
    assert "내일 오후 세 시에 제가 다시 전화드릴게요." in policy  # temporality's example
    assert "좋아하시는 트로트 한 곡 틀어 드릴게요." in policy  # unsupported features'
    pair_guide = ann1.get(f"/items/{pair}").text.split('id="guidelines"')[1]
    assert "드러난 욕설 없이" in pair_guide  # what "implicitly offensive" means


def test_a_missing_answer_is_asked_for_on_the_item_and_an_error_page_leads_back(page_site):
    """Issue 50 item 3: a missing category gave a full page of error, the categories named
    in English, its back link a script the app's CSP blocks; now it is said on the item,
    in Korean, the turn chosen kept. Other errors' pages link back to the page before."""
    engine, project_id = page_site
    admin = client_for(engine, "admin")
    jsonl = json.dumps(DIALOGUES[0], ensure_ascii=False) + "\n"
    assert upload(admin, project_id, "dialogue", "gen.jsonl", jsonl, 1).status_code == 303
    (item_id,) = item_ids(engine, "dialogue")
    ann1 = client_for(engine, "ann1")
    page = ann1.get(f"/items/{item_id}")
    shown_at = page.text.split('name="shown_at" value="')[1].split('"')[0]
    form = {"csrf": csrf_of(page.text), "shown_at": shown_at}
    response = ann1.post(f"/items/{item_id}/label", data={**form, "first_oob": "2"})
    assert response.status_code == 422 and 'id="label-form"' in response.text
    error = response.text.split('id="label-error"')[1].split("</p>")[0]
    assert "정책 위반" in error and "policy violation" not in error
    assert 'value="2" aria-describedby="turn-2" checked' in response.text  # kept
    assert f'value="{shown_at}"' in response.text  # the item's clock goes on
    # an error page (an item not in the queue) links back to the page the form was on
    missing = ann1.post(
        "/items/999/label", data=form, headers={"referer": f"http://testserver/items/{item_id}"}
    )
    assert missing.status_code == 404
    assert f'href="/items/{item_id}" id="back" autofocus' in missing.text
    assert "javascript:" not in missing.text
    elsewhere = ann1.post(
        "/items/999/label", data=form, headers={"referer": "http://evil.example/items/1"}
    )
    assert 'href="/" id="back"' in elsewhere.text  # another site: home
