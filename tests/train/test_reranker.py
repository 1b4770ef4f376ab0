"""The reranker on a tiny backbone, both interactions (pairs through the backbone, a
cross-attention head over separate states): negatives, training, scoring, MC dropout."""

from __future__ import annotations

import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rolecall.errors import InputFileError  # noqa: E402
from rolecall.jsonl import write_jsonl  # noqa: E402
from rolecall.train.backbones.features import Features  # noqa: E402
from rolecall.train.loop import TrainConfig  # noqa: E402
from rolecall.train.reranker import (  # noqa: E402
    Reranker,
    RerankerSettings,
    draw_negatives,
    train_reranker,
)
from tests.dialogue_data import make_examples, tiny  # noqa: E402

SETTINGS = RerankerSettings(
    max_length=48,
    response_max=16,
    width=16,
    negatives=3,
    context_max_tokens=40,
    candidate_max_tokens=16,
    dim=16,
    heads=2,
)
INTERACTIONS = pytest.mark.parametrize("interaction", ["joint", "attention"])
CONFIG = TrainConfig(epochs=6, batch_size=4, lr=1e-2)
POOL = ["가", "나", "다", "라", "마", "바"]


def test_negatives_never_hold_the_gold_and_take_hard_ones_first():
    rng = random.Random(0)
    for _ in range(20):
        negatives = draw_negatives("ctx", "다", POOL, 4, rng)
        assert len(negatives) == 4 == len(set(negatives)) and "다" not in negatives
    asked = []

    def hard(context, gold, k):
        asked.append((context, gold, k))
        return ["다", "마", "마", "가", "나"]  # the gold and a repeat are dropped

    negatives = draw_negatives("ctx", " 다 ", POOL, 4, rng, hard, hard_count=2)
    assert negatives[:2] == ["마", "가"] and asked == [("ctx", "다", 3)]
    assert len(set(negatives)) == 4 and "다" not in negatives
    assert len(draw_negatives("ctx", "다", ["다", "가"], 7, rng)) == 1  # a small pool


@INTERACTIONS
def test_training_changes_the_head_and_the_loss_falls(tmp_path, interaction):
    backbone = tiny(frozen=True)
    # subtle: a random tiny BERT's pair states differ little between candidates; its CLS
    # state and dropout drown that signal, the mean without dropout keeps it
    settings = SETTINGS.model_copy(
        update={"pool": "mean", "dropout": 0.0, "width": 32, "interaction": interaction}
    )
    model = Reranker.create(backbone, settings, Features(backbone, tmp_path / "cache"))
    before = [p.detach().clone() for p in model.head.parameters()]
    history = model.fit(
        make_examples(24), TrainConfig(epochs=15, batch_size=4, lr=1e-2), progress=False
    )
    # epoch means: with attention the random negatives change every step, so single
    # steps are noisy (16 positives, batch 4: 4 steps an epoch)
    losses = history["losses"]
    assert np.mean(losses[-4:]) < 0.8 * np.mean(losses[:4]), losses
    assert list((tmp_path / "cache").glob("shard-*.npz"))
    assert all(not torch.equal(a, b) for a, b in zip(before, model.head.parameters(), strict=True))


def test_auto_interaction_follows_the_backbone():
    assert Reranker.create(tiny(frozen=True), SETTINGS).settings.interaction == "attention"
    assert Reranker.create(tiny(frozen=False), SETTINGS).settings.interaction == "joint"


