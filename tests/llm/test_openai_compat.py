"""The ``openai:`` backend against a real local HTTP server (scripted to fail), and against a
real llama.cpp server running the embedded model (``-m embedded``)."""

from __future__ import annotations

import math
import socket
import sys

import pytest

from rolecall.errors import (
    BackendError,
    BackendNotInstalled,
    BadModelString,
    UnsupportedCapability,
)
from rolecall.llm import LLM, Completion, Message, Request, SamplingParams, load_backend
from rolecall.llm.embedded import embedded_model_path
from rolecall.llm.openai_compat import LOGPROB_FLOOR
from tests.llm.flaky_server import TOKEN_LOGPROB, FakeOpenAIServer
from tests.local_server import LocalServer

openai = pytest.importorskip("openai")


@pytest.fixture(autouse=True)
def _no_proxy_no_key(monkeypatch):
    # A proxy from the environment would swallow requests to 127.0.0.1, and a real key
    # must never be sent to the fake server.
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def _llm(server: FakeOpenAIServer, extra: str = "", **kwargs) -> LLM:
    backend = load_backend(f"openai:{server.url}?model=m&timeout=1{extra}")
    return LLM(backend, retries=kwargs.pop("retries", 4), backoff=0.01, **kwargs)


def _prompts(n: int) -> list[Request]:
    return [Request(prompt=f"질문 번호 {i}", params=SamplingParams(max_tokens=8)) for i in range(n)]


# --- retries, failures, cache -------------------------------------------------------------


def test_transient_failures_are_retried_until_success():
    with FakeOpenAIServer(script=[500, 429, "hang", 502]) as server:
        llm = _llm(server)
        results = llm.generate(_prompts(6))
        for i, (sample,) in enumerate(results):
            assert sample.ok, sample.error
            assert sample.completion.text == f"echo: 질문 번호 {i}"
            assert sample.completion.tokens_out == 4
        assert llm.stats.retries == 4
        assert llm.stats.failures == 0
        assert server.calls == 10


def test_a_server_that_never_recovers_gives_failure_records_and_caches_nothing():
    with FakeOpenAIServer(default=500) as server:
        llm = _llm(server, retries=2)
        results = llm.generate(_prompts(3))
        assert all(not s.ok and "HTTP 500" in s.error and server.url in s.error for (s,) in results)
        assert all(s.attempts == 3 for (s,) in results)
        assert llm.stats.failures == 3
        assert len(llm.stats.failed_items) == 3
        calls = server.calls
        rerun = llm.generate(_prompts(3))
        assert server.calls == calls + 9  # nothing was cached: every item asked again
        assert llm.stats.cache_hits == 0
        assert all(not s.ok for (s,) in rerun)


def test_successes_are_cached():
    with FakeOpenAIServer() as server:
        llm = _llm(server)
        llm.generate(_prompts(2))
        again = llm.generate(_prompts(2))
        assert server.calls == 2
        assert all(s.cached for (s,) in again)


def test_connection_refused_is_transient_and_names_the_url():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backend = load_backend(f"openai:http://127.0.0.1:{port}/v1?model=m&timeout=1")
    with pytest.raises(BackendError) as err:
        backend.complete(_prompts(1)[0])
    assert err.value.transient
    assert f"127.0.0.1:{port}" in str(err.value)


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (401, "set the environment variable MY_KEY"),
        (403, "no access"),
        (404, "ends with /v1"),
        (400, "?logprobs=false"),
    ],
)
def test_non_transient_errors_are_not_retried(status, hint):
    with FakeOpenAIServer(script=[status]) as server:
        llm = _llm(server, "&api_key_env=MY_KEY")  # MY_KEY is not set
        ((sample,),) = llm.generate(_prompts(1))
        assert not sample.ok
        assert sample.attempts == 1
        assert f"HTTP {status}" in sample.error
        assert server.url in sample.error
        assert hint in sample.error
        assert llm.stats.retries == 0 and llm.stats.failures == 1


def test_a_500_that_rejects_the_request_body_is_not_retried():
    # llama-cpp-python's server reports request validation errors as HTTP 500
    message = (
        "1 validation error: {'type': 'literal_error', "
        "'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text'\"}"
    )
    with FakeOpenAIServer(script=[(500, message)]) as server:
        llm = _llm(server)
        ((sample,),) = llm.generate(_prompts(1))
    assert not sample.ok and sample.attempts == 1
    assert "?json_schema=false" in sample.error
    assert "Error code" not in sample.error  # the SDK's repeated status prefix is dropped


