"""G-Eval weighting on known numbers, and the three modes on scripted backends."""

import math

import pytest
from pydantic import BaseModel, ConfigDict

from rolecall.errors import ConfigError
from rolecall.eval.geval import from_top_logprobs, geval, summarise, weighted_score
from rolecall.jsonl import ResumableJsonl, read_jsonl
from rolecall.llm import LLM, load_backend
from rolecall.llm.base import Backend, Completion, TokenLogprob, TopLogprob
from rolecall.llm.registry import BackendEntry
from rolecall.records import Verdict
from tests.fakes import use_backend


def test_weighted_score_is_the_expectation():
    assert weighted_score({1: 0.1, 2: 0.2, 3: 0.4, 4: 0.2, 5: 0.1}) == pytest.approx(3.0)
    assert weighted_score({5: 0.5, 4: 0.5}) == pytest.approx(4.5)
    assert weighted_score({2: 2.0, 4: 2.0}) == pytest.approx(3.0)  # normalised first


def test_score_tokens_among_top_alternatives():
    top = [
        TopLogprob(token=" 4", logprob=math.log(0.5)),
        TopLogprob(token="점", logprob=-1),
        TopLogprob(token="5", logprob=math.log(0.3)),
        TopLogprob(token="4", logprob=-9),
    ]
    probs = from_top_logprobs(top)
    assert probs == pytest.approx({4: 0.625, 5: 0.375})
    assert weighted_score(probs) == pytest.approx(4.375)
    assert from_top_logprobs([TopLogprob(token="없음", logprob=-0.1)]) is None


class ScoreOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    style: str = "score"


class Scorer(Backend):
    """score: P(4)=0.5, P(5)=0.5; logprobs: top token '2'; sample: answers '4점' or '5'."""

    scheme = "scorer"
    supports_loglikelihood = True
    supports_logprobs = True
    max_concurrency = 2

    def __init__(self, location, options):
        self.model_id = "scorer"
        self.style = options.style
        self.supports_loglikelihood = self.style == "score"
        self.supports_logprobs = self.style in ("logprobs", "mute")

    def complete(self, request, sample_index=0):
        if request.kind == "score":
            lp = math.log(0.5) if request.score_text in (" 4", " 5") else -50.0
            return Completion(
                text=request.score_text,
                logprobs=[TokenLogprob(token=request.score_text, logprob=lp)],
            )
        if self.style == "mute":  # no score anywhere in the answer
            top = [TopLogprob(token="없음", logprob=-0.1)]
            return Completion(
                text="없음", logprobs=[TokenLogprob(token="없음", logprob=-0.1, top=top)]
            )
        if request.params.logprobs:
            top = [
                TopLogprob(token="2", logprob=math.log(0.8)),
                TopLogprob(token="3", logprob=math.log(0.2)),
            ]
            return Completion(text="2", logprobs=[TokenLogprob(token="2", logprob=-0.2, top=top)])
        return Completion(text="4점" if sample_index % 2 else "5")


@pytest.fixture(autouse=True)
def _scorer(monkeypatch):
    use_backend(
        monkeypatch, "scorer", BackendEntry(factory=Scorer, options=ScoreOptions, summary="t")
    )


@pytest.mark.parametrize(
    "style, mode, score",
    [("score", "score", 4.5), ("logprobs", "logprobs", 2.2), ("sample", "sample", 4.5)],
)
def test_each_mode_and_auto(style, mode, score, tmp_path):
    llm = LLM(load_backend(f"scorer:x?style={style}"))
    with ResumableJsonl(tmp_path / "votes.jsonl", lambda r: (r["item_id"], r["judge"])) as out:
        results = geval(
            llm,
            ["문장 하나", "문장 둘"],
            ["중립 하나", "중립 둘"],
            ["overall", "consistency"],
            samples=4,
            progress=False,
            votes_out=out,
        )
    votes = list(read_jsonl(tmp_path / "votes.jsonl", Verdict))
    assert len(votes) == 2 * 2 * (4 if mode == "sample" else 1)  # items x criteria x samples
    assert {v.judge for v in votes if v.item_id == "0"} == {
        f"geval_{c}/{mode}/{s}"
        for c in ("overall", "consistency")
        for s in range(4 if mode == "sample" else 1)
    }
    assert all(v.parse_status == "parsed" for v in votes)
    assert len(results) == 4 and {r.mode for r in results} == {mode}
    assert all(r.score == pytest.approx(score) for r in results)
    summary = summarise(results)
    assert summary["overall"] == {
        "mean": pytest.approx(score),
        "scored": 2,
        "items": 2,
        "mode": mode,
    }
    if mode == "sample":
        assert results[0].samples == [5, 4, 5, 4]


def test_consistency_needs_pairs_and_criteria_are_checked():
    llm = LLM(load_backend("scorer:x"))
    with pytest.raises(ConfigError, match="pairs"):
        geval(llm, ["a"], None, ["consistency"], progress=False)
    with pytest.raises(ConfigError, match="criterion"):
        geval(llm, ["a"], None, ["toxicity"], progress=False)
    with pytest.raises(ConfigError, match="mode"):
        geval(llm, ["a"], None, ["overall"], mode="vote", progress=False)


@pytest.mark.parametrize(
    "mode, problem",
    [
        ("logprobs", "no score token among the top logprobs"),
        ("sample", "no sampled answer holds a score 1-5"),
    ],
)
def test_an_answer_without_a_score_is_no_score_with_the_reason(mode, problem, tmp_path):
    llm = LLM(load_backend("scorer:x?style=mute"))
    with ResumableJsonl(tmp_path / "votes.jsonl", lambda r: (r["item_id"], r["judge"])) as out:
        results = geval(
            llm, ["문장"], None, ["fluency"], mode=mode, samples=2, progress=False, votes_out=out
        )
    assert [(r.score, r.problem, r.samples) for r in results] == [(None, problem, [])]
    votes = list(read_jsonl(tmp_path / "votes.jsonl", Verdict))
    assert votes and all(v.parse_status == "unparsed" and v.raw_output == "없음" for v in votes)
