"""Logging in: throttling per account and per address, the same cost for unknown users,
one session per browser, Secure cookies when asked."""

from __future__ import annotations

import statistics
import time

from fastapi.testclient import TestClient

from rolecall.store import WebSession, session
from rolecall.web import create_app
from rolecall.web.throttle import LoginLimits, LoginThrottle
from tests.web.site import PASSWORD, client_for, csrf_of


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def try_login(client: TestClient, username: str, password: str):
    token = csrf_of(client.get("/login").text)
    return client.post("/login", data={"username": username, "password": password, "csrf": token})


def test_the_41st_quick_wrong_try_from_one_address_is_refused_until_the_lock_ends(site):
    engine, _ = site
    clock = Clock()
    client = TestClient(
        create_app(engine, throttle=LoginThrottle(clock=clock)), follow_redirects=False
    )
    for n in range(40):  # 40 names, 1 try each: no account reaches its own limit
        response = try_login(client, f"guess{n}", "wrong password")
        assert response.status_code == 401, n
        clock.now += 0.04  # 40 tries in 1.6 s, as seen
    refused = try_login(client, "ann1", PASSWORD)  # even the right password
    assert refused.status_code == 429
    assert "15분 뒤에 다시 해 보세요" in refused.text and " +09:00)" in refused.text
    assert 15 * 60 <= int(refused.headers["retry-after"]) <= 15 * 60 + 1
    assert "rolecall_session" not in refused.cookies
    clock.now += 14 * 60
    assert try_login(client, "ann2", PASSWORD).status_code == 429
    clock.now += 61  # the lock ends by itself
    assert try_login(client, "ann1", PASSWORD).status_code == 303


def test_an_account_is_locked_after_its_own_limit_whatever_the_address(site):
    engine, _ = site
    clock = Clock()
    throttle = LoginThrottle(LoginLimits(per_account=3, per_address=100, lockout_s=60), clock=clock)
    app = create_app(engine, throttle=throttle)
    attackers = [
        TestClient(app, follow_redirects=False, client=(f"10.0.0.{n}", 5000)) for n in range(3)
    ]
    for attacker in attackers:  # one wrong try from each of three addresses
        assert try_login(attacker, "ann1", "wrong password").status_code == 401
    response = try_login(attackers[0], "ann1", PASSWORD)
    assert response.status_code == 429 and "60초 뒤에" in response.text
    # an unknown name is counted and locked the same way: a lock does not tell
    for attacker in attackers:
        assert try_login(attacker, "nobody", "wrong password").status_code == 401
    assert try_login(attackers[1], "nobody", "wrong password").status_code == 429
    # other accounts from the same addresses are not affected
    assert try_login(attackers[2], "ann2", PASSWORD).status_code == 303
    clock.now += 61
    assert try_login(attackers[1], "ann1", PASSWORD).status_code == 303


def test_a_success_clears_the_account_count():
    clock = Clock()
    throttle = LoginThrottle(LoginLimits(per_account=3, per_address=100), clock=clock)
    keys = throttle.keys("ann1", "10.0.0.1")
    throttle.failed(keys)
    throttle.failed(keys)
    throttle.succeeded(keys[0])
    throttle.failed(keys)
    throttle.failed(keys)
    assert throttle.wait_left(keys) == 0
    throttle.failed(keys)
    assert throttle.wait_left(keys) == 15 * 60
    clock.now += 15 * 60 * 2  # old failures leave the window too
    assert throttle.wait_left(keys) == 0


def test_unknown_and_known_users_cost_the_same(site):
    """Before: an unknown user took ~2x as long (two scrypt hashes), which told an attacker
    which names exist. Medians of interleaved tries, as the attacker would measure them;
    on a busy machine a measurement may be retried (a real 2x gap fails every one)."""
    engine, _ = site
    limits = LoginLimits(per_account=1000, per_address=1000)
    client = TestClient(create_app(engine, login_limits=limits), follow_redirects=False)
    token = csrf_of(client.get("/login").text)

    def wrong_login(name: str) -> float:
        nonlocal token
        start = time.perf_counter()
        response = client.post(
            "/login", data={"username": name, "password": "wrong one", "csrf": token}
        )
        elapsed = time.perf_counter() - start
        assert response.status_code == 401
        token = csrf_of(response.text)  # each refusal sets a fresh login token
        return elapsed

    gaps = []
    for _attempt in range(3):
        known, unknown = [], []
        for _round in range(5):  # A B B A: a drift in the machine's speed hits both alike
            known.append(wrong_login("ann1"))
            unknown += [wrong_login("no-such-user"), wrong_login("no-such-user")]
            known.append(wrong_login("ann1"))
        a, b = statistics.median(known), statistics.median(unknown)
        gaps.append(abs(a - b) / max(a, b))
        if gaps[-1] < 0.2:
            break
    assert gaps[-1] < 0.2, f"medians differ by {[f'{g:.0%}' for g in gaps]}"


