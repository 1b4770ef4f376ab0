"""A pool of OpenAI-compatible servers behind one model string (#18): the choice of server
on its own (a fake clock), then the ``openai:`` backend against two real loopback stand-in
servers that count, on their side, how many calls they hold at once."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from rolecall.errors import BackendError, BadModelString
from rolecall.llm import LLM, Request, SamplingParams, load_backend
from rolecall.llm.server_pool import ServerPool
from tests.llm.counting_server import CountingServer
from tests.llm.flaky_server import FakeOpenAIServer

openai = pytest.importorskip("openai")


@pytest.fixture(autouse=True)
def _no_proxy_no_key(monkeypatch):
    # a proxy from the environment would swallow requests to 127.0.0.1
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("all_proxy", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def _prompts(n: int) -> list[Request]:
    return [Request(prompt=f"질문 번호 {i}", params=SamplingParams(max_tokens=8)) for i in range(n)]


def _answered_in_order(results) -> None:
    for i, (sample,) in enumerate(results):
        assert sample.ok, sample.error
        assert sample.completion.text == f"echo: 질문 번호 {i}"


def _free_port() -> int:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- the choice of server -----------------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_least_loaded_server_first_ties_in_list_order():
    pool = ServerPool(3, per_server=2, cooldown=10, clock=Clock())
    tickets = [pool.acquire() for _ in range(5)]
    assert [t.server for t in tickets] == [0, 1, 2, 0, 1]
    pool.release(tickets[0], down=False)
    pool.release(tickets[3], down=False)  # server 0 is now the least busy
    assert pool.acquire().server == 0
    assert pool.in_flight == [1, 2, 1] and pool.calls == [3, 2, 1]


def test_a_failed_server_is_skipped_for_its_cooldown_then_tried_again():
    clock = Clock()
    pool = ServerPool(2, per_server=8, cooldown=10, clock=clock)
    early, failing = pool.acquire(), pool.acquire()  # one each: 0, 1
    pool.release(failing, down=True)  # server 1 is down
    assert pool.cooling() == [1]
    assert [pool.acquire().server for _ in range(3)] == [0, 0, 0]  # though 1 holds fewer
    clock.now += 9.9
    assert pool.acquire().server == 0
    clock.now += 0.2  # the cooldown is over: server 1 (now the least busy) is tried again
    again = pool.acquire()
    assert again.server == 1 and pool.cooling() == []
    pool.release(early, down=False)
    pool.release(again, down=False)


def test_a_call_sent_before_the_failure_does_not_end_the_cooldown():
    clock = Clock()
    pool = ServerPool(2, per_server=4, cooldown=10, clock=clock)
    sent_before = [pool.acquire() for _ in range(4)]  # 0, 1, 0, 1
    clock.now += 1
    pool.release(sent_before[1], down=True)
    pool.release(sent_before[3], down=False)  # an answer already on its way
    assert pool.cooling() == [1]
    clock.now += 10.5
    retried = pool.acquire()
    assert retried.server == 1
    pool.release(retried, down=False)  # sent after the failure: the server is back
    assert pool.cooling() == []


def test_every_server_cooling_still_takes_calls():
    pool = ServerPool(2, per_server=1, cooldown=60, clock=Clock())
    for ticket in (pool.acquire(), pool.acquire()):
        pool.release(ticket, down=True)
    assert pool.cooling() == [0, 1]
    assert [pool.acquire().server for _ in range(2)] == [0, 1]  # a lone server behaves so too


def test_a_full_pool_waits_for_a_free_slot():
    pool = ServerPool(2, per_server=1, cooldown=60)
    held = [pool.acquire(), pool.acquire()]
    got = []
    waiter = threading.Thread(target=lambda: got.append(pool.acquire()))
    waiter.start()
    time.sleep(0.1)
    assert got == []  # both servers hold their one call
    pool.release(held[1], down=False)
    waiter.join(timeout=5)
    assert [t.server for t in got] == [1]


# --- model strings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "needle"),
    [
        ("http://a:8000/v1,http://a:8000/v1/", "listed twice"),
        ("http://a:8000/v1,,http://b:8000/v1", "not an http:// or https:// URL"),
        ("http://a:8000/v1,b:8000/v1", "'b:8000/v1' is not an http"),
        ("http://a:8000/v1,http://b:99999/v1", "no valid host"),
    ],
)
def test_bad_pool_strings(location, needle):
    with pytest.raises(BadModelString) as err:
        load_backend(f"openai:{location}?model=m")
    assert needle in str(err.value)
    assert "http://" in err.value.fix


def test_model_id_of_one_url_is_unchanged_and_a_pools_names_every_server():
    one = load_backend("openai:http://localhost:8000/v1/?model=m&max_concurrency=3")
    assert one.model_id == "http://localhost:8000/v1#m"
    assert one.max_concurrency == 3
    pool = load_backend("openai:http://n1:8000/v1, http://n2:8000/v1/?model=m&max_concurrency=3")
    assert pool.model_id == "http://n1:8000/v1,http://n2:8000/v1#m"
    assert pool.max_concurrency == 6  # per server x servers
    assert LLM(pool, concurrency=64).concurrency == 6


def test_a_pools_model_is_discovered_and_checked_on_every_server():
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    with FakeOpenAIServer(models=("m",)) as a, FakeOpenAIServer(models=("m", "x")) as b:
        backend = load_backend(f"openai:{dead},{a.url},{b.url}?timeout=1")
        assert backend.model == "m"  # the first server that answers; b serves it too
        assert backend.model_id == f"{dead},{a.url},{b.url}#m"
    with FakeOpenAIServer(models=("m",)) as a, FakeOpenAIServer(models=("x",)) as b:
        with pytest.raises(BadModelString) as err:
            load_backend(f"openai:{a.url},{b.url}")
    assert f"the server {b.url} does not serve 'm'" in str(err.value)
    assert b.url in err.value.fix


def test_ray_engine_bound_is_the_pools_total():
    from rolecall.engines.ray import server_bound

    assert server_bound("openai:http://n1/v1?model=m&max_concurrency=3") == 3
    assert server_bound("openai:http://n1/v1,http://n2/v1?model=m&max_concurrency=3") == 6
    assert server_bound("openai:http://n1/v1,http://n2/v1,http://n3/v1?model=m") == 48


# --- two real stand-in servers ------------------------------------------------------------


def _pool_llm(*servers, extra: str = "", **kwargs) -> LLM:
    urls = ",".join(s.url for s in servers)
    backend = load_backend(f"openai:{urls}?model=m&timeout=2&max_concurrency=2{extra}")
    return LLM(backend, concurrency=kwargs.pop("concurrency", 16), backoff=0.01, **kwargs)


def test_calls_spread_over_both_servers_within_each_ones_bound():
    with CountingServer() as a, CountingServer() as b:
        llm = _pool_llm(a, b)
        assert llm.concurrency == 4
        _answered_in_order(llm.generate(_prompts(24)))
        assert a.calls + b.calls == 24
        assert min(a.calls, b.calls) >= 8, (a.calls, b.calls)
        assert a.peak <= 2 and b.peak <= 2
        assert max(a.peak, b.peak) == 2  # the bound was reached, so it was tested
        assert llm.backend.pool.calls == [a.calls, b.calls]


def test_a_failing_server_is_skipped_and_the_other_keeps_its_bound():
    with CountingServer() as a, CountingServer(default=503) as b:
        llm = _pool_llm(a, b)
        _answered_in_order(llm.generate(_prompts(16)))
        # b's calls before its first failure came back, at most its bound; then it cooled
        assert 1 <= b.calls <= 2
        assert a.calls == 16 and a.peak <= 2  # every call and every retry went to a
        assert llm.stats.failures == 0 and llm.stats.retries == b.calls


def test_a_server_killed_mid_run_leaves_every_item_answered_by_the_other():
    with CountingServer() as a:
        b = CountingServer().__enter__()
        llm = _pool_llm(a, b)
        pool = llm.backend.pool
        killed_at: list[int] = []

        def kill_b_after_ten(sample) -> None:
            if len(killed_at) == 0 and sum(pool.calls) >= 10:
                b.__exit__(None, None, None)  # the node dies: connections refused
                killed_at.append(pool.calls[1])

        results = llm.generate(_prompts(40), on_sample=kill_b_after_ten)
        _answered_in_order(results)
        assert killed_at and killed_at[0] >= 3  # b had taken its share before it died
        # after the kill b was sent at most the calls that found it dead at once (its bound
        # of 2), then it cooled down (15 s): every retry and every later call went to a
        assert pool.calls[1] - killed_at[0] <= 2
        assert pool.cooling() == [1]
        assert a.calls == 40 - b.calls and a.peak <= 2
        assert llm.stats.failures == 0


def test_a_dead_server_alone_fails_as_before():
    url = f"http://127.0.0.1:{_free_port()}/v1"
    backend = load_backend(f"openai:{url}?model=m&timeout=1")
    llm = LLM(backend, retries=2, backoff=0.01)
    ((sample,),) = llm.generate(_prompts(1))
    assert not sample.ok and sample.attempts == 3  # every retry still tried the one server
    assert backend.pool.calls == [3]
    with pytest.raises(BackendError):
        backend.complete(_prompts(1)[0])
