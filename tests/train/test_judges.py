"""Trained models as judges: load_trained_judge and the DirectJudge interface."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rolecall.errors import ConfigError, InputFileError
from rolecall.judge.out_of_bounds import Item
from rolecall.judge.pair_filters import LABELS, pair_id
from rolecall.judge.voting import DirectJudge
from rolecall.records import Category, Pair, RoleSpec
from rolecall.train.baselines import TfidfModel, TfidfSettings
from rolecall.train.judges import load_trained_judge
from tests.train.kda_data import implicit, neutral

PAIRS = [
    Pair(neutral=neutral(50), toxic=implicit(50, 0), provenance={"candidate_id": "c-1"}),
    Pair(neutral=neutral(51), toxic="시발 진짜 개새끼들 51"),
    Pair(neutral=neutral(52), toxic=neutral(52)),
]


def is_direct_judge(judge) -> bool:
    """What ``voting.DirectJudge`` asks for (a Protocol, not checkable at run time)."""
    members = [m for m in vars(DirectJudge) if not m.startswith("_")]
    members += list(DirectJudge.__annotations__)
    return all(hasattr(judge, m) for m in members) and judge.kind == "classifier"


@pytest.fixture(scope="module")
def implicit_dir(tmp_path_factory):
    model = TfidfModel(TfidfSettings(task="implicit", labels=["implicit", "none", "explicit"]))
    texts = [implicit(i, i) for i in range(20)] + [neutral(i) for i in range(20)]
    texts += [f"시발 진짜 개새끼들 {i}" for i in range(20)]
    model.fit(texts, ["implicit"] * 20 + ["none"] * 20 + ["explicit"] * 20)
    return model.save(tmp_path_factory.mktemp("models") / "implicit")


@pytest.fixture(scope="module")
def consistency_dir(tmp_path_factory):
    model = TfidfModel(
        TfidfSettings(task="consistency", labels=["maintained", "shifted"], pair=True)
    )
    kept = [(neutral(i), implicit(i, i)) for i in range(20)]
    shifted = [(neutral(i), implicit(i + 7, i)) for i in range(20)]
    shifted += [(neutral(i), neutral(i)) for i in range(20)]
    model.fit(kept + shifted, ["maintained"] * 20 + ["shifted"] * 40)
    return model.save(tmp_path_factory.mktemp("models") / "consistency")


@pytest.mark.parametrize("task", ["implicit", "consistency"])
def test_a_kda_judge_answers_with_its_tasks_labels(task, implicit_dir, consistency_dir):
    path = implicit_dir if task == "implicit" else consistency_dir
    judge = load_trained_judge(str(path), task)
    assert is_direct_judge(judge)
    assert (judge.kind, judge.name, judge.model) == ("classifier", task, f"classifier:{path}")
    verdicts = judge.verdicts(PAIRS)
    outcomes = set(LABELS[task]["ko"].values())
    assert (
        [v.item_id for v in verdicts]
        == [pair_id(p) for p in PAIRS]
        == [judge.item_id(p) for p in PAIRS]
    )
    for verdict in verdicts:
        assert verdict.parse_status == "parsed" and verdict.label in outcomes
        assert verdict.kind == "classifier" and verdict.model == judge.model
        assert set(verdict.probabilities) == outcomes
        assert (
            verdict.score
            == verdict.probabilities[verdict.label]
            == max(verdict.probabilities.values())
        )
        assert json.loads(verdict.raw_output) == verdict.probabilities
    assert judge.verdicts([]) == []


def test_the_judges_see_what_they_were_taught(implicit_dir, consistency_dir):
    labels = [v.label for v in load_trained_judge(implicit_dir, "implicit").verdicts(PAIRS)]
    assert labels == ["implicit", "explicit", "none"]
    pairs = [PAIRS[0], PAIRS[2]]
    labels = [v.label for v in load_trained_judge(consistency_dir, "consistency").verdicts(pairs)]
    assert labels == ["maintained", "shifted"]


def test_wrong_models_tasks_and_folders_are_clear_errors(implicit_dir, tmp_path):
    with pytest.raises(InputFileError, match="trained for 'implicit'") as error:
        load_trained_judge(implicit_dir, "consistency")
    assert "rolecall train consistency-judge" in error.value.fix
    # a TF-IDF model can judge out_of_bounds (--backbone tfidf), but not this one
    with pytest.raises(InputFileError, match="not an out-of-bounds classifier") as error:
        load_trained_judge(implicit_dir, "out_of_bounds")
    assert "rolecall train classifier" in error.value.fix
    with pytest.raises(InputFileError, match="does not exist") as error:
        load_trained_judge(tmp_path / "nowhere", "implicit")
    assert "rolecall train implicit-judge" in error.value.fix
    with pytest.raises(InputFileError, match="no model.json"):
        load_trained_judge(tmp_path, "implicit")
    with pytest.raises(ConfigError, match="no trained judge"):
        load_trained_judge(implicit_dir, "fluency")


def test_the_out_of_bounds_classifier_flags_at_its_threshold(tmp_path):
    pytest.importorskip("torch")
    from rolecall.records import Turn
    from rolecall.train.classifier import Classifier, ClassifierSettings
    from rolecall.train.loop import TrainConfig
    from tests.dialogue_data import make_examples, tiny

    settings = ClassifierSettings(max_length=48, response_max=16, width=16)
    model = Classifier.create(tiny(frozen=True), settings)
    model.fit(make_examples(12), TrainConfig(epochs=2, batch_size=8), progress=False)
    model.save(tmp_path / "clf")
    history = (Turn(role="user", text="밥 먹었어요"),)
    items = [Item("d1", 1, history, "푹 쉬세요"), Item("d2", 3, history, "바보 같은 소리 마세요")]
    spec = RoleSpec(
        name="bot",
        outline="a care bot",
        categories=[
            Category(name="safety", description="no insults", error_category="unsafe reply")
        ],
    )
    judge = load_trained_judge(tmp_path / "clf", "out_of_bounds", spec)
    assert is_direct_judge(judge) and judge.name == "out_of_bounds"
    assert judge.item_id(items[1]) == "d2#3"
    proba = model.predict_proba([list(i.history) for i in items], [i.response for i in items])
    for verdict, p in zip(judge.verdicts(items), proba[:, 1]):
        flagged = p >= settings.threshold
        assert verdict.label == ("out-of-bounds" if flagged else "in-bounds")
        assert verdict.category == ("unsafe reply" if flagged else None)
        assert np.isclose(verdict.probabilities["out-of-bounds"], p, atol=1e-6)
        assert verdict.kind == "classifier" and verdict.score >= 0.5
    # every turn flagged: the category without a spec, and with a spec that has no safety
    model.settings = model.settings.model_copy(update={"threshold": 1e-9})
    model.save(tmp_path / "always")
    always = load_trained_judge(tmp_path / "always", "out_of_bounds")
    assert {v.category for v in always.verdicts(items)} == {"not safe"}
    style = spec.categories[0].model_copy(update={"name": "style"})
    always = load_trained_judge(
        tmp_path / "always", "out_of_bounds", spec.model_copy(update={"categories": [style]})
    )
    assert {v.category for v in always.verdicts(items)} == {"not safe"}
