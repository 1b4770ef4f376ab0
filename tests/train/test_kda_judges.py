"""The trained K/DA judges: recipes, the held-out rule, training on both backbones."""

from __future__ import annotations

import json

import pytest

from rolecall.errors import ConfigError, InputFileError
from rolecall.formats.kda import read_kda_csv
from rolecall.train.detox_model import split_pairs
from rolecall.train.kda_judges import (
    consistency_data,
    implicit_data,
    label_metrics,
    limited,
    shifted_pairs,
    train_judge,
)
from tests.paths import SHARED_DATA
from tests.train.kda_data import implicit, neutral, vocabulary, write_data_dir


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return write_data_dir(tmp_path_factory.mktemp("shared"))


def held_out_neutrals(data_dir, holdout=0.1, seed=0) -> set[str]:
    pairs = read_kda_csv(data_dir / "detox" / "kda_ko.csv")
    return {p.neutral for p in split_pairs(pairs, holdout, seed)[1]}


def test_the_implicit_recipe_labels_each_source_and_keeps_held_out_pairs_out(data_dir):
    data = implicit_data(data_dir, holdout=0.2, seed=3)
    held = held_out_neutrals(data_dir, 0.2, 3)
    assert held and data.labels == ["implicit", "none", "explicit"]
    texts = {x for x, _ in data.train}
    assert not held & texts  # no held-out neutral sentence, and none of its rewrites
    assert not any(n.split(" 얘기 ")[1] in t for n in held for t in texts if "좋아할" in t)
    assert {y for x, y in data.test["kda"] if x in held} == {"none"}
    labels = dict(data.train)
    assert labels[next(t for t in texts if t.startswith("시발"))] == "explicit"
    assert labels[next(t for t in texts if "좋아할" in t)] == "implicit"
    assert labels[next(t for t in texts if "좋아하세요" in t)] == "none"
    assert data.recipe["kda_holdout"] == 0.2 and data.recipe["seed"] == 3


def test_the_consistency_recipe_pairs_kda_against_its_failures(data_dir):
    data = consistency_data(data_dir)
    held = held_out_neutrals(data_dir)
    assert not held & {a for (a, _), _ in data.train}
    labels = {pair: y for pair, y in data.train}
    kda = {(p.neutral, p.toxic) for p in read_kda_csv(data_dir / "detox" / "kda_ko.csv")}
    assert all(labels[pair] == "maintained" for pair in kda if pair in labels)
    assert all(y == "shifted" for (a, b), y in data.train if a == b)  # copies
    assert all(y == "shifted" for (a, b), y in data.train if "남자가" in a)  # paraphrases
    assert {y for _, y in data.test["kda"]} == {"maintained", "shifted"}

    def bare(text):
        return text.replace(" ", "").rstrip(".!?~")

    near = [(a, b) for (a, b), y in data.train if a != b and bare(a) == bare(b)]
    assert near and data.recipe["sources"]["near_copy"] > 0  # surface edits, shifted
    assert all(labels[pair] == "shifted" for pair in near if pair not in kda)
    hard = data.test["hard"]
    assert {y for _, y in hard} == {"maintained", "shifted"}
    assert {a for (a, _), _ in hard} <= held  # near-copies of the held-out sentences only
    toxic = {p.toxic.replace(" ", "") for p in read_kda_csv(data_dir / "detox" / "kda_ko.csv")}
    assert all(b.replace(" ", "") in toxic for (_, b), y in hard if y == "maintained")


def test_mismatched_pairs_never_pair_a_sentence_with_its_own_rewrite():
    pairs = read_kda_csv_rows()
    for first, second in shifted_pairs(pairs, seed=1):
        assert not any(p.neutral == first and p.toxic == second for p in pairs)


def read_kda_csv_rows():
    from rolecall.records import Pair

    return [Pair(neutral=f"문장 {i // 2}", toxic=f"나쁜 문장 {i}") for i in range(10)]


def test_limits_and_metrics():
    items = [(str(i), "a" if i % 3 else "b") for i in range(30)]
    kept = limited(items, 4, seed=0)
    assert [y for _, y in kept].count("a") == 4 and [y for _, y in kept].count("b") == 4
    metrics = label_metrics(["a", "a", "b", "b"], ["a", "b", "b", "b"])
    assert metrics == {"accuracy": 0.75, "macro_f1": pytest.approx(0.7333, abs=1e-4)}


def test_a_tfidf_judge_trains_measures_and_records_its_split(data_dir, tmp_path):
    metrics = train_judge("implicit", data_dir, tmp_path / "m", holdout=0.2, seed=3)
    assert metrics["backbone"] == "tfidf" and metrics["kda_examples"] > 0
    assert 0 <= metrics["macro_f1"] <= 1 and metrics["accuracy"] > 0.8
    saved = json.loads((tmp_path / "m" / "model.json").read_text())
    assert saved["kind"] == "tfidf" and saved["settings"]["task"] == "implicit"
    assert saved["metrics"]["data"]["kda_holdout"] == 0.2
    assert saved["metrics"]["data"]["seed"] == 3