def test_a_new_login_ends_the_browsers_earlier_session(site):
    engine, _ = site
    client = client_for(engine, "ann1")
    first = client.cookies["rolecall_session"]
    with session(engine) as db:
        assert db.query(WebSession).count() == 1
    assert try_login(client, "ann2", PASSWORD).status_code == 303
    assert client.cookies["rolecall_session"] != first
    with session(engine) as db:  # the first login's row is gone, not just the cookie
        assert [s.user.username for s in db.query(WebSession)] == ["ann2"]
    replay = TestClient(create_app(engine), follow_redirects=False)
    replay.cookies.set("rolecall_session", first)
    assert replay.get("/").status_code == 303  # to the login page
    # a login elsewhere (another browser) leaves this one alive
    other = client_for(engine, "ann2")
    assert other.get("/").status_code == 200 and client.get("/").status_code == 200


def test_cookies_are_secure_only_when_asked(site):
    engine, _ = site
    plain = client_for(engine)
    assert "secure" not in plain.get("/login").headers["set-cookie"].lower()
    secure = TestClient(
        create_app(engine, secure_cookies=True),
        follow_redirects=False,
        base_url="https://testserver",
    )
    assert "; secure" in secure.get("/login").headers["set-cookie"].lower()
    response = try_login(secure, "ann1", PASSWORD)
    assert response.status_code == 303
    cookies = response.headers.get_list("set-cookie")
    session_cookie = next(c for c in cookies if c.startswith("rolecall_session="))
    assert "; secure" in session_cookie.lower() and "httponly" in session_cookie.lower()


def test_a_forwarded_address_counts_only_from_a_named_proxy(site):
    """On a real uvicorn server as ``rolecall serve`` configures it: with no proxy named,
    an X-Forwarded-For from loopback changes nothing (the locked address stays locked);
    with loopback named as the proxy, the forwarded address is the client's."""
    import httpx

    from rolecall.web.server import server_config
    from tests.web.browser import serving

    engine, _ = site
    for proxies, forwarded_gets_in in ((None, False), ("127.0.0.1", True)):
        throttle = LoginThrottle(LoginLimits(per_address=3))
        app = create_app(engine, throttle=throttle)
        with serving(app, lambda a, h, p: server_config(a, h, p, proxies)) as url:
            with httpx.Client(base_url=url, follow_redirects=False) as client:
                for n in range(3):  # the connection's own address reaches its limit
                    assert try_login(client, f"guess{n}", "wrong password").status_code == 401
                assert try_login(client, "ann1", PASSWORD).status_code == 429
                token = csrf_of(client.get("/login").text)
                claimed = client.post(
                    "/login",
                    data={"username": "ann1", "password": PASSWORD, "csrf": token},
                    headers={"X-Forwarded-For": "10.1.2.3"},
                )
        assert (claimed.status_code == 303) is forwarded_gets_in, (proxies, claimed.status_code)


def test_a_burst_of_wrong_passwords_checks_at_most_the_limit(site):
    """20 wrong passwords for one account sent at once to a real server: counted before
    they are checked, so at most the account's limit (10) reach the password check (401)
    and the rest are refused (429); then the account is locked, the right password too."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from tests.web.browser import serving

    engine, _ = site
    limits = LoginLimits()
    app = create_app(engine, throttle=LoginThrottle(limits))
    with serving(app) as url:
        clients = [httpx.Client(base_url=url, follow_redirects=False) for _ in range(20)]
        tokens = [csrf_of(c.get("/login").text) for c in clients]
        start = threading.Barrier(len(clients))

        def wrong(n: int) -> int:
            start.wait()
            data = {"username": "ann1", "password": "wrong password", "csrf": tokens[n]}
            return clients[n].post("/login", data=data).status_code

        with ThreadPoolExecutor(len(clients)) as pool:
            codes = list(pool.map(wrong, range(len(clients))))
        assert sorted(set(codes)) <= [401, 429], codes
        assert 1 <= codes.count(401) <= limits.per_account, codes
        assert try_login(clients[0], "ann1", PASSWORD).status_code == 429
        for client in clients:
            client.close()


def test_tries_in_flight_count_toward_the_limit_and_an_error_counts_as_nothing():
    from rolecall.web.throttle import BUSY_WAIT_S

    clock = Clock()
    throttle = LoginThrottle(LoginLimits(per_account=3, per_address=100), clock=clock)
    keys = throttle.keys("ann1", "10.0.0.1")
    assert [throttle.begin(keys) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert throttle.begin(keys) == BUSY_WAIT_S  # three in flight: the limit is taken
    throttle.end(keys, None)  # an error: neither a failure nor a success
    throttle.end(keys, True)  # the right password clears the account's count
    assert throttle.begin(keys) == 0.0
    for _ in range(2):
        throttle.end(keys, False)
    assert throttle.wait_left(keys) == 0  # two failures of three
    assert throttle.begin(keys) == 0.0
    throttle.end(keys, False)
    assert throttle.wait_left(keys) == 15 * 60  # the third failure locks
