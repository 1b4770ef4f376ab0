"""A person's settings (web/preferences.py): the pages' language, Korean by default and
kept with the account and in a cookie, and the mask over offensive text, on by default
and kept per person; both on SQLite and PostgreSQL."""

from __future__ import annotations

import json

from sqlalchemy import select

from rolecall.store import Item, User, session
from tests.web.site import DIALOGUES, PAIRS_CSV, client_for, post, upload


def settings_of(engine, username: str) -> tuple[str, bool]:
    with session(engine) as db:
        user = db.scalars(select(User).where(User.username == username)).one()
        return user.language, user.mask


def test_korean_by_default_and_the_language_switch_is_the_persons(site):
    engine, project_id = site
    ann1 = client_for(engine, "ann1")
    home = ann1.get("/").text
    assert '<html lang="ko">' in home and "로그아웃" in home and "봇과 채팅하기" in home
    assert 'value="en" lang="en">English</button>' in home  # the switch, in its own words
    queue = f"/projects/{project_id}/queue"
    response = post(ann1, "/settings/language", "/", language="en", next=queue)
    assert response.status_code == 303 and response.headers["location"] == queue
    assert "rolecall_lang=en" in response.headers["set-cookie"]
    assert settings_of(engine, "ann1") == ("en", True)
    page = ann1.get(queue).text
    assert '<html lang="en">' in page and "log out" in page and "로그아웃" not in page
    assert "no such item in your queue" in ann1.get("/items/99999").text  # Python's too
    # the account's setting: another browser logging in as ann1 gets English, ann2 Korean
    assert '<html lang="en">' in client_for(engine, "ann1").get("/").text
    assert '<html lang="ko">' in client_for(engine, "ann2").get("/").text
    # after logging out, the login page stays in English (the cookie) ...
    assert post(ann1, "/logout", "/").status_code == 303
    login = ann1.get("/login").text
    assert '<html lang="en">' in login and ">log in</button>" in login
    # ... and its link switches it back, the next page kept
    response = ann1.get("/login?lang=ko&next=/projects/1/queue")
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=%2Fprojects%2F1%2Fqueue"
    assert '<html lang="ko">' in ann1.get("/login").text
    assert settings_of(engine, "ann1") == ("en", True)  # a cookie, not the account
    refused = post(client_for(engine, "ann2"), "/settings/language", "/", language="fr")
    assert refused.status_code == 422 and "fr&#39; 화면은 없습니다" in refused.text
    too_long = ann1.get("/login?lang=" + "x" * 9)
    assert too_long.status_code == 422


def test_the_mask_is_on_by_default_and_kept_per_person(site):
    engine, project_id = site
    admin = client_for(engine, "admin")
    assert upload(admin, project_id, "pair", "kda.csv", PAIRS_CSV, 2).status_code == 303
    with session(engine) as db:
        item = f"/items/{db.scalars(select(Item.id)).one()}"
    ann1, ann2 = client_for(engine, "ann1"), client_for(engine, "ann2")
    page = ann1.get(item).text
    assert 'class="toxic masked"' in page and 'name="mask" value="off"' in page
    response = post(ann1, "/settings/mask", item, mask="off", next=item)
    assert response.status_code == 303 and response.headers["location"] == item
    assert settings_of(engine, "ann1") == ("ko", False)
    page = client_for(engine, "ann1").get(item).text  # another login: still shown
    assert 'class="toxic"' in page and "masked" not in page.split('class="toxic"')[1][:20]
    assert 'class="toxic masked"' in ann2.get(item).text  # ann2's own setting
    assert post(ann1, "/settings/mask", item, mask="maybe").status_code == 422
    assert (
        post(ann1, "/settings/mask", item, mask="on", next="//elsewhere").headers["location"] == "/"
    )  # only a local page
    assert settings_of(engine, "ann1") == ("ko", True)


def test_a_red_team_attack_turn_is_masked_and_a_plain_dialogue_has_no_mask(page_site):
    from rolecall.store import ItemKind
    from rolecall.web.items import add_items

    engine, project_id = page_site
    attacked = {**DIALOGUES[0], "id": "redteam:run:c1"}
    attacked["metadata"] = {"redteam": {"kind": "kda", "attack": {"turn": 1, "text": "x"}}}
    neutral = {**attacked, "metadata": {"redteam": {"kind": "neutral", "attack": {"turn": 1}}}}
    with session(engine) as db:
        rows = [(attacked, "run:c1"), (neutral, "run:c2"), (DIALOGUES[1], "gen:1")]
        add_items(db, project_id, ItemKind.DIALOGUE, rows, 2)
    with session(engine) as db:
        red, calm, plain = db.scalars(select(Item.id).order_by(Item.id)).all()
    ann1 = client_for(engine, "ann1")
    page = ann1.get(f"/items/{red}").text
    assert '<div class="text masked" id="turn-1" tabindex="0"' in page and 'id="mask-form"' in page
    assert page.count('class="text masked"') == 1  # the attack turn only
    for item in (calm, plain):
        page = ann1.get(f"/items/{item}").text
        assert 'class="text masked"' not in page and 'id="mask-form"' not in page


def test_the_keys_script_is_served_to_a_login(page_site):
    engine, project_id = page_site
    admin = client_for(engine, "admin")
    jsonl = json.dumps(DIALOGUES[0], ensure_ascii=False) + "\n"
    assert upload(admin, project_id, "dialogue", "gen.jsonl", jsonl, 1).status_code == 303
    ann1 = client_for(engine, "ann1")
    script = ann1.get("/keys.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith(
        "text/javascript"
    )
    assert "data-keys" in script.text and "requestSubmit" in script.text
    assert client_for(engine).get("/keys.js").status_code == 303  # to the login page
    with session(engine) as db:
        item = db.scalars(select(Item.id)).one()
    assert '<script src="/keys.js" defer></script>' in ann1.get(f"/items/{item}").text


def test_the_mask_switch_keeps_the_items_clock_and_no_other_start(page_site):
    """Issue 50 item 4: ``m`` reloaded the page and the item's clock started again; the
    reload now carries the start it was shown with, which only counts as this person's
    start on this item."""
    engine, project_id = page_site
    admin = client_for(engine, "admin")
    assert upload(admin, project_id, "pair", "kda.csv", PAIRS_CSV, 2).status_code == 303
    with session(engine) as db:
        item = f"/items/{db.scalars(select(Item.id)).one()}"

    def start(client, url):
        return client.get(url).text.split('name="shown_at" value="')[1].split('"')[0]

    ann1, ann2 = client_for(engine, "ann1"), client_for(engine, "ann2")
    page = ann1.get(item).text
    first = page.split('name="shown_at" value="')[1].split('"')[0]
    assert f'name="next" value="{item}?shown={first}"' in page  # the mask form's way back
    assert start(ann1, f"{item}?shown={first}") == first
    forged = f"{float(first.split('.')[0]) - 3000:.3f}.{first.rpartition('.')[2]}"
    assert start(ann1, f"{item}?shown={forged}") != forged  # an earlier start, not signed
    assert start(ann2, f"{item}?shown={first}") != first  # another person's start
