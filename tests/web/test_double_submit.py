"""The same form submitted 20 times at once to a real server (a double click, a retrying
proxy): every answer a redirect, never a server error, and one effect, on SQLite and
PostgreSQL (issue 34 finding 1; the label form's upsert is in test_annotate.py)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
from sqlalchemy import func, select

from rolecall.store import ProjectMember, User, session
from rolecall.web import create_app
from tests.web.browser import serving
from tests.web.site import PASSWORD, csrf_of

BURST = 20


def logged_in(url: str, username: str) -> httpx.Client:
    client = httpx.Client(base_url=url, follow_redirects=False, timeout=60)
    token = csrf_of(client.get("/login").text)
    response = client.post(
        "/login", data={"username": username, "password": PASSWORD, "csrf": token}
    )
    assert response.status_code == 303, response.text[:300]
    return client


def burst(client: httpx.Client, path: str, data: dict) -> list[int]:
    """``data`` posted ``BURST`` times at once; the status codes."""
    start = threading.Barrier(BURST)

    def send(_: int) -> int:
        start.wait()
        return client.post(path, data=data).status_code

    with ThreadPoolExecutor(BURST) as pool:
        return list(pool.map(send, range(BURST)))


def test_adding_a_user_or_a_member_twice_at_once_does_it_once(site):
    engine, project_id = site
    with serving(create_app(engine)) as url:
        admin = logged_in(url, "admin")
        token = csrf_of(admin.get("/admin").text)
        form = {"csrf": token, "username": "newbie", "password": PASSWORD, "role": "annotator"}
        codes = burst(admin, "/admin/users", form)
        assert codes == [303] * BURST, codes
        codes = burst(
            admin, f"/admin/projects/{project_id}/members", {**form, "username": "newbie"}
        )
        assert codes == [303] * BURST, codes
        # a taken name with another password is still refused: not the same form
        taken = admin.post("/admin/users", data={**form, "password": PASSWORD + "!"})
        assert taken.status_code == 400 and "taken" in taken.text
        admin.close()
    with session(engine) as db:
        user = db.scalars(select(User).where(User.username == "newbie")).one()
        members = db.scalar(
            select(func.count()).select_from(ProjectMember).where(ProjectMember.user_id == user.id)
        )
        assert members == 1
