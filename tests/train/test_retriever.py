"""Bi- and poly-encoder retrievers on a tiny backbone: training, saving, frozen, errors."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rolecall.errors import ConfigError, InputFileError  # noqa: E402
from rolecall.jsonl import write_jsonl  # noqa: E402
from rolecall.records import Example, Turn  # noqa: E402
from rolecall.train.backbones.base import Backbone  # noqa: E402
from rolecall.train.loop import TrainConfig  # noqa: E402
from rolecall.train.retriever import (  # noqa: E402
    Retriever,
    RetrieverSettings,
    fit_retriever,
    train_retriever,
)
from tests.serve.topics import PAIRS, TOPICS  # noqa: E402
from tests.tiny_models import tiny_backbone  # noqa: E402

CONFIG = TrainConfig(epochs=20, batch_size=8, lr=1e-2)
SMALL = {"dim": 32, "codes": 4, "context_max_tokens": 32, "candidate_max_tokens": 16}


def backbone(frozen: bool = False) -> Backbone:
    tiny = tiny_backbone([t for pair in PAIRS for t in pair], vocab_size=150, dropout=0.0)
    return Backbone(tiny.model, tiny.tokenizer, "in-code", frozen=frozen)


def head_params(retriever):
    return [p.detach().clone() for p in retriever.head.parameters()]


@pytest.mark.parametrize("kind", ["bi", "poly"])
def test_training_changes_the_head_and_the_loss_falls(kind, tmp_path):
    tiny = backbone(frozen=True)
    before = [p.detach().clone() for p in tiny.parameters()]
    retriever, history = fit_retriever(
        PAIRS, tiny, RetrieverSettings(kind=kind, **SMALL), CONFIG, progress=False
    )
    assert retriever.settings.frozen and retriever.settings.backbone == "in-code"
    losses = history["losses"]
    assert sum(losses[-3:]) < sum(losses[:3]) * 0.5  # averaged: one batch is noisy
    fresh = Retriever.new(tiny, retriever.settings, seed=CONFIG.seed)
    assert any(not torch.equal(a, b) for a, b in zip(head_params(fresh), head_params(retriever)))
    assert all(torch.equal(a, b) for a, b in zip(before, tiny.parameters()))  # frozen
    contexts = [c for c, _ in PAIRS[:8]]
    candidates = [[answer] + [a for _, a in TOPICS if a != answer][:4] for _, answer in PAIRS[:8]]
    scores = retriever.score(contexts, candidates)
    assert scores.shape == (8, 5)
    assert (scores.argmax(1) == 0).mean() > 0.5  # gold first well above chance (0.2)
    retriever.save(tmp_path / "model")
    again = Retriever.load(tmp_path / "model")
    assert again.settings == retriever.settings
    np.testing.assert_array_equal(again.score(contexts, candidates), scores)


def test_a_trainable_backbone_trains_and_reloads_identically(tmp_path):
    tiny = backbone(frozen=False)
    before = next(tiny.parameters()).detach().clone()
    retriever, history = fit_retriever(
        PAIRS,
        tiny,
        RetrieverSettings(kind="poly", **SMALL),
        TrainConfig(epochs=3, batch_size=8),
        progress=False,
    )
    assert history["steps"] == 9 and not retriever.settings.frozen
    assert not torch.equal(next(tiny.parameters()), before)
    rows = [[a for _, a in TOPICS]] * 3
    contexts = [c for c, _ in PAIRS[:3]]
    scores = retriever.score(contexts, rows)
    retriever.save(tmp_path / "model", {"note": "trainable"})
    again = Retriever.load(tmp_path / "model")
    assert not again.settings.frozen
    np.testing.assert_allclose(again.score(contexts, rows), scores, rtol=1e-5, atol=1e-6)


def test_train_from_an_examples_file(tmp_path):
    path = tmp_path / "examples.jsonl"
    write_jsonl(
        path,
        [
            Example(history=[Turn(role="user", text=f"{t} 이야기")], response=a, label="positive")
            for t, a in TOPICS
        ]
        + [
            Example(
                history=[Turn(role="user", text="욕")],
                response="나쁜 말",
                label="negative",
                category="safety",
            )
        ],
    )
    metrics = train_retriever(
        path,
        tmp_path / "model",
        backbone(True),
        RetrieverSettings(kind="bi", **SMALL),
        TrainConfig(epochs=1, batch_size=4),
        progress=False,
    )
    assert metrics["pairs"] == len(TOPICS) and metrics["steps"] == 2
    assert metrics["candidates"] == len(TOPICS) and len(metrics["losses"]) == 2
    assert Retriever.load(metrics["model_dir"]).settings.kind == "bi"


def test_bad_input_reaches_the_caller_as_clear_errors(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputFileError, match="holds no examples"):
        train_retriever(empty, tmp_path / "out", backbone(), progress=False)
    with pytest.raises(InputFileError, match="no such model directory") as error:
        train_retriever(PAIRS, tmp_path / "out", str(tmp_path / "nope"), progress=False)
    assert "fix:" in str(error.value)
    with pytest.raises(ConfigError, match="no \\(context, response\\) pairs"):
        train_retriever([("안녕", " ")], tmp_path / "out", backbone(), progress=False)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="same number of candidates"):
        Retriever.new(backbone(), RetrieverSettings(**SMALL)).score(["a", "b"], [["x"], []])
