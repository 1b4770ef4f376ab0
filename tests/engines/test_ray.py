"""The ray engine writes what the local engine writes (#18): ``llm batch`` on both.

One local Ray cluster (``ray.init(num_cpus=2)``, loopback; ``conftest.ray_cluster``) serves
the whole session; its actors import the fake backend (``ROLECALL_PLUGINS=tests.fakes``)
from this checkout. The tests skip, with Ray's own reason, only when Ray is missing or its
cluster cannot start.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

from rolecall.errors import ConfigError, RolecallError
from rolecall.jsonl import read_jsonl
from tests.cli_runs import last_run_stats
from tests.engines.ray_runs import RAY, batch, counts, rows, write_prompts


def test_llm_batch_on_ray_writes_the_local_records(ray_cluster, tmp_path):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 20)
    local, on_ray = tmp_path / "local", tmp_path / "ray"

    assert batch(prompts, local, "fake:a").exit_code == 0
    result = batch(prompts, on_ray, "fake:a", *RAY)
    assert result.exit_code == 0, result.output

    assert rows(on_ray / "out.jsonl") == rows(local / "out.jsonl")
    assert len(rows(on_ray / "out.jsonl")) == 40
    assert counts(on_ray) == counts(local)
    ray_stats, local_stats = last_run_stats(on_ray), last_run_stats(local)
    for key in ("calls", "cache_hits", "tokens_in", "tokens_out", "failures"):
        assert ray_stats[key] == local_stats[key], key
    manifest = json.loads((on_ray / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["models"]["generator"] == "fake:fake-a"

    # run again: every sample is written, so nothing is asked and nothing is duplicated
    assert batch(prompts, on_ray, "fake:a", *RAY).exit_code == 0
    assert last_run_stats(on_ray)["calls"] == 0
    assert len(rows(on_ray / "out.jsonl")) == 40

    # the workers key the cache exactly as this process does: the local run's cache
    # answers a fresh ray run without a single call
    fresh = tmp_path / "fresh"
    assert batch(prompts, fresh, "fake:a", *RAY, cache=local / "cache.sqlite").exit_code == 0
    assert last_run_stats(fresh)["calls"] == 0
    assert last_run_stats(fresh)["cache_hits"] == 40
    assert rows(fresh / "out.jsonl") == rows(local / "out.jsonl")


def test_llm_batch_failures_on_ray_are_the_local_failures(ray_cluster, tmp_path):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 5)
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    model = "fake:a?permanent=true"

    assert batch(prompts, local, model, "--retries", "0").exit_code != 0
    result = batch(prompts, on_ray, model, "--retries", "0", *RAY)
    assert result.exit_code != 0
    assert "10 of 10 LLM calls failed" in str(result.exception)

    failures = [list(read_jsonl(run / "out.jsonl.failures.jsonl")) for run in (local, on_ray)]
    assert failures[1] == failures[0]
    assert len(failures[0]) == 10
    assert counts(on_ray) == counts(local)


def test_a_missing_ray_names_the_extra(monkeypatch):
    from rolecall.engines.ray import import_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(RolecallError) as caught:
        import_ray()
    assert "pip install 'rolecall[ray]'" in str(caught.value)


def test_an_unknown_engine_is_a_usage_error_and_a_config_error(tmp_path):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 1)
    result = batch(prompts, tmp_path / "run", "fake:a", "--engine", "spark")
    flat = re.sub(r"[\s│]", "", result.output)  # a rich box may wrap the message
    assert result.exit_code == 2 and "'spark'isnotoneof'local','ray'" in flat
    assert not (tmp_path / "run" / "out.jsonl").exists()
    from rolecall.engines import open_engine

    with pytest.raises(ConfigError, match="unknown engine 'spark'"):
        open_engine("spark", None)


@pytest.mark.parametrize(
    ("model", "workers", "actor_bound"),
    [
        ("openai:http://127.0.0.1:9/v1?model=m&max_concurrency=32", 3, "10"),
        ("openai:http://a:8000/v1,http://b:8000/v1?model=m&max_concurrency=32", 3, "10"),
        ("openai:http://127.0.0.1:9/v1?model=m", 2, "8"),  # the default 16 split
        ("openai:http://127.0.0.1:9/v1?model=m&max_concurrency=2", 4, "1"),  # at least 1
    ],
)
def test_each_actor_opens_its_share_of_every_servers_bound(model, workers, actor_bound):
    """With a pool's node down, each actor sends its whole share to the servers left; a
    server then still gets at most workers x actor_bound <= its max_concurrency (but 1)."""
    from urllib.parse import parse_qs, urlsplit

    from rolecall.engines.ray import actor_model

    opened = actor_model(model, workers)
    assert opened.split("?")[0] == model.split("?")[0]  # the same servers, the same model id
    options = parse_qs(urlsplit(opened.partition(":")[2]).query)
    assert options["max_concurrency"] == [actor_bound] and options["model"] == ["m"]
    assert actor_model("fake:a", workers) == "fake:a"


@pytest.mark.parametrize(
    ("model", "concurrency", "workers", "per_actor"),
    [
        ("openai:http://127.0.0.1:9/v1?model=m&max_concurrency=4", 16, 2, 2),  # server's bound
        ("openai:http://127.0.0.1:9/v1?model=m", 64, 2, 8),  # the backend's default 16
        ("openai:http://127.0.0.1:9/v1?model=m&max_concurrency=32", 8, 2, 4),  # --concurrency
        ("fake:a", 8, 2, 4),  # in-process: a model per actor, only --concurrency is split
    ],
)
def test_actors_share_one_servers_concurrency_bound(model, concurrency, workers, per_actor):
    pytest.importorskip("ray.data", reason="the ray engine needs pip install 'rolecall[ray]'")
    from rolecall.engines import LLMSettings
    from rolecall.engines.ray import RayEngine, batch_size_for

    engine = RayEngine(LLMSettings(model, "cache.sqlite", concurrency), workers=workers)
    assert engine.settings.concurrency == per_actor
    assert batch_size_for(engine.settings, 10_000, workers) == 16 * per_actor
    assert batch_size_for(engine.settings, 40, workers) == 20  # an even share, at least 16