# --- model strings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "needle"),
    [
        ("openai:notaurl?model=x", "not an http:// or https:// URL"),
        ("openai:ftp://host/v1?model=x", "not an http:// or https:// URL"),
        ("openai:http:///v1?model=x", "no valid host"),
        ("openai:http://host:99999/v1?model=x", "no valid host"),
        ("openai:http://localhost:8000/v1?model=x&temprature=1", "temprature"),
        ("openai:http://localhost:8000/v1?model=x&timeout=-1", "timeout"),
        ("openai:http://localhost:8000/v1?model=x&chat=maybe", "chat"),
        ("openai:http://localhost:8000/v1?model=", "model"),
    ],
)
def test_bad_model_strings(model, needle):
    with pytest.raises(BadModelString) as err:
        load_backend(model)
    assert needle in str(err.value)


def test_model_is_discovered_when_the_server_serves_exactly_one():
    with FakeOpenAIServer(models=("only-one",)) as server:
        backend = load_backend(f"openai:{server.url}/")
        assert backend.model == "only-one"
        assert backend.model_id == f"{server.url}#only-one"
        backend.complete(_prompts(1)[0])
        assert server.requests[0]["body"]["model"] == "only-one"


def test_missing_model_with_several_served_names_them():
    with FakeOpenAIServer(models=("a", "b")) as server, pytest.raises(BadModelString) as err:
        load_backend(f"openai:{server.url}")
    assert "a, b" in str(err.value) and "?model=NAME" in str(err.value)


def test_missing_model_with_no_server_says_to_name_it():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(BackendError) as err:
        load_backend(f"openai:http://127.0.0.1:{port}/v1?timeout=1")
    assert "?model=NAME" in str(err.value)


def test_api_key_comes_from_the_named_variable(monkeypatch):
    with FakeOpenAIServer() as server:
        load_backend(f"openai:{server.url}?model=m").complete(_prompts(1)[0])
        monkeypatch.setenv("MY_KEY", "sk-test")
        load_backend(f"openai:{server.url}?model=m&api_key_env=MY_KEY").complete(_prompts(1)[0])
        auth = [r["headers"].get("authorization") for r in server.requests]
    assert auth == ["Bearer EMPTY", "Bearer sk-test"]


# --- request shapes and logprobs ----------------------------------------------------------


def test_completion_request_shape_and_logprobs():
    params = SamplingParams(
        temperature=0.3, top_p=0.9, max_tokens=7, stop=("\n", "끝"), seed=11, logprobs=2
    )
    with FakeOpenAIServer() as server:
        backend = load_backend(f"openai:{server.url}?model=m")
        completion = backend.complete(Request(prompt="안녕 하세요", params=params), sample_index=1)
        body = server.requests[0]["body"]
    assert body == {
        "model": "m",
        "prompt": "안녕 하세요",
        "max_tokens": 7,
        "temperature": 0.3,
        "top_p": 0.9,
        "stop": ["\n", "끝"],
        "seed": 12,
        "logprobs": 2,
    }
    assert completion.text == "echo: 안녕 하세요"
    assert completion.tokens_in == 2 and completion.tokens_out == 3
    first = completion.logprobs[0]
    assert (first.token, first.logprob) == ("echo:", TOKEN_LOGPROB)
    # the server sent the alternatives worst-first; they come back best-first
    assert [(a.token, a.logprob) for a in first.top] == [("echo:", -0.25), ("echo:~1", -1.25)]
    assert all(type(t.logprob) is float for t in completion.logprobs)


def test_chat_request_shape_and_logprobs():
    messages = (Message(role="system", content="짧게"), Message(role="user", content="안녕"))
    params = SamplingParams(temperature=0.0, max_tokens=5, logprobs=3)
    with FakeOpenAIServer() as server:
        backend = load_backend(f"openai:{server.url}?model=m")
        completion = backend.complete(Request(messages=messages, params=params))
        body = server.requests[0]["body"]
    assert body == {
        "model": "m",
        "messages": [{"role": "system", "content": "짧게"}, {"role": "user", "content": "안녕"}],
        "max_tokens": 5,
        "temperature": 0.0,
        "top_p": 1.0,
        "logprobs": True,
        "top_logprobs": 3,
    }  # no seed: seed None and sample 0 leave it to the server
    assert completion.text == "echo: 안녕"
    assert [t.token for t in completion.logprobs] == ["echo:", " 안녕"]
    assert [a.logprob for a in completion.logprobs[1].top] == [-0.25, -1.25, -2.25]