@INTERACTIONS
def test_train_reranker_saves_a_model_that_scores_identically(tmp_path, interaction):
    path = tmp_path / "examples.jsonl"
    write_jsonl(path, make_examples(30))
    calls = []

    def hard(context, gold, k):
        calls.append(k)
        return ["푹 쉬세요", "오늘 날씨가 좋네요"]

    settings = SETTINGS.model_copy(update={"interaction": interaction})
    metrics = train_reranker(
        path,
        tmp_path / "model",
        tiny(frozen=True),
        settings,
        CONFIG,
        hard_negatives=hard,
        test_share=0.3,
        progress=False,
    )
    assert calls and metrics["hard_negatives"] and metrics["negatives"] == 3
    assert metrics["test_examples"] > 0 and "hits@1/4" in metrics  # a pool of 4 responses
    model, again = Reranker.load(tmp_path / "model"), Reranker.load(tmp_path / "model")
    assert model.settings.interaction == interaction
    contexts = ["user: 밥 먹었어요", "user: 오늘 좀 피곤해요"]
    candidates = [["푹 쉬세요", "식사는 맛있게 하셨어요"], ["푹 쉬세요"]]
    scores = model.score(contexts, candidates)
    assert scores.shape == (2, 2) and scores[1, 1] == -np.inf  # a short row is padded
    assert np.array_equal(scores, again.score(contexts, candidates))
    assert np.array_equal(scores, model.score(contexts, candidates))  # dropout is off
    # a pair scored alone vs in a padded batch of two: equal up to float32 rounding in
    # the batched matrix products (seen: 0.0110987537 vs 0.0110986792)
    alone = model.score_pairs(contexts[:1], ["푹 쉬세요"])[0]
    assert scores[0, 0] == pytest.approx(alone, rel=1e-4, abs=1e-6)
    rows = [["푹 쉬세요", "식사는 맛있게 하셨어요"], ["네", "푹 쉬세요"]] * 3  # equal widths:
    grouped = model.score(contexts * 3, rows, batch_size=4)  # attention reads each context
    flat = model.score_pairs(
        [c for c in contexts * 3 for _ in range(2)],  # once per row
        [r for row in rows for r in row],
    )
    assert np.allclose(grouped.ravel(), flat, rtol=1e-4, atol=1e-6)


@INTERACTIONS
def test_mc_dropout_varies_between_passes_and_repeats_for_a_seed(interaction):
    model = Reranker.create(
        tiny(frozen=True), SETTINGS.model_copy(update={"dropout": 0.3, "interaction": interaction})
    )
    contexts, responses = ["user: 밥 먹었어요"] * 2, ["푹 쉬세요", "바보 같은 소리 마세요"]
    state = torch.random.get_rng_state()
    samples = model.mc_dropout(contexts, responses, passes=8, seed=1)
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's RNG untouched
    assert samples.shape == (2, 8) and samples.std(axis=1).min() > 0
    assert np.array_equal(samples, model.mc_dropout(contexts, responses, passes=8, seed=1))
    assert not np.array_equal(samples, model.mc_dropout(contexts, responses, passes=8, seed=2))
    assert not model.head.training  # dropout is off again afterwards
    plain = model.score_pairs(contexts, responses)
    assert np.array_equal(plain, model.score_pairs(contexts, responses))


def test_scores_from_context_states_match_the_pair_scores():
    model = Reranker.create(
        tiny(frozen=True), SETTINGS.model_copy(update={"interaction": "attention", "dropout": 0.3})
    )
    context, responses = "user: 밥 먹었어요", ["푹 쉬세요", "식사는 맛있게 하셨어요", "네"]
    states = model.backbone.encode([context], SETTINGS.context_max_tokens, "left")
    pairs = model.score_pairs([context] * 3, responses)
    assert np.allclose(model.score_states(states, responses), pairs, rtol=1e-4, atol=1e-6)
    samples = model.score_states(states, responses, passes=6, seed=3)
    assert samples.shape == (3, 6) and samples.std(axis=1).min() > 0
    assert np.array_equal(samples, model.score_states(states, responses, passes=6, seed=3))
    joint = Reranker.create(tiny(frozen=True), SETTINGS.model_copy(update={"interaction": "joint"}))
    with pytest.raises(ValueError, match="only an attention reranker"):
        joint.score_states(states, responses)


def test_bad_inputs_are_clear_errors(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputFileError, match="holds no examples"):
        train_reranker(empty, tmp_path / "m", "unused")
    one = tmp_path / "one.jsonl"
    write_jsonl(
        one, [e.model_copy(update={"response": "네"}) for e in make_examples(6, negatives=False)]
    )
    with pytest.raises(InputFileError, match="fewer than 2 distinct"):
        train_reranker(one, tmp_path / "m", "unused", test_share=0)
    examples = tmp_path / "ex.jsonl"
    write_jsonl(examples, make_examples(12))
    with pytest.raises(InputFileError, match="no such model directory"):
        train_reranker(examples, tmp_path / "m", str(tmp_path / "no-backbone"))
    from rolecall.train.classifier import Classifier, ClassifierSettings

    Classifier.create(tiny(frozen=True), ClassifierSettings(width=4)).save(tmp_path / "clf")
    with pytest.raises(InputFileError, match="holds a classifier model, not a reranker"):
        Reranker.load(tmp_path / "clf")
