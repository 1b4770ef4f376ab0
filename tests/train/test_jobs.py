"""The training jobs' backbone policy and their settings (the jobs themselves run in the
CLI tests, the demo and the benches)."""

from __future__ import annotations

import pytest

from rolecall.errors import ConfigError
from rolecall.train.jobs import (
    BackboneChoice,
    Job,
    classifier_config,
    features_cache,
    retriever_config,
)
from rolecall.train.settings import (
    CLASSIFIER_TRAINING,
    FROZEN_CLASSIFIER_EPOCHS,
    RETRIEVER_TRAINING,
)


def test_the_bundled_backbones_defaults_follow_the_kind_of_model():
    def resolved(kind, name="embedded", **given):
        return BackboneChoice(name, **given).resolved(kind)

    assert resolved("classifier") == (7, True, 4)  # layer 7, its top 4 layers tuned
    assert resolved("classifier", frozen=True) == (7, True, None)
    assert resolved("classifier", layer=1) == (1, True, 1)
    assert resolved("classifier", tune_layers=0, layer=18) == (18, True, 0)
    assert resolved("retriever") == (None, True, None)
    assert resolved("classifier", "sentence") == (None, True, None)  # frozen
    assert resolved("retriever", "sentence") == (None, True, 5)  # its dense top tuned
    assert resolved("retriever", "sentence", frozen=True) == (None, True, None)
    assert resolved("classifier", "/models/klue") == (None, False, None)  # trained whole
    assert resolved("retriever", "/models/klue", frozen=True) == (None, True, None)
    assert BackboneChoice().load_options("classifier") == {"layer": 7}
    assert BackboneChoice().load_options("retriever") == {}
    with pytest.raises(ConfigError, match="give one of them"):
        resolved("classifier", frozen=False, tune_layers=2)


def test_the_classifier_passes_follow_what_trains():
    tuned = classifier_config(BackboneChoice())
    assert (tuned.epochs, tuned.min_steps) == (CLASSIFIER_TRAINING.epochs, 400)
    frozen = classifier_config(BackboneChoice("sentence"), batch_size=8)
    assert (frozen.epochs, frozen.min_steps, frozen.batch_size) == (
        FROZEN_CLASSIFIER_EPOCHS,
        None,
        8,
    )
    given = classifier_config(BackboneChoice(), epochs=2)  # exactly the passes given
    assert (given.epochs, given.min_steps) == (2, None)
    with pytest.raises(ValueError):
        classifier_config(BackboneChoice(), lr=-1.0)


def test_a_tuned_sentence_top_learns_at_its_measured_rate():
    default = retriever_config(BackboneChoice("sentence"), seed=3)
    assert (default.backbone_lr, default.epochs, default.seed) == (
        3e-4,
        RETRIEVER_TRAINING.epochs,
        3,
    )
    assert retriever_config(BackboneChoice("sentence", tune_layers=2)).backbone_lr == 3e-4
    assert retriever_config(BackboneChoice("sentence"), backbone_lr=1e-5).backbone_lr == 1e-5
    for untuned in (BackboneChoice("sentence", frozen=True), BackboneChoice("/models/klue")):
        assert retriever_config(untuned, backbone_lr=None) == RETRIEVER_TRAINING


def test_a_job_places_its_cache_and_checkpoints(tmp_path, monkeypatch):
    monkeypatch.setenv("ROLECALL_HOME", str(tmp_path / "home"))
    job = Job(tmp_path / "ex.jsonl", tmp_path / "model")
    assert job.cache() == features_cache() == tmp_path / "home" / "features"
    assert Job(tmp_path, tmp_path, tmp_path / "f").cache() == tmp_path / "f"
    checkpoints = job.checkpoints({"kind": "x"})
    assert checkpoints is not None and checkpoints.directory == tmp_path / "model" / ".checkpoint"
    assert Job(tmp_path, tmp_path, checkpoint_every=None).checkpoints({}) is None
