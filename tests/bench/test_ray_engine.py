"""bench/ray_engine.py on a tiny size: both engines run the batch against the stand-in
server, and the last line is the JSON object with the #18 throughput target. The bench
joins the session's Ray cluster (``--ray-address``) instead of starting a second one."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.bench.loading import check_targets
from tests.paths import REPO


def test_ray_engine_bench_prints_its_target(ray_cluster, tmp_path):
    pytest.importorskip("ray.data", reason="the ray engine needs pip install 'rolecall[ray]'")
    args = ["--n", "24", "--delay", "0.01", "--concurrency", "4", "--workers", "2"]
    args += ["--ray-address", ray_cluster.get_runtime_context().gcs_address]
    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "ray_engine.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.splitlines()[-1])
    check_targets(report["targets"], {"ray_over_local_throughput"})
    target = report["targets"]["ray_over_local_throughput"]
    assert target["target"] == ">= 0.9"
    # records per second on Ray over locally, from the two wall times it printed
    assert target["value"] == pytest.approx(report["local_s"] / report["ray_s"], rel=0.02)
    assert report["n"] == 24 and report["local_s"] > 0 and report["ray_s"] > 0
    assert "ms per record" in result.stdout
    assert 0 < report["ray_first_record_s"] < report["ray_s"]
    assert report["ray_over_local_after_start_up"] > 0
