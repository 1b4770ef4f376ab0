"""Ctrl-C on a real ``rolecall`` process making slow (fake) LLM calls: the first stops it
and says how many calls it waits for, the manifest records the interruption, every
finished record is kept and the resume asks only for the rest; a second Ctrl-C abandons
the calls in flight."""

from __future__ import annotations

import json
import signal
import time

from tests.cli_runs import lines, rolecall, run_to_end


def batch_input(path, n: int):
    path.write_text(
        "".join(json.dumps({"id": f"p{i}", "prompt": f"질문 {i}"}) + "\n" for i in range(n)),
        encoding="utf-8",
    )
    return path


def start(tmp_path, delay: float):
    prompts = batch_input(tmp_path / "in.jsonl", 12)
    args = ("llm", "batch", str(prompts), "--out", str(tmp_path / "out" / "o.jsonl"))
    model = ("-m", f"fake:slow?delay={delay}", "--concurrency", "2", "--no-progress")
    cache = ("--cache", str(tmp_path / "cache.sqlite"))
    return args + model + cache, rolecall(*args, *model, *cache)


def wait_for_lines(path, at_least: int, process, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while lines(path) < at_least:
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.05)


def test_one_ctrl_c_waits_for_the_calls_in_flight_and_the_run_resumes(tmp_path):
    args, process = start(tmp_path, delay=1.0)
    out = tmp_path / "out" / "o.jsonl"
    wait_for_lines(out, 2, process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "stopping: waiting for 2 calls in flight (Ctrl-C again to abandon them)" in stderr
    assert "interrupted: every finished record is kept in" in stderr
    assert "Traceback" not in stderr
    kept = lines(out)
    assert 2 <= kept < 12
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    stopped = manifest["runs"][-1]
    assert stopped["interrupted"] >= stopped["started"]  # ISO 8601, UTC
    assert stopped["started"].endswith("+00:00")
    resumed = run_to_end(*args)
    assert resumed.returncode == 0, resumed.stderr
    assert lines(out) == 12
    ids = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(ids) == sorted(f"p{i}" for i in range(12))  # each once
    runs = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))["runs"]
    assert "interrupted" not in runs[-1] and len(runs) == 2


def test_a_second_ctrl_c_abandons_the_calls_in_flight(tmp_path):
    _, process = start(tmp_path, delay=60.0)  # calls that would hold the process a minute
    out = tmp_path / "out"
    deadline = time.monotonic() + 120
    while not (out / "manifest.json").exists():
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(1.0)  # the first calls are in flight
    process.send_signal(signal.SIGINT)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    begun = time.monotonic()
    _, stderr = process.communicate(timeout=30)
    assert time.monotonic() - begun < 30 and process.returncode == 130, stderr
    assert "stopping: waiting for 2 calls in flight" in stderr
    assert "abandoned the calls in flight; the finished records are kept" in stderr
