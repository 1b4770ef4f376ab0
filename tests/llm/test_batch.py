"""`rolecall llm batch` as a user runs it: a real subprocess, killed with SIGKILL, resumed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rolecall.jsonl import read_jsonl
from tests.cli_runs import cached_calls, kill_when, last_run_stats, lines, rolecall, run_cli


def write_prompts(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(count):
            handle.write(
                json.dumps(
                    {"id": f"p{i}", "prompt": f"{i}번 인사말: 안녕하세요,"}, ensure_ascii=False
                )
                + "\n"
            )


def outputs(path: Path) -> dict:
    rows = list(read_jsonl(path))
    keys = [(r["id"], r["sample"]) for r in rows]
    assert len(keys) == len(set(keys)), "duplicated outputs"
    return {k: r["text"] for k, r in zip(keys, rows)}


def check_kill_and_resume(
    tmp_path: Path, model: str, count: int, n: int, kill_at: int, extra: list[str]
) -> None:
    prompts = tmp_path / "prompts.jsonl"
    write_prompts(prompts, count)
    common = [str(prompts), "-m", model, "-n", str(n), "--seed", "3", "--no-progress", *extra]

    reference = tmp_path / "reference"
    done = run_cli(
        "llm",
        "batch",
        *common,
        "--out",
        str(reference / "out.jsonl"),
        "--cache",
        str(reference / "cache.sqlite"),
    )
    assert done.returncode == 0, done.stderr

    run = tmp_path / "run"
    out, cache = run / "out.jsonl", run / "cache.sqlite"
    args = ["llm", "batch", *common, "--out", str(out), "--cache", str(cache)]
    kill_when(rolecall(*args), out, kill_at)
    finished_before = cached_calls(cache)
    assert kill_at <= finished_before < count * n

    resumed = run_cli(*args)
    assert resumed.returncode == 0, resumed.stderr
    assert last_run_stats(run)["calls"] == count * n - finished_before
    assert outputs(out) == outputs(reference / "out.jsonl")  # nothing lost, nothing doubled
    assert len(outputs(out)) == count * n

    again = run_cli(*args)  # a third run has nothing left to do
    assert again.returncode == 0 and last_run_stats(run)["calls"] == 0


def test_killed_batch_resumes_without_loss_or_duplicates_fake(tmp_path):
    calls = tmp_path / "calls.txt"
    check_kill_and_resume(
        tmp_path,
        f"fake:k?delay=0.03&calls_file={calls}",
        count=40,
        n=2,
        kill_at=10,
        extra=["--concurrency", "4"],
    )


@pytest.mark.embedded
def test_killed_batch_resumes_without_loss_or_duplicates_embedded(tmp_path):
    check_kill_and_resume(
        tmp_path,
        "llamacpp:embedded",
        count=8,
        n=2,
        kill_at=4,
        extra=["--max-tokens", "12", "--temperature", "0.8"],
    )


def test_failed_items_are_recorded_and_the_run_exits_non_zero(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    write_prompts(prompts, 5)
    out = tmp_path / "out.jsonl"
    result = run_cli(
        "llm",
        "batch",
        str(prompts),
        "-m",
        "fake:x?permanent=true",
        "--out",
        str(out),
        "--no-progress",
        "--retries",
        "1",
    )
    assert result.returncode == 3
    assert "5 of 5 LLM calls failed" in result.stderr and "fix:" in result.stderr
    failures = list(read_jsonl(tmp_path / "out.jsonl.failures.jsonl"))
    assert sorted(f["id"] for f in failures) == [f"p{i}" for i in range(5)]
    assert all("fake failure" in f["error"] for f in failures)


@pytest.mark.parametrize(
    "content, needle",
    [
        ('{"id": "a", "prompt": "x"}\n{"id": "b", "prompt": \n', "prompts.jsonl:2: not valid JSON"),
        ('["not", "an", "object"]\n', "prompts.jsonl:1: expected a JSON object"),
        ('{"id": "a"}\n', "prompts.jsonl:1: not a valid request"),
        ('{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n', "id 'a' appears twice"),
        ("", "has no requests"),
    ],
)
def test_malformed_input_is_named_with_its_line(tmp_path, content, needle):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(content, encoding="utf-8")
    result = run_cli(
        "llm", "batch", str(prompts), "-m", "fake:x", "--out", str(tmp_path / "out.jsonl")
    )
    assert result.returncode != 0 and needle in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_missing_input_and_bad_model_are_clear(tmp_path):
    result = run_cli(
        "llm", "batch", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o.jsonl")
    )
    assert result.returncode != 0 and "nope.jsonl: file not found" in result.stderr
    prompts = tmp_path / "p.jsonl"
    write_prompts(prompts, 1)
    result = run_cli(
        "llm", "batch", str(prompts), "-m", "llama:embedded", "--out", str(tmp_path / "o.jsonl")
    )
    assert result.returncode == 2 and "unknown backend 'llama'" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_dead_http_server_gives_failure_records_and_a_non_zero_exit(tmp_path):
    from tests.llm.flaky_server import FakeOpenAIServer

    prompts = tmp_path / "prompts.jsonl"
    write_prompts(prompts, 4)
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(default=503) as server:
        result = run_cli(
            "llm",
            "batch",
            str(prompts),
            "-m",
            f"openai:{server.url}?model=m&timeout=2",
            "--out",
            str(out),
            "--retries",
            "2",
            "--no-progress",
        )
        assert server.calls == 4 * 3  # every item: the first try and two retries
    assert result.returncode == 3, result.stderr
    assert "4 of 4 LLM calls failed" in result.stderr and "4 failures" in result.stderr
    failures = list(read_jsonl(tmp_path / "out.jsonl.failures.jsonl"))
    assert len(failures) == 4 and all(f["attempts"] == 3 for f in failures)
    assert all("503" in f["error"] and server.url in f["error"] for f in failures)
    assert lines(out) == 0