def test_chat_json_schema_uses_response_format():
    schema = {
        "type": "object",
        "properties": {"label": {"type": "string"}},
        "required": ["label"],
        "additionalProperties": False,
    }
    request = Request(
        messages=(Message(role="user", content="판정"),), params=SamplingParams(json_schema=schema)
    )
    with FakeOpenAIServer() as server:
        load_backend(f"openai:{server.url}?model=m").complete(request)
        body = server.requests[0]["body"]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": True},
    }


def test_completion_with_json_schema_is_refused_clearly():
    request = Request(prompt="판정:", params=SamplingParams(json_schema={"type": "object"}))
    with FakeOpenAIServer() as server:
        backend = load_backend(f"openai:{server.url}?model=m")
        with pytest.raises(UnsupportedCapability) as err:
            backend.complete(request)
        with pytest.raises(UnsupportedCapability):  # the whole batch, before any call
            LLM(backend).generate([Request(prompt="ok"), request])
        assert server.calls == 0
    assert "chat messages" in str(err.value)


@pytest.mark.parametrize(
    ("options", "request_"),
    [
        ("", Request(prompt="x", score_text="y")),
        ("", Request(prompt="x", params=SamplingParams(grammar='root ::= "a"'))),
        ("&chat=false", Request(messages=(Message(role="user", content="x"),))),
        ("&completion=false", Request(prompt="x")),
        ("&logprobs=false", Request(prompt="x", params=SamplingParams(logprobs=1))),
        (
            "&json_schema=false",
            Request(
                messages=(Message(role="user", content="x"),),
                params=SamplingParams(json_schema={"type": "object"}),
            ),
        ),
    ],
)
def test_unsupported_requests_are_refused_before_any_call(options, request_):
    with FakeOpenAIServer() as server:
        llm = LLM(load_backend(f"openai:{server.url}?model=m{options}"))
        with pytest.raises(UnsupportedCapability):
            llm.generate([request_])
        assert server.calls == 0


def test_missing_sdk_is_reported_as_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail
    with pytest.raises(BackendNotInstalled, match="openai"):
        load_backend("openai:http://localhost:8000/v1?model=m")


def test_max_concurrency_option_bounds_the_llm():
    with FakeOpenAIServer() as server:
        backend = load_backend(f"openai:{server.url}?model=m&max_concurrency=2")
        assert LLM(backend, concurrency=8).concurrency == 2


def test_logprob_conversion_edge_cases():
    # What servers really send: no logprob for an echoed first token, -inf for impossible
    # alternatives, null top_logprobs entries, no usage block, a null chat content.
    legacy = {
        "id": "c",
        "object": "text_completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "text": "ab",
                "finish_reason": "stop",
                "logprobs": {
                    "tokens": ["<p>", "a", "b"],
                    "token_logprobs": [None, -1.0, -math.inf],
                    "top_logprobs": [None, {"a": -1.0, "z": -math.inf}, None],
                },
            }
        ],
    }
    chat = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "logprobs": None,
                "message": {"role": "assistant", "content": None},
            }
        ],
    }
    with FakeOpenAIServer(script=[legacy, chat]) as server:
        backend = load_backend(f"openai:{server.url}?model=m")
        completion = backend.complete(Request(prompt="x", params=SamplingParams(logprobs=1)))
        empty = backend.complete(Request(messages=(Message(role="user", content="x"),)))
    assert [t.token for t in completion.logprobs] == ["a", "b"]
    assert [(a.token, a.logprob) for a in completion.logprobs[0].top] == [
        ("a", -1.0),
        ("z", LOGPROB_FLOOR),
    ]
    assert completion.logprobs[1].logprob == LOGPROB_FLOOR and completion.logprobs[1].top == []
    assert completion.tokens_out == 2  # no usage block: counted from the tokens
    with FakeOpenAIServer(script=[{"id": "c", "choices": []}]) as server:
        with pytest.raises(BackendError, match="no choices") as err:
            load_backend(f"openai:{server.url}?model=m").complete(Request(prompt="x"))
        assert server.url in str(err.value)
    assert math.isfinite(completion.loglikelihood)
    assert Completion.model_validate_json(completion.model_dump_json()) == completion
    assert empty.text == "" and empty.logprobs is None and empty.tokens_out == 0