def test_the_consistency_judge_reads_what_a_rewrite_added_by_default(data_dir, tmp_path):
    metrics = train_judge("consistency", data_dir, tmp_path / "c", holdout=0.2, seed=3)
    saved = json.loads((tmp_path / "c" / "model.json").read_text())
    assert saved["settings"]["views"] == ["chars", "morphemes", "sentence", "content"]
    assert saved["settings"]["pair"] and metrics["hard_examples"] > 0
    assert {"hard_macro_f1", "baseline_hard_macro_f1"} <= set(metrics)


def test_a_head_on_a_frozen_tiny_backbone_trains_only_the_head_and_the_loss_falls():
    torch = pytest.importorskip("torch")
    from rolecall.train.label_model import LabelModel, LabelSettings
    from rolecall.train.loop import TrainConfig
    from tests.tiny_models import tiny_backbone

    backbone = tiny_backbone(vocabulary(), vocab_size=150)
    backbone = type(backbone)(backbone.model, backbone.tokenizer, "in-code", frozen=True)
    settings = LabelSettings(
        task="implicit", labels=["implicit", "none", "explicit"], max_length=32, width=16
    )
    model = LabelModel.create(backbone, settings)
    head_before = [p.detach().clone() for p in model.head.parameters()]
    backbone_before = next(backbone.parameters()).detach().clone()
    texts = [implicit(i, 0) for i in range(12)] + [neutral(i) for i in range(12)]
    labels = ["implicit"] * 12 + ["none"] * 12
    # 16 passes: the unseen slur below is told at every head seed 0-4 (at 8, two in five)
    history = model.fit(texts, labels, TrainConfig(epochs=16, batch_size=8, lr=1e-2), False)
    assert history["last_loss"] < history["first_loss"]
    assert all(not torch.equal(a, b) for a, b in zip(head_before, model.head.parameters()))
    assert torch.equal(next(backbone.parameters()), backbone_before)
    proba = model.predict_proba([implicit(30, 1), neutral(30)])
    assert proba.shape == (2, 3) and model.predict([implicit(30, 1)]) == ["implicit"]


def test_a_neural_judge_is_measured_beside_the_baseline_and_reloads(data_dir, tmp_path):
    pytest.importorskip("torch")
    from rolecall.train.label_model import LabelModel
    from rolecall.train.loop import TrainConfig
    from tests.tiny_models import tiny_backbone

    backbone = tiny_backbone(vocabulary(), vocab_size=150)
    backbone = type(backbone)(backbone.model, backbone.tokenizer, "in-code", frozen=True)
    metrics = train_judge(
        "consistency",
        data_dir,
        tmp_path / "m",
        backbone,
        limit=10,
        settings={"max_length": 48, "response_max": 24, "width": 16},
        config=TrainConfig(epochs=2, batch_size=8, lr=1e-2),
        progress=False,
    )
    assert metrics["backbone"] == "in-code" and metrics["steps"] == 6
    assert {"macro_f1", "baseline_macro_f1", "kda_macro_f1"} <= set(metrics)
    model = LabelModel.load(tmp_path / "m")
    assert model.labels == ["maintained", "shifted"] and model.settings.pair
    assert model.predict_proba([("축구 얘기", "축구 얘기 꼰대야")]).shape == (1, 2)
    from rolecall.records import Pair
    from rolecall.train.judges import load_trained_judge

    judge = load_trained_judge(tmp_path / "m", "consistency")
    verdicts = judge.verdicts([Pair(neutral="축구 얘기", toxic="축구 얘기 꼰대야")])
    assert verdicts[0].label in ("maintained", "shifted") and verdicts[0].kind == "classifier"


def test_bad_tasks_shares_and_folders_are_clear(data_dir, tmp_path):
    with pytest.raises(ConfigError, match="unknown judge task"):
        train_judge("fluency", data_dir, tmp_path / "m")
    with pytest.raises(ConfigError, match="held-out share"):
        train_judge("implicit", data_dir, tmp_path / "m", holdout=0)
    with pytest.raises(InputFileError, match="is missing") as error:
        train_judge("implicit", tmp_path / "nowhere", tmp_path / "m")
    assert "shared data folder" in error.value.fix


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_DATA / "detox" / "kda_ko.csv").is_file(), reason="no shared data")
def test_real_data_small_tfidf_judges_beat_chance(tmp_path):
    # small and fast; the full-size numbers are in docs/trained-judges.md
    offensive = train_judge("implicit", SHARED_DATA, tmp_path / "i", limit=400, test_limit=100)
    assert offensive["kda_examples"] == 200 and offensive["kda_macro_f1"] > 0.6
    pairs = train_judge("consistency", SHARED_DATA, tmp_path / "c", limit=400, test_limit=100)
    assert pairs["kda_macro_f1"] > 0.8
