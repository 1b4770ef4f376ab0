"""The LLM front door on the fake backend: cache, retries, failures, capability checks."""

import pytest

from rolecall.errors import UnsupportedCapability
from rolecall.llm import LLM, Cache, Request, SamplingParams, load_backend

PARAMS = SamplingParams(temperature=0.7, max_tokens=8, seed=3)


def requests(count):
    return [Request(prompt=f"질문 {i}: 오늘 기분이 어떠세요?", params=PARAMS) for i in range(count)]


def texts(results):
    return [[s.completion.text for s in samples] for samples in results]


def test_rerun_makes_zero_backend_calls_and_gives_identical_outputs(tmp_path):
    cache_path = tmp_path / "cache.sqlite"
    first = LLM(load_backend("fake:a"), Cache(cache_path))
    out1 = first.generate(requests(10), n=3)
    assert first.backend.calls == 30 and first.stats.calls == 30
    assert first.stats.tokens_out > 0 and first.stats.tokens_in > 0

    second = LLM(load_backend("fake:a"), Cache(cache_path))  # a new process would do this
    out2 = second.generate(requests(10), n=3)
    assert second.backend.calls == 0 and second.stats.calls == 0
    assert second.stats.cache_hits == 30
    assert texts(out1) == texts(out2)
    assert all(s.cached for samples in out2 for s in samples)


def test_samples_differ_by_index_and_keep_request_order():
    llm = LLM(load_backend("fake:a"))
    out = llm.generate(requests(4), n=4)
    assert [[s.request_index for s in samples] for samples in out] == [[i] * 4 for i in range(4)]
    assert [s.sample_index for s in out[0]] == [0, 1, 2, 3]
    assert len({s.completion.text for s in out[0]}) > 1


def test_transient_failures_are_retried():
    llm = LLM(load_backend("fake:a?fail_first=3"), retries=4, backoff=0.001)
    out = llm.generate(requests(2))
    assert all(s.ok for samples in out for s in samples)
    assert llm.stats.retries == 3 and llm.stats.failures == 0


def test_permanent_failures_become_records_and_are_not_cached(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    llm = LLM(load_backend("fake:a?permanent=true"), cache, retries=4, backoff=0.001)
    out = llm.generate(requests(3), n=2)
    flat = [s for samples in out for s in samples]
    assert all(not s.ok and "fake failure" in s.error and s.attempts == 1 for s in flat)
    assert llm.stats.failures == 6 and len(llm.stats.failed_items) == 6
    assert len(cache) == 0


def test_retries_are_bounded():
    llm = LLM(load_backend("fake:a?fail_first=100"), retries=2, backoff=0.001)
    sample = llm.generate(requests(1))[0][0]
    assert not sample.ok and sample.attempts == 3 and llm.stats.retries == 2


def test_unsupported_capability_refuses_the_whole_batch_before_any_call():
    llm = LLM(load_backend("fake:a"))
    bad = Request(prompt="x", params=SamplingParams(json_schema={"type": "object"}))
    with pytest.raises(UnsupportedCapability) as info:
        llm.generate(requests(3) + [bad])
    assert "json_schema" in str(info.value) and info.value.fix
    assert llm.backend.calls == 0


def test_concurrency_is_bounded_by_the_backend():
    backend = load_backend("fake:a")
    assert LLM(backend, concurrency=100).concurrency == backend.max_concurrency
    assert LLM(backend, concurrency=2).concurrency == 2


def test_request_validation():
    with pytest.raises(ValueError):
        Request()
    with pytest.raises(ValueError):
        Request(prompt="a", messages=())
    with pytest.raises(ValueError):
        SamplingParams(temperature=-1)
    with pytest.raises(ValueError):
        SamplingParams(json_schema={}, grammar='root ::= "a"')


def test_the_same_call_twice_in_one_batch_is_made_once():
    llm = LLM(load_backend("fake:a?delay=0.01"))
    batch = requests(3) + requests(3)  # every request twice
    out = llm.generate(batch, n=2)
    assert llm.backend.calls == 6 and llm.stats.calls == 6 and llm.stats.cache_hits == 6
    assert texts(out)[:3] == texts(out)[3:]


def test_a_failed_duplicate_is_a_failure_too():
    llm = LLM(load_backend("fake:a?permanent=true"), retries=0)
    out = llm.generate(requests(1) + requests(1))
    assert llm.backend.calls == 1 and llm.stats.failures == 2
    assert out[0][0].error == out[1][0].error and "fake failure" in out[1][0].error
