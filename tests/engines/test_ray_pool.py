"""``llm batch --engine ray`` against a pool of two OpenAI-compatible stand-in servers
(#18): the same records as the local engine, both servers used, and neither given more
than its ``max_concurrency`` at once by all the actors together (counted by the server)."""

from __future__ import annotations

import pytest

from tests.engines.ray_runs import RAY, batch, counts, rows, write_prompts
from tests.llm.counting_server import CountingServer

pytest.importorskip("openai")


def test_llm_batch_on_ray_against_a_server_pool_writes_the_local_records(ray_cluster, tmp_path):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 12)
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    with CountingServer() as a, CountingServer() as b:
        model = f"openai:{a.url},{b.url}?model=m&max_concurrency=2&timeout=10"
        assert batch(prompts, local, model).exit_code == 0
        local_calls = (a.calls, b.calls)
        a.peak = b.peak = 0
        result = batch(prompts, on_ray, model, *RAY, "--concurrency", "16")
        assert result.exit_code == 0, result.output
        ray_calls = (a.calls - local_calls[0], b.calls - local_calls[1])

    assert len(rows(on_ray / "out.jsonl")) == 24
    assert rows(on_ray / "out.jsonl") == rows(local / "out.jsonl")
    assert counts(on_ray) == counts(local)
    assert sum(local_calls) == sum(ray_calls) == 24
    assert min(ray_calls) >= 6, ray_calls  # the actors spread their calls over both servers
    assert a.peak <= 2 and b.peak <= 2  # 2 actors x 2 calls, one per server each
