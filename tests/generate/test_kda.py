"""K/DA candidate generation on the fake backend and a small real slang index."""

from __future__ import annotations

import pytest

from rolecall.engines.local import LocalEngine
from rolecall.generate.kda import (
    KdaConfig,
    candidate_problem,
    generate_candidates,
    plan_candidates,
)
from rolecall.jsonl import read_jsonl
from rolecall.llm import LLM, Cache, load_backend
from rolecall.prompts import load_template
from rolecall.slang import SlangIndex, build_index

COMMENTS = [
    "주식 또 떨어졌네 개미들 곡소리 난다",
    "회의 또 취소냐 윗분들 일 안하시네",
    "날씨 좋은데 방구석 여포들 뭐하냐",
    "점심 메뉴 고르기 귀찮다 진짜",
    "회의 길게 하는 부장 진짜 노답",
    "비 오면 출근 안하고 싶다 ㅋㅋ",
    "주식 물렸다 한강 가야하나",
    "회의실 예약 또 꼬였네 ㅉㅉ",
    "오늘도 야근각 ㅋㅋ",
    "점심 먹고 졸린 건 국룰",
]
SENTENCES = [("s:1", "오늘 회의가 취소되었습니다."), ("s:2", "주식이 많이 떨어졌어요.")]


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> SlangIndex:
    root = tmp_path_factory.mktemp("slang")
    corpus = root / "comments.txt"
    corpus.write_text("\n".join(COMMENTS) + "\n", encoding="utf-8")
    build_index([str(corpus)], root / "index", progress=False)
    return SlangIndex.load(root / "index")


def test_one_request_per_sentence_and_n_with_n_comments_each(index):
    template = load_template("detox_rewrite")
    plan = plan_candidates(SENTENCES, index, KdaConfig(), template)
    assert [(p.sentence_id, p.n) for p in plan] == [
        (s, n) for s, _ in SENTENCES for n in (0, 3, 5, 7, 9)
    ]
    for p in plan:
        # a small corpus has fewer matching comments than n: provenance says how many
        assert len(p.comment_ids) <= p.n and (p.n == 0 or p.comment_ids)
        listed = [line for line in p.request.prompt.splitlines() if line.startswith("- ")]
        assert len(listed) == len(p.comment_ids)
        assert p.request.prompt.endswith(f"중립: {p.neutral}\n변환:")
    zero = plan[0]
    assert "댓글" not in zero.request.prompt and zero.comment_ids == ()
    three = plan[1]
    assert len(three.comment_ids) == 3
    assert three.comment_ids[0] == "comments.txt:2"  # the meeting comment ranks first
    assert "회의 또 취소냐" in three.request.prompt
    assert len({p.request.params.seed for p in plan}) == len(plan)


def test_larger_n_extends_smaller_n(index):
    plan = plan_candidates(
        SENTENCES[:1], index, KdaConfig(ns=(3, 5)), load_template("detox_rewrite")
    )
    assert plan[1].comment_ids[:3] == plan[0].comment_ids


def test_n_above_zero_needs_an_index():
    with pytest.raises(ValueError, match="slang index"):
        plan_candidates(SENTENCES, None, KdaConfig(), load_template("detox_rewrite"))
    plan = plan_candidates(SENTENCES, None, KdaConfig(ns=(0,)), load_template("detox_rewrite"))
    assert len(plan) == 2


def test_candidates_carry_provenance_and_resume(index, tmp_path):
    cache = tmp_path / "cache.sqlite"
    llm = LLM(load_backend("fake:x"), Cache(cache))
    counts = generate_candidates(LocalEngine(llm), SENTENCES, index, KdaConfig(), tmp_path)
    assert counts["planned"] == 10 and counts["candidates"] + counts["rejected"] == 10
    pairs = list(read_jsonl(tmp_path / "candidates.jsonl"))
    first = pairs[0]["provenance"]
    assert set(first) == {
        "candidate_id",
        "sentence_id",
        "n",
        "comment_ids",
        "prompt_hash",
        "model",
        "seed",
    }
    assert first["model"] == "fake:fake-x" and first["prompt_hash"].startswith("sha256:")
    again = LLM(load_backend("fake:x"), Cache(cache))
    generate_candidates(LocalEngine(again), SENTENCES, index, KdaConfig(), tmp_path)
    assert again.backend.calls == 0
    assert len(list(read_jsonl(tmp_path / "candidates.jsonl"))) == len(pairs)


def test_empty_and_copied_rewrites_are_rejected():
    assert candidate_problem("밥 먹었어요?", "") == "empty rewrite"
    assert "repeats" in candidate_problem("밥 먹었어요?", "밥  먹었어요?")
    assert candidate_problem("밥 먹었어요?", "밥은 처먹고 다니냐") is None
