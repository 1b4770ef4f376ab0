"""bench/feature_layers.py's pure helpers: the layer sets, the data split, the per-layer
states (a cut model's, checked on a tiny random Gemma 3), pooling in the texts' order, the
linear bi-encoder and the targets line."""

from __future__ import annotations

import numpy as np
import pytest

from tests.bench.loading import load_bench

torch = pytest.importorskip("torch")

bench = load_bench("feature_layers")

from tests.tiny_models import TEXTS, tiny_gemma  # noqa: E402


def test_layer_sets_are_each_layer_the_mean_and_contiguous_windows():
    sets = bench.layer_sets(7, width=3)
    assert [sets[f"layer {n}"] for n in range(1, 8)] == [[n] for n in range(7)]
    assert sets["mean 1-7"] == list(range(7))
    assert sets["mean 1-3"] == [0, 1, 2] and sets["mean 4-6"] == [3, 4, 5]
    assert "mean 7-7" not in sets and len(sets) == 7 + 1 + 2
    pooled = np.arange(2 * 3 * 2, dtype=np.float16).reshape(2, 3, 2)
    assert np.allclose(bench.combine(pooled, [0, 2]), pooled[:, [0, 2]].mean(1))


def test_qa_split_is_seeded_one_pair_per_question_and_disjoint(tmp_path):
    path = tmp_path / "chat.csv"
    rows = [f"질문{i % 40},답{i}" for i in range(60)]  # questions repeat
    path.write_text("Q,A,label\n" + "\n".join(f"{r},0" for r in rows), encoding="utf-8")
    train, test = bench.qa_split(path, 25, 10, seed=1)
    assert len(train) == 25 and len(test) == 10
    assert not {q for q, _ in train} & {q for q, _ in test}
    assert len({q for q, _ in train + test}) == 35
    assert (train, test) == bench.qa_split(path, 25, 10, seed=1)
    assert (train, test) != bench.qa_split(path, 25, 10, seed=2)


def test_layer_states_are_what_a_cut_model_gives_and_pooling_keeps_the_order():
    whole = tiny_gemma()
    batch = whole.batch_texts(TEXTS, 16)
    states = bench.layer_states(whole.model, batch)
    assert len(states) == 3
    mask = batch["attention_mask"].bool()
    for layer in (1, 2, 3):
        assert bench.cut_matches(whole, TEXTS, layer, 16) < 1e-5
        cut_hidden, _ = tiny_gemma(layer).encode(TEXTS, 16)
        assert torch.allclose(states[layer - 1][mask], cut_hidden[mask], atol=1e-5)
    texts = ["가 나 다 라 마 가 나", "오늘", "식사는 하셨어요", "가"]
    pooled = bench.pooled_layers(whole, texts, 16, batch_size=2)
    assert pooled.shape == (4, 3, 32)
    for row, text in enumerate(texts):  # sorted by length inside, returned in order
        alone = bench.layer_states(whole.model, whole.batch_texts([text], 16))
        assert np.allclose(pooled[row, 1], alone[1][0].mean(0).numpy(), atol=1e-2)


def test_the_bi_encoder_learns_a_linear_match_and_the_targets_line():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(200, 16)).astype(np.float32)
    a = q @ rng.normal(size=(16, 16)).astype(np.float32)  # the answer: a linear map of q
    score = bench.bi_encoder(q[:150], a[:150], dim=16, epochs=30, batch_size=32)
    matrix = score(q[150:], a[150:])
    assert (matrix.argmax(1) == np.arange(50)).mean() > 0.5  # chance: 0.02
    line = bench.targets_line(
        {"best_f1": 0.80, "tfidf_f1": 0.76}, {"best_hits": 0.5, "bm25_hits": 0.3}, 2.0
    )
    assert line["classifier_best_layer_vs_tfidf"] == {
        "value": 0.04,
        "target": ">= 0.05",
        "met": False,
    }
    assert line["retriever_best_layer_vs_bm25"]["met"] and line["cut_speed_up"]["met"]
