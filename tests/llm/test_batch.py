"""`rolecall llm batch` as a user runs it: a real subprocess, killed with SIGKILL, resumed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rolecall.jsonl import read_jsonl
from tests.conftest import REPO


def rolecall(*args: str, env_extra: dict | None = None, **popen) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), ROLECALL_PLUGINS="tests.fakes",
               **(env_extra or {}))
    return subprocess.Popen([sys.executable, "-m", "rolecall.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def run_to_end(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    process = rolecall(*args)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except BaseException:  # a timeout here or pytest-timeout's: never leave a run behind
        process.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


def write_prompts(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(count):
            handle.write(json.dumps({"id": f"p{i}", "prompt": f"{i}번 인사말: 안녕하세요,"},
                                    ensure_ascii=False) + "\n")


def lines(path: Path) -> int:
    return path.read_text(encoding="utf-8").count("\n") if path.exists() else 0


def cached_calls(cache: Path) -> int:
    with sqlite3.connect(cache) as db:
        return db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]


def kill_when(process: subprocess.Popen, out: Path, at_least: int, limit: float = 300) -> None:
    deadline = time.monotonic() + limit
    while lines(out) < at_least:
        if process.poll() is not None:
            pytest.fail(f"the run ended before it could be killed: {process.stderr.read()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("the run made no progress")
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def outputs(path: Path) -> dict:
    rows = list(read_jsonl(path))
    keys = [(r["id"], r["sample"]) for r in rows]
    assert len(keys) == len(set(keys)), "duplicated outputs"
    return {k: r["text"] for k, r in zip(keys, rows)}


def last_run_stats(run_dir: Path, stage: str = "llm batch") -> dict:
    """The LLM statistics of the latest start of ``stage`` in a run directory."""
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    runs = [r for r in manifest["runs"] if stage in r.get("stages", {})]
    return runs[-1]["stages"][stage]["llm"]


def check_kill_and_resume(tmp_path: Path, model: str, count: int, n: int, kill_at: int,
                          extra: list[str]) -> None:
    prompts = tmp_path / "prompts.jsonl"
    write_prompts(prompts, count)
    common = [str(prompts), "-m", model, "-n", str(n), "--seed", "3", "--no-progress", *extra]

    reference = tmp_path / "reference"
    done = run_to_end("llm", "batch", *common, "--out", str(reference / "out.jsonl"),
                      "--cache", str(reference / "cache.sqlite"))
    assert done.returncode == 0, done.stderr

    run = tmp_path / "run"
    out, cache = run / "out.jsonl", run / "cache.sqlite"
    args = ["llm", "batch", *common, "--out", str(out), "--cache", str(cache)]
    kill_when(rolecall(*args), out, kill_at)
    finished_before = cached_calls(cache)
    assert kill_at <= finished_before < count * n

    resumed = run_to_end(*args)
    assert resumed.returncode == 0, resumed.stderr
    assert last_run_stats(run)["calls"] == count * n - finished_before
    assert outputs(out) == outputs(reference / "out.jsonl")  # nothing lost, nothing doubled
    assert len(outputs(out)) == count * n

    again = run_to_end(*args)  # a third run has nothing left to do
    assert again.returncode == 0 and last_run_stats(run)["calls"] == 0


def test_killed_batch_resumes_without_loss_or_duplicates_fake(tmp_path):
    calls = tmp_path / "calls.txt"
    check_kill_and_resume(tmp_path, f"fake:k?delay=0.03&calls_file={calls}", count=40, n=2,
                          kill_at=10, extra=["--concurrency", "4"])


@pytest.mark.embedded
def test_killed_batch_resumes_without_loss_or_duplicates_embedded(tmp_path):
    check_kill_and_resume(tmp_path, "llamacpp:embedded", count=8, n=2, kill_at=4,
                          extra=["--max-tokens", "12", "--temperature", "0.8"])


def test_failed_items_are_recorded_and_the_run_exits_non_zero(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    write_prompts(prompts, 5)
    out = tmp_path / "out.jsonl"
    result = run_to_end("llm", "batch", str(prompts), "-m", "fake:x?permanent=true",
                        "--out", str(out), "--no-progress", "--retries", "1")
    assert result.returncode == 3
    assert "5 of 5 samples failed" in result.stderr and "fix:" in result.stderr
    failures = list(read_jsonl(tmp_path / "out.jsonl.failures.jsonl"))
    assert sorted(f["id"] for f in failures) == [f"p{i}" for i in range(5)]
    assert all("fake failure" in f["error"] for f in failures)


@pytest.mark.parametrize("content, needle", [
    ('{"id": "a", "prompt": "x"}\n{"id": "b", "prompt": \n', "prompts.jsonl:2: not valid JSON"),
    ('["not", "an", "object"]\n', "prompts.jsonl:1: expected a JSON object"),
    ('{"id": "a"}\n', "prompts.jsonl:1: not a valid request"),
    ('{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n', "id 'a' appears twice"),
    ("", "has no requests"),
])
def test_malformed_input_is_named_with_its_line(tmp_path, content, needle):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(content, encoding="utf-8")
    result = run_to_end("llm", "batch", str(prompts), "-m", "fake:x", "--out",
                        str(tmp_path / "out.jsonl"))
    assert result.returncode != 0 and needle in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_missing_input_and_bad_model_are_clear(tmp_path):
    result = run_to_end("llm", "batch", str(tmp_path / "nope.jsonl"), "--out",
                        str(tmp_path / "o.jsonl"))
    assert result.returncode != 0 and "nope.jsonl: file not found" in result.stderr
    prompts = tmp_path / "p.jsonl"
    write_prompts(prompts, 1)
    result = run_to_end("llm", "batch", str(prompts), "-m", "llama:embedded", "--out",
                        str(tmp_path / "o.jsonl"))
    assert result.returncode == 2 and "unknown backend 'llama'" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_dead_http_server_gives_failure_records_and_a_non_zero_exit(tmp_path):
    from tests.llm.flaky_server import FakeOpenAIServer

    prompts = tmp_path / "prompts.jsonl"
    write_prompts(prompts, 4)
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(default=503) as server:
        result = run_to_end("llm", "batch", str(prompts), "-m",
                            f"openai:{server.url}?model=m&timeout=2", "--out", str(out),
                            "--retries", "2", "--no-progress")
        assert server.calls == 4 * 3  # every item: the first try and two retries
    assert result.returncode == 3, result.stderr
    assert "4 of 4 samples failed" in result.stderr and "4 failures" in result.stderr
    failures = list(read_jsonl(tmp_path / "out.jsonl.failures.jsonl"))
    assert len(failures) == 4 and all(f["attempts"] == 3 for f in failures)
    assert all("503" in f["error"] and server.url in f["error"] for f in failures)
    assert lines(out) == 0
