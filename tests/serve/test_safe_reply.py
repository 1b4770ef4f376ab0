"""``when_unanswerable: safe_reply`` (serve/bot.py): when no candidate answers and the
generator would answer worse than retrieval, a safe turn instead of a non sequitur."""

from __future__ import annotations

from types import SimpleNamespace

from rolecall.eval.thresholds import precise_threshold
from rolecall.records import Turn
from rolecall.serve.bot import CLARIFY_REPLIES, FALLBACK_QUESTIONS, Bot, BotSettings


class Selector:
    """Retrieval whose best candidate has the given confidence."""

    reranker = object()  # MC dropout is the detector

    def __init__(self, confidence: float):
        self.confidence = confidence

    def select(self, history, mc_passes=0, detector=None):
        best = SimpleNamespace(text="비가 많이 오는군요.", retrieval_score=0.1, rerank_score=None)
        return SimpleNamespace(confidence=self.confidence, ranked=[best], best=best)


def bot(confidence: float, when: str = "safe_reply") -> Bot:
    settings = BotSettings(
        unanswerable_threshold=0.0, unanswerable_method="mc_dropout", when_unanswerable=when
    )
    return Bot(settings, selector=Selector(confidence))


def test_a_statement_gets_an_acknowledgement_and_a_topic_not_asked_yet():
    first = bot(-1.0).reply([Turn(role="user", text="무릎이 아파서 잠을 못 자요")])
    assert first.path == "fallback" and first.text.endswith(FALLBACK_QUESTIONS[0])
    assert first.stages[-1] == {"stage": "safe_reply", "text": first.text, "asked": False}
    history = [
        Turn(role="user", text="무릎이 아파서 잠을 못 자요"),
        Turn(role="system", text=first.text),
        Turn(role="user", text="그냥 그래요"),
    ]
    assert bot(-1.0).reply(history).text.endswith(FALLBACK_QUESTIONS[1])


def test_a_question_no_candidate_answers_gets_a_clarifying_question():
    reply = bot(-1.0).reply([Turn(role="user", text="그게 무슨 뜻이냐")])
    assert reply.path == "fallback" and reply.text == CLARIFY_REPLIES[0]


def test_an_answerable_turn_and_the_old_default_keep_the_candidate():
    assert bot(1.0).reply([Turn(role="user", text="비가 와요")]).path == "retrieved"
    # without safe_reply and without a generator: the best candidate, as before
    kept = bot(-1.0, when="generate").reply([Turn(role="user", text="비가 와요")])
    assert kept.path == "retrieved" and kept.text == "비가 많이 오는군요."
    assert "no generator" in kept.stages[0]["note"]


def test_a_precise_threshold_flags_the_most_positives_it_can_at_that_precision():
    labels = [1, 1, 0, 1, 0, 0]
    scores = [0.9, 0.8, 0.7, 0.6, 0.3, 0.2]
    assert precise_threshold(labels, scores, 0.9) == (0.8, 1.0, 2 / 3)
    assert precise_threshold(labels, scores, 0.7) == (0.6, 0.75, 1.0)
    assert precise_threshold([0, 1], [0.9, 0.1], 0.9) is None
