"""`rolecall train classifier` with its defaults on the embedded Gemma and real BEEP!
comments: the backbone cut after layer 7 with its top 4 layers tuned, only those layers
saved, and the reloaded model giving the very probabilities it gave before saving. Small
(120 comments, one pass): the point is the real model and data through the default path,
not its quality (bench/classifier_quality.py measures that)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

pytest.importorskip("torch")

from rolecall.eval.offensiveness import beep_examples  # noqa: E402
from rolecall.jsonl import write_jsonl  # noqa: E402
from tests.cli_runs import run_cli  # noqa: E402
from tests.paths import SHARED_DATA  # noqa: E402

pytestmark = [pytest.mark.embedded, pytest.mark.timeout(3600)]


def test_the_default_classifier_tunes_the_top_layers_and_reloads_them(tmp_path):
    comments = beep_examples(SHARED_DATA / "slang" / "beep_labeled_train.tsv")
    examples = random.Random(0).sample(comments, 120)
    write_jsonl(tmp_path / "examples.jsonl", examples)
    result = run_cli(
        "train",
        "classifier",
        str(tmp_path / "examples.jsonl"),
        "--out",
        str(tmp_path / "model"),
        "--max-length",
        "96",
        "--epochs",  # one pass, not the default's 400 steps (this is the path, not quality)
        "1",
        "--test-share",
        "0.2",
        "--no-progress",
    )
    assert result.returncode == 0, result.stderr
    metrics = json.loads((tmp_path / "model" / "metrics.json").read_text())
    assert metrics["test_examples"] > 0 and 0 <= metrics["f1"] <= 1
    info = json.loads((tmp_path / "model" / "backbone.json").read_text())
    assert info == {
        "source": "embedded",
        "frozen": False,
        "copied": False,
        "layer": 7,
        "tuned": 4,
    }
    tuned = tmp_path / "model" / "tuned.safetensors"
    assert tuned.stat().st_size < 100_000_000  # four layers, not the 270M model
    from rolecall.train.classifier import Classifier

    model = Classifier.load(tmp_path / "model")
    assert model.backbone.tuned == 4 and len(model.backbone.model.layers) == 7
    texts = [e.response for e in examples[:8]]
    first = model.predict_proba([[]] * 8, texts)
    again = Classifier.load(tmp_path / "model").predict_proba([[]] * 8, texts)
    assert np.allclose(first, again, atol=1e-5)
    # the tuned layers moved away from the embedded model's: the reference alone differs
    from rolecall.train.backbones.load import load_backbone

    plain = load_backbone("embedded", True, 7)
    batch = plain.batch_texts(texts, 32)
    import torch

    with torch.no_grad():
        assert not torch.allclose(plain.states(batch)[0], model.backbone.states(batch)[0])
