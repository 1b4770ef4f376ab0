"""Killing the ray engine's driver mid-run and running the same command again (#18, item 4).

The driver is a real ``rolecall llm batch --engine ray`` subprocess joined to the session's
local cluster (``RAY_ADDRESS``), its actors calling a loopback OpenAI-compatible stand-in
server that answers slowly, so the kill lands while actors still have calls in flight. The
server counts what it was asked, across every process, so a repeated call cannot hide.

What can be lost at a kill: the rows of batches that never reached the driver. Their
finished calls are in the SQLite cache (each committed by the actor the moment it
finishes), so the rerun answers them from there; only the calls cut off in flight by the
kill are asked again: received by the server, but Ray ends a dead driver's job and kills
its actors before their answers land (at most the actors' concurrency, 2 x 4 here). It runs
twice: with the SQLite cache file, and with the cache on a real PostgreSQL server
(``postgresql://``, the form a cluster of machines shares; tests/postgres.py). The
test also checks that nothing of the killed run is left: no process of the driver's
session, its job dead and every CPU its actors held free again.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
import uuid
from pathlib import Path

import pytest

from tests.cli_runs import last_run_stats, lines, rolecall, run_to_end
from tests.llm.flaky_server import FakeOpenAIServer
from tests.postgres import _admin, _with_database

PROMPTS = 200


def write_prompts(path: Path, count: int) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(count):
            row = {"id": f"p{i}", "prompt": f"{i}번 인사말: 안녕하세요,"}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def kill_group_when(process, out: Path, at_least: int, limit: float = 60) -> None:
    """SIGKILL the driver's whole process group once ``out`` has ``at_least`` lines."""
    deadline = time.monotonic() + limit
    try:
        while lines(out) < at_least:
            assert process.poll() is None, f"the run ended before the kill: {process.stderr.read()}"
            assert time.monotonic() < deadline, "the run wrote nothing in time"
            time.sleep(0.02)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        process.stdout.close()
        process.stderr.close()
    assert not in_session(process.pid), "the killed driver left processes behind"


def in_session(sid: int) -> list[int]:
    """The live processes of session ``sid`` (the driver started its own): anything the
    driver spawned that outlived it would be here."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def jobs_alive(ray, exclude: str) -> list[str]:
    """The ids of the cluster's live jobs other than ``exclude`` (this test's own)."""
    from ray._private import state

    return [j["JobID"] for j in state.jobs() if not j["IsDead"] and j["JobID"] != exclude]


def wait_for_release(ray, own_job: str, limit: float = 30) -> None:
    """Until the killed driver's job is dead and every CPU its actors held is free again:
    nothing of the killed run is left on the cluster."""
    deadline = time.monotonic() + limit
    total = ray.cluster_resources().get("CPU", 0)
    while True:
        alive = jobs_alive(ray, own_job)
        free = ray.available_resources().get("CPU", 0)
        if not alive and free == total:
            return
        assert time.monotonic() < deadline, (
            f"the killed driver left jobs {alive} alive, {total - free} CPUs held"
        )
        time.sleep(0.1)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def cache(request, tmp_path):
    """Where the run keeps its calls: a SQLite file, or a new database on the PostgreSQL
    test server named by a bare ``postgresql://`` URL."""
    if request.param == "sqlite":
        yield str(tmp_path / "run" / "cache.sqlite")
        return
    server_url = request.getfixturevalue("postgres_url")
    name = f"r_{uuid.uuid4().hex[:12]}"
    _admin(server_url, f"CREATE DATABASE {name}")
    try:
        url = _with_database(server_url, name)
        yield url.replace("postgresql+psycopg://", "postgresql://")
    finally:
        _admin(server_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def cached_requests(cache: str) -> list[str]:
    """The request of every cached call, read straight from the file or the server."""
    if not cache.startswith("postgresql://"):
        with sqlite3.connect(cache) as db:
            return [text for (text,) in db.execute("SELECT request FROM calls")]
    from sqlalchemy import create_engine, text

    engine = create_engine(cache.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.connect() as conn:
            return list(conn.execute(text("SELECT request FROM calls")).scalars())
    finally:
        engine.dispose()


def cached_prompts(cache: str) -> set[str]:
    return {json.loads(text)["prompt"] for text in cached_requests(cache)}


def prompts_asked(requests: list[dict]) -> list[str]:
    return [r["body"]["prompt"] for r in requests]


def test_a_killed_ray_driver_resumes_with_nothing_lost_doubled_or_asked_twice(
    ray_cluster, tmp_path, cache
):
    ray = ray_cluster
    own_job = ray.get_runtime_context().get_job_id()
    prompts = write_prompts(tmp_path / "prompts.jsonl", PROMPTS)
    out = tmp_path / "run" / "out.jsonl"
    env = {"RAY_ADDRESS": ray.get_runtime_context().gcs_address}

    with FakeOpenAIServer(delay=0.1) as server:
        args = ["llm", "batch", str(prompts), "--out", str(out), "--cache", cache]
        args += ["-m", f"openai:{server.url}?model=m", "--no-progress", "--retries", "0"]
        args += ["--engine", "ray", "--workers", "2"]
        # 2 actors of 4 concurrent calls, batches of 64: the first batch back (64 rows)
        # comes while the others are half done
        kill_group_when(rolecall(*args, env_extra=env, start_new_session=True), out, 1)
        wait_for_release(ray, own_job)

        first = out.read_bytes()
        first = first[: first.rfind(b"\n") + 1]  # a line cut by the kill is not a row
        written = first.count(b"\n")
        finished = len(cached_requests(cache))  # the actors are gone: nothing more finishes
        finished_prompts = cached_prompts(cache)
        asked_before = server.calls
        assert 0 < written < PROMPTS, "the kill did not land mid-run"
        # the point of the test: calls finished on actors whose batch never came back
        assert finished > written, "no finished call was left outside the output"

        resumed = run_to_end(*args, env_extra=env, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        wait_for_release(ray, own_job)
        asked_again = prompts_asked(server.requests[asked_before:])
        stats = last_run_stats(tmp_path / "run")

    final = out.read_bytes()
    rows = [json.loads(line) for line in final.splitlines()]
    ids = [row["id"] for row in rows]
    assert final.startswith(first), "the first run's rows were rewritten"
    assert len(ids) == len(set(ids)) == PROMPTS  # 0 duplicated, 0 lost
    assert set(ids) == {f"p{i}" for i in range(PROMPTS)}
    assert len(cached_requests(cache)) == PROMPTS  # every call once in the cache
    assert not list(tmp_path.glob("**/postgresql*")), "a URL was taken for a file name"

    # the rerun asked only what had not finished: no call answered before the kill again
    assert stats["failures"] == 0
    assert stats["calls"] == len(asked_again) == PROMPTS - finished
    assert stats["cache_hits"] == finished - written
    assert not set(asked_again) & finished_prompts
    assert len(set(asked_again) | finished_prompts) == PROMPTS
    cut_off = asked_before - finished  # received by the server, killed before the answer
    assert server.calls == PROMPTS + cut_off
    assert 0 <= cut_off <= 8  # at most the calls in flight: 2 actors x 4
    print(
        f"\nkilled after {written} rows written, {finished} calls finished "
        f"({finished - written} only in the cache), {cut_off} cut off in flight; "
        f"rerun: {stats['calls']} calls, {stats['cache_hits']} cache hits; "
        f"server: {server.calls} calls for {PROMPTS} prompts"
    )