# --- a real llama.cpp server on the embedded model ----------------------------------------


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """``python -m llama_cpp.server`` on the embedded GGUF; started once, killed after."""
    try:
        import llama_cpp.server.app  # noqa: F401  (needs the [server] extra)
    except ImportError as exc:
        reason = f"llama_cpp.server is not importable ({exc}); pip install 'rolecall[server]'"
        print(reason)
        pytest.skip(reason)
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with LocalServer(embedded_model_path(), log, startup_timeout=120) as server:
        yield server.url


@pytest.mark.embedded
def test_real_llama_cpp_server_completes_korean(llama_server):
    backend = load_backend(f"openai:{llama_server}?timeout=60")  # model discovered
    assert backend.model_id.startswith(llama_server + "#")
    llm = LLM(backend, retries=1, backoff=0.1)
    prompt = "다음은 한국어 대화입니다.\n사용자: 오늘 날씨가 어때요?\n시스템:"
    plain = Request(prompt=prompt, params=SamplingParams(temperature=0.0, max_tokens=16))
    scored = Request(
        prompt=prompt, params=SamplingParams(temperature=0.0, max_tokens=4, logprobs=3)
    )
    (first,), (second,) = llm.generate([plain, scored])
    assert first.ok and second.ok, (first.error, second.error)
    assert first.completion.text.strip() and first.completion.tokens_out > 0
    assert first.completion.tokens_in > 0
    tokens = second.completion.logprobs
    assert tokens and all(t.logprob <= 0.0 for t in tokens)
    assert all(1 <= len(t.top) <= 3 for t in tokens)
    assert all(t.top[0].logprob >= t.top[-1].logprob for t in tokens)
    # temperature 0 is greedy: the first sampled token is the top alternative
    assert tokens[0].token == tokens[0].top[0].token


@pytest.mark.embedded
def test_real_llama_cpp_server_chat_and_its_schema_refusal(llama_server):
    llm = LLM(load_backend(f"openai:{llama_server}?timeout=60"), retries=2, backoff=0.1)
    messages = (Message(role="user", content="안녕하세요?"),)
    chat = Request(
        messages=messages, params=SamplingParams(temperature=0.0, max_tokens=8, logprobs=2)
    )
    schema = Request(
        messages=messages,
        params=SamplingParams(
            max_tokens=8, json_schema={"type": "object", "properties": {"a": {"type": "string"}}}
        ),
    )
    (answer,), (refused,) = llm.generate([chat, schema])
    assert answer.ok, answer.error
    assert answer.completion.tokens_out > 0
    # What llama-cpp-python's server promises: the alternatives are a {text: logprob} dict
    # of the top 2 by the raw logits, plus the sampled token. So a token has 1 to 3 of them:
    # alternatives that decode alike (partial UTF-8 bytes of a Hangul syllable decode to "")
    # merge, and the sampled token is added when it is not among the top 2, which happens
    # even at temperature 0 because the server's default repeat penalty (1.1) acts after the
    # logprobs are taken.
    for t in answer.completion.logprobs:
        assert 1 <= len(t.top) <= 3, t
        assert t.token in {alt.token for alt in t.top}, t
        assert [a.logprob for a in t.top] == sorted((a.logprob for a in t.top), reverse=True)
    # llama-cpp-python's server rejects response_format json_schema (with an HTTP 500):
    # a request error, so no retries, and the fix names the option that avoids it.
    assert not refused.ok and refused.attempts == 1
    assert "?json_schema=false" in refused.error


def test_penalties_are_sent_only_when_set():
    with FakeOpenAIServer() as server:
        backend = load_backend(f"openai:{server.url}?model=m")
        backend.complete(Request(prompt="a"))
        backend.complete(
            Request(prompt="b", params=SamplingParams(frequency_penalty=0.5, presence_penalty=0.25))
        )
        plain, penalised = (r["body"] for r in server.requests)
    assert "frequency_penalty" not in plain and "presence_penalty" not in plain
    assert penalised["frequency_penalty"] == 0.5 and penalised["presence_penalty"] == 0.25
