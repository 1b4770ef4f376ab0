"""`rolecall train classifier --layer N`: the backbone cut to N layers, kept in the model
directory, and the trained model reloads cut."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from rolecall.jsonl import write_jsonl  # noqa: E402
from tests.cli_runs import run_cli  # noqa: E402
from tests.dialogue_data import make_examples, tiny  # noqa: E402


def test_train_classifier_keeps_the_layer_asked_for(tmp_path):
    tiny(frozen=False).save(tmp_path / "tiny")  # a transformers dir at tiny/backbone
    write_jsonl(tmp_path / "examples.jsonl", make_examples(30))
    common = [
        "train",
        "classifier",
        str(tmp_path / "examples.jsonl"),
        "--backbone",
        str(tmp_path / "tiny" / "backbone"),
        "--frozen",
        "--features-cache",
        str(tmp_path / "features"),
        "--epochs",
        "1",
        "--max-length",
        "48",
        "--no-progress",
        "--no-lexical",
    ]
    result = run_cli(*common, "--out", str(tmp_path / "cut"), "--layer", "1")
    assert result.returncode == 0, result.stderr
    info = json.loads((tmp_path / "cut" / "backbone.json").read_text())
    assert info["layer"] == 1 and info["copied"] is False
    from rolecall.train.classifier import Classifier

    model = Classifier.load(tmp_path / "cut")
    assert model.backbone.layer == 1 and len(model.backbone.model.encoder.layer) == 1
    # --no-lexical: the head alone, and no TF-IDF half on disk
    assert not model.settings.lexical and model.lexical is None
    assert not (tmp_path / "cut" / "lexical").exists()
    result = run_cli(*common, "--out", str(tmp_path / "bad"), "--layer", "9")
    assert result.returncode != 0 and "out of range" in result.stderr
    assert not (tmp_path / "bad" / "model.json").exists()


def test_train_classifier_tunes_the_top_layers_asked_for(tmp_path):
    tiny(frozen=False).save(tmp_path / "tiny")
    write_jsonl(tmp_path / "examples.jsonl", make_examples(30))
    result = run_cli(
        "train",
        "classifier",
        str(tmp_path / "examples.jsonl"),
        "--backbone",
        str(tmp_path / "tiny" / "backbone"),
        "--tune-layers",
        "1",
        "--epochs",
        "1",
        "--max-length",
        "48",
        "--no-progress",
        "--out",
        str(tmp_path / "tuned"),
    )
    assert result.returncode == 0, result.stderr
    info = json.loads((tmp_path / "tuned" / "backbone.json").read_text())
    assert info["tuned"] == 1 and info["copied"] is False
    assert (tmp_path / "tuned" / "tuned.safetensors").is_file()
    from rolecall.train.classifier import Classifier

    model = Classifier.load(tmp_path / "tuned")
    assert model.backbone.tuned == 1
    assert model.predict([[]], ["안녕하세요"]).shape == (1,)
