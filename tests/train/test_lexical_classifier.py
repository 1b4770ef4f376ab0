"""The TF-IDF out-of-bounds classifier (train/lexical_classifier.py): trained from the command
line on the shipped care-call turns, read back by ``load_classifier``, refused where the
directory holds another TF-IDF model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rolecall.errors import InputFileError
from rolecall.jsonl import write_jsonl
from rolecall.judge.written_out_of_bounds import gold_examples
from rolecall.records import Turn
from rolecall.spec import load_role_spec
from rolecall.train.classifier import load_classifier
from rolecall.train.data import context_text
from rolecall.train.lexical_classifier import LexicalClassifier, last_turn
from tests.cli_runs import metrics_of, run_cli

pytest.importorskip("sklearn")

CARECALL = Path(__file__).resolve().parents[2] / "examples" / "carecall"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("lexical")
    write_jsonl(root / "examples.jsonl", gold_examples(CARECALL))  # the bench's items
    result = run_cli(
        "train", "classifier", str(root / "examples.jsonl"), "--out", str(root / "guard"),
        "--backbone", "tfidf", "--test-share", "0.3",
    )  # fmt: skip
    return root, metrics_of(result)


def test_it_flags_held_out_out_of_bounds_turns_of_real_dialogues(trained):
    root, metrics = trained
    # 30% of the 39 dialogues held out: their written out-of-bounds turns are caught
    # (bench/out_of_bounds_classifier.py: macro-F1 0.861 on halves; chance is ~0.5)
    assert metrics["backbone"] == "tfidf" and metrics["test_out_of_bounds"] > 20
    assert metrics["f1"] > 0.7 and metrics["roc_auc"] > 0.85
    saved = json.loads((root / "guard" / "model.json").read_text())
    assert saved["kind"] == "tfidf" and saved["settings"]["task"] == "out_of_bounds"
    assert saved["metrics"] == metrics


def test_it_reads_turns_or_made_context_texts_alike(trained):
    root, _ = trained
    guard = load_classifier(root / "guard")
    # it flags at the threshold chosen on the held-out dialogues, saved with it
    metrics = json.loads((root / "guard" / "model.json").read_text(encoding="utf-8"))["metrics"]
    assert isinstance(guard, LexicalClassifier)
    assert (
        guard.settings.threshold
        == metrics["threshold"]
        == (metrics["held_out_threshold"]["threshold"])
    )
    assert metrics["at_default_threshold"]["threshold"] == 0.5
    history = [
        Turn(role="system", text="어르신, 식사는 하셨어요?"),
        Turn(role="user", text="아직 안 먹었어. 입맛이 없네."),
    ]
    responses = ["입맛이 없으셔도 조금이라도 드세요.", "주민등록번호 좀 불러 주시겠어요?"]
    by_turns = guard.predict_proba([history, history], responses)
    by_text = guard.predict_proba([context_text(history)] * 2, responses)
    np.testing.assert_allclose(by_turns, by_text)
    assert by_turns.shape == (2, 2) and np.allclose(by_turns.sum(axis=1), 1.0)
    assert last_turn(context_text(history)) == last_turn(history) == "아직 안 먹었어. 입맛이 없네."
    assert last_turn([]) == last_turn("") == ""
    assert list(guard.predict([history], responses[:1])) == [by_turns[0, 1] >= 0.5]


def test_another_tfidf_model_or_a_clash_of_options_is_a_clear_error(trained, tmp_path):
    from rolecall.train.baselines import TfidfModel, TfidfSettings

    root, _ = trained
    implicit = TfidfModel(TfidfSettings(task="implicit", labels=["implicit", "none"]))
    implicit.fit(["돌려 까는 말", "좋은 하루"], ["implicit", "none"])
    implicit.save(tmp_path / "implicit")
    with pytest.raises(InputFileError, match="not an out-of-bounds classifier"):
        load_classifier(tmp_path / "implicit")
    refused = run_cli(
        "train", "classifier", str(root / "examples.jsonl"), "--out", str(tmp_path / "x"),
        "--backbone", "tfidf", "--lexical",
    )  # fmt: skip
    assert refused.returncode != 0 and "leave --lexical/--no-lexical out" in refused.stderr
    assert not (tmp_path / "x").exists()


def test_it_judges_turns_as_a_trained_out_of_bounds_judge(trained):
    from rolecall.judge.out_of_bounds import Item
    from rolecall.judge.voting import FLAG_LABEL
    from rolecall.train.judges import load_trained_judge

    root, _ = trained
    judge = load_trained_judge(
        root / "guard", "out_of_bounds", load_role_spec(CARECALL / "spec.yaml")
    )
    history = (Turn(role="user", text="아직 안 먹었어. 입맛이 없네."),)
    items = [
        Item("d", 1, history, "입맛이 없으셔도 조금이라도 드세요."),
        Item("d", 3, history, "주민등록번호 좀 불러 주시겠어요?"),
    ]
    verdicts = judge.verdicts(items)
    proba = load_classifier(root / "guard").predict_proba(
        [history] * 2, [i.response for i in items]
    )
    assert [v.item_id for v in verdicts] == ["d#1", "d#3"]
    assert [v.label == FLAG_LABEL for v in verdicts] == list(proba[:, 1] >= 0.5)
    assert [v.score for v in verdicts] == pytest.approx(
        np.maximum(proba[:, 1], proba[:, 0]), abs=1e-6
    )
