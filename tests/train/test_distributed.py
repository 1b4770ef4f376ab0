"""Training on two CPU processes (gloo), launched as a user would: ``accelerate launch``
on a toy model (the same numbers as one process), ``torchrun`` on ``rolecall train
classifier`` (one model directory, one features shard, the same loss curve shape)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rolecall.jsonl import write_jsonl  # noqa: E402
from tests.dialogue_data import make_examples, tiny  # noqa: E402
from tests.local_server import free_port  # noqa: E402
from tests.paths import REPO  # noqa: E402
from tests.train.toy import toy_run  # noqa: E402

LAUNCHED = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def launched_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHED}
    return {**env, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


@pytest.mark.slow
def test_two_processes_train_as_one_under_accelerate_launch(tmp_path):
    """Same order, shares weighted by size, gradients averaged: the same losses and
    weights as one process (to float rounding); AdamW still skips a parameter with no
    gradient; only rank 0 gets past ``fit``."""
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent))
    if accelerate is None:
        pytest.skip("accelerate is not installed")
    script = tmp_path / "toy.py"
    script.write_text(
        "import os, sys\nfrom pathlib import Path\n"
        "from tests.train.toy import toy_run\n"
        "Path(f'{sys.argv[1]}.started.{os.environ[\"RANK\"]}').touch()\n"
        "toy_run(Path(sys.argv[1]))\n"
        "Path(f'{sys.argv[1]}.returned.{os.environ[\"RANK\"]}').touch()\n"
    )
    alone = toy_run(tmp_path / "alone.json")
    # subtle: with --cpu accelerate starts one process (several need MPI); --multi_gpu
    # starts them through torchrun, and with no GPU the model stays on the CPU (gloo)
    command = [accelerate, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1"]
    command += ["--mixed_precision", "no", "--dynamo_backend", "no"]
    command += ["--main_process_port", str(free_port()), str(script), str(tmp_path / "two.json")]
    result = subprocess.run(
        command, env=launched_env(), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    two = json.loads((tmp_path / "two.json").read_text())
    marks = sorted(p.name.split(".", 2)[-1] for p in tmp_path.glob("two.json.*"))
    assert marks == ["returned.0", "started.0", "started.1"]  # two ranks; fit ended rank 1
    assert len(two["losses"]) == len(alone["losses"]) == 12
    np.testing.assert_allclose(two["losses"], alone["losses"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(two["weight"], alone["weight"], rtol=1e-4, atol=1e-5)
    assert two["unused"] == alone["unused"] == [1.0, 1.0]  # no decay: its grad stayed None
    assert alone["losses"][-1] < alone["losses"][0] / 2


@pytest.mark.slow
def test_train_classifier_under_torchrun(tmp_path):
    """The command, unchanged, on two processes: one printed result, one model
    directory, one features shard (rank 0 wrote the cache, rank 1 read it), and a loss
    curve of the same length and shape as the one-process command's."""
    from typer.testing import CliRunner

    from rolecall.cli.app import app

    tiny(frozen=False).save(tmp_path / "tiny")
    write_jsonl(tmp_path / "examples.jsonl", make_examples(30))
    options = ["--backbone", str(tmp_path / "tiny" / "backbone"), "--frozen"]
    options += ["--max-length", "48", "--epochs", "6", "--batch-size", "8", "--lr", "0.003"]
    options += ["--no-progress", "--test-share", "0.2"]
    command = ["train", "classifier", str(tmp_path / "examples.jsonl"), *options]

    alone = CliRunner().invoke(
        app, [*command, "--out", str(tmp_path / "one"), "--features-cache", str(tmp_path / "f1")]
    )
    assert alone.exit_code == 0, alone.output
    one = json.loads((tmp_path / "one" / "metrics.json").read_text())

    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
    launcher += ["--master_port", str(free_port()), "-m", "rolecall.cli"]
    out, cache = tmp_path / "two", tmp_path / "f2"
    result = subprocess.run(
        [*launcher, *command, "--out", str(out), "--features-cache", str(cache)],
        env=launched_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    printed = [line for line in result.stdout.splitlines() if " trained -> " in line]
    assert len(printed) == 1, result.stdout  # rank 1 printed nothing
    two = json.loads((out / "metrics.json").read_text())
    assert json.loads((out / "model.json").read_text())["metrics"] == two
    assert [p.name for p in cache.iterdir()] == ["shard-00000.npz"]
    assert two["train_examples"] == one["train_examples"] and two["steps"] == one["steps"]
    curves = [one["epoch_losses"], two["epoch_losses"]]
    assert len(curves[0]) == len(curves[1]) == 6
    for curve in curves:
        assert curve[-1] < curve[0] * 0.9, curves
    assert np.corrcoef(*curves)[0, 1] > 0.8, curves  # measured 0.93
