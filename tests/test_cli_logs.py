"""``rolecall logs``: a real cache file filled by the fake backend through the LLM client."""

from __future__ import annotations

import json
import os
import time

import pytest
from typer.testing import CliRunner

from rolecall.cli.app import app
from rolecall.errors import RolecallError
from rolecall.llm import LLM, Cache, Completion, Message, Request, SamplingParams, load_backend
from tests.cli_runs import run_cli

CHAT = '줄 하나\n"줄" 둘 100%_done'


def call(cache_path, model: str, request: Request, n: int = 1) -> list[Completion]:
    cache = Cache(cache_path)
    try:
        samples = LLM(load_backend(model), cache).generate([request], n)[0]
    finally:
        cache.close()
    assert all(s.ok for s in samples)
    return [s.completion for s in samples]


@pytest.fixture
def filled(tmp_path):
    """Four calls, oldest first: two samples of a prompt (fake:a), a chat (fake:b), a
    perplexity score (fake:a); the clock around them."""
    path = tmp_path / "cache.sqlite"
    before = time.time()
    prompt = Request(
        prompt="오늘 날씨는 어때요?", params=SamplingParams(temperature=0.3, seed=7, max_tokens=20)
    )
    samples = call(path, "fake:a", prompt, n=2)
    time.sleep(0.01)
    chat = call(path, "fake:b", Request(messages=(Message(role="user", content=CHAT),)))[0]
    time.sleep(0.01)
    call(path, "fake:a", Request(prompt="인사:", score_text="안녕하세요 반가워요"))
    return {"path": path, "samples": samples, "chat": chat, "before": before, "after": time.time()}


def logs(*args: str) -> str:
    result = CliRunner().invoke(app, ["logs", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result.stdout


def records(*args: str) -> list[dict]:
    return json.loads(logs(*args, "--json"))


def test_the_list_is_newest_first_with_excerpts(filled):
    text = logs("--cache", str(filled["path"]))
    headers = [line for line in text.splitlines() if not line.startswith("  ")]
    assert len(headers) == 4
    assert [h.split()[4] for h in headers] == [
        "fake:fake-a",
        "fake:fake-b",
        "fake:fake-a",
        "fake:fake-a",
    ]
    # the chat: its message flattened onto one line, its output as the backend gave it
    assert '  prompt: user: 줄 하나 "줄" 둘 100%_done' in text
    assert f"  output: {filled['chat'].text}" in text
    assert "  prompt: 인사:\n  scored: 안녕하세요 반가워요" in text  # the score call
    only = logs("--cache", str(filled["path"]), "-n", "1").splitlines()
    assert only[0] == headers[0] and len(only) == 3


def test_json_records_hold_prompt_parameters_output_and_time(filled):
    calls = records("--cache", str(filled["path"]), "-n", "0")
    assert len(calls) == 4 and all(len(c["id"]) == 64 for c in calls)
    score, chat, *prompts = calls
    assert score["score_text"] == "안녕하세요 반가워요" and score["logprobs"]
    assert chat["messages"] == [{"role": "user", "content": CHAT}] and chat["prompt"] is None
    assert chat["output"] == filled["chat"].text
    assert sorted(p["sample_index"] for p in prompts) == [0, 1]
    assert {p["output"] for p in prompts} == {s.text for s in filled["samples"]}
    for p in prompts:
        assert p["prompt"] == "오늘 날씨는 어때요?" and p["backend"] == "fake"
        assert (p["params"]["temperature"], p["params"]["seed"], p["params"]["max_tokens"]) == (
            0.3,
            7,
            20,
        )
    for c in calls:  # stored when the call was made, in UTC
        stamp = time.mktime(time.strptime(c["time"], "%Y-%m-%dT%H:%M:%S+00:00")) - time.timezone
        assert int(filled["before"]) <= stamp <= filled["after"]


def test_filter_by_model_and_by_text(filled):
    cache = ("--cache", str(filled["path"]))
    assert [c["model"] for c in records(*cache, "-m", "fake-b")] == ["fake-b"]
    assert len(records(*cache, "-m", "FAKE:FAKE-A")) == 3
    assert records(*cache, "-m", "fake-c") == []
    # case-insensitive; quotes, a newline, % and _ are text, not JSON escapes or wildcards
    assert [c["model"] for c in records(*cache, "-q", '하나\n"줄" 둘 100%_DONE')] == ["fake-b"]
    assert records(*cache, "-q", "100%done") == records(*cache, "-q", "1_0") == []
    assert len(records(*cache, "-q", "날씨는", "-m", "fake-a")) == 2
    assert records(*cache, "-q", "반가워요")[0]["score_text"] == "안녕하세요 반가워요"
    # the search looks at the texts, not at the stored JSON's parameter names
    assert records(*cache, "-q", "temperature") == []
    # what the searched call said comes back too, and a word only in an output finds it
    word = filled["chat"].text.split()[0]
    assert any(c["model"] == "fake-b" for c in records(*cache, "-q", word))


def test_one_call_whole_by_a_prefix_of_its_id(filled):
    chat = records("--cache", str(filled["path"]), "-m", "fake-b")[0]
    text = logs(chat["id"][:6].upper(), "--cache", str(filled["path"]))
    assert text.splitlines()[0].startswith(chat["id"][:12] + "  ")
    assert f"## user\n{CHAT}\n" in text and text.endswith(f"## output\n{chat['output']}\n")
    assert '"temperature": 0.7' in text
    assert records(chat["id"][:8], "--cache", str(filled["path"])) == chat


def test_unknown_and_ambiguous_ids(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = Cache(path)
    for key in ("abc1", "abc2"):
        cache.put(key, "fake", "fake-a", Request(prompt=key), 0, Completion(text="ok"))
    cache.close()
    with pytest.raises(RolecallError, match="more than one call") as raised:
        logs("abc", "--cache", str(path))
    assert "more characters" in raised.value.fix
    assert records("abc2", "--cache", str(path))["prompt"] == "abc2"
    with pytest.raises(RolecallError, match="no call with id ff"):
        logs("ff", "--cache", str(path))
    with pytest.raises(RolecallError, match="not a call id"):
        logs("xyz", "--cache", str(path))


def test_the_command_as_a_user_runs_it(tmp_path):
    # through the real entry point; both commands use the default cache, the test's private
    # ROLECALL_CACHE (tests/conftest.py), which the child process inherits
    made = run_cli("llm", "complete", "식사는 하셨어요?", "-m", "fake:x", "--seed", "3")
    assert made.returncode == 0, made.stderr
    listed = run_cli("logs", "--json")
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)
    assert (entry["prompt"], entry["output"], entry["params"]["seed"]) == (
        "식사는 하셨어요?",
        made.stdout.strip(),
        3,
    )
    assert run_cli("logs", "--path").stdout.strip() == os.environ["ROLECALL_CACHE"]
    missing = run_cli("logs", "--cache", str(tmp_path / "none.sqlite"))
    assert missing.returncode == 1 and "no LLM cache here" in missing.stderr
    assert "fix: pass --cache PATH" in missing.stderr
    (tmp_path / "bad.sqlite").write_text("not a database" * 100)
    broken = run_cli("logs", "--cache", str(tmp_path / "bad.sqlite"))
    assert broken.returncode == 1 and "is not a rolecall LLM cache" in broken.stderr
