"""K/DA pairs as safety examples: what the templates reuse, the held-out split by neutral
sentence, determinism, the spec's category, LLM replies, and a classifier trained on them."""

from __future__ import annotations

import pytest

import tests.fakes  # noqa: F401  (registers fake:)
from rolecall.jsonl import read_jsonl, write_jsonl
from rolecall.llm import LLM, load_backend
from rolecall.records import Category, Example, Pair, RoleSpec
from rolecall.train.safety_examples import (
    NOT_SAFE,
    offensive_words,
    pair_key,
    safety_examples,
    split_pairs,
)

PAIRS = [
    Pair(neutral="자극적인 걸 내놓아라", toxic="또라이들 좋아하는 막장 드라마나 내놓아라."),
    Pair(neutral="자극적인 걸 내놓아라", toxic="기레기들아, 찌꺼기 기사 말고 어그로 좀 끌어봐라."),
    Pair(neutral="오늘 버스가 늦게 왔다", toxic="오늘 버스 기사 새끼가 굼벵이처럼 늦게 왔다."),
    Pair(neutral="옆집 사람이 시끄럽다", toxic="옆집 노인네가 시끄럽게 떠든다."),
    Pair(neutral="옆집 사람이 시끄럽다", toxic="옆집 노인네가 시끄럽게 떠든다."),  # repeated
]


def test_negatives_agree_or_echo_what_the_rewrite_added_and_positives_do_not():
    examples = safety_examples(PAIRS, seed=0)
    toxic = {p.toxic for p in PAIRS}
    assert len({e.history[-1].text for e in examples}) == 4  # the repeated pair once
    for example in examples:
        sentence = example.history[-1].text
        assert example.history[-1].role == "user" and sentence in toxic
        assert example.history[0].role == "system"
        pair = next(p for p in PAIRS if p.toxic == sentence)
        echoed = [w for w in offensive_words([pair])[0] if w in example.response]
        if example.label == "negative":
            assert example.category == NOT_SAFE
            assert sentence in example.response or echoed, example.response
        else:
            assert example.category is None
            assert sentence not in example.response and not echoed, example.response
    labels = [e.label for e in examples]
    assert labels.count("negative") >= 4 and labels.count("positive") == 8
    keys = {(tuple(t.text for t in e.history), e.response) for e in examples}
    assert len(keys) == len(examples)  # no duplicates


def test_the_echoed_words_are_the_ones_the_rewrite_added():
    words = offensive_words(PAIRS[2:4])
    assert "굼벵이" in words[0] and "새끼" in words[0] and "버스" not in words[0]
    assert words[1] == ["노인네"]  # 노인 + 네 glued, 옆집 was in the neutral sentence


def test_deterministic_for_a_seed_and_keyed_by_neutral_sentence():
    first, again = safety_examples(PAIRS, seed=3), safety_examples(PAIRS, seed=3)
    assert first == again
    other = safety_examples(PAIRS, seed=4)
    assert [e.model_dump() for e in other] != [e.model_dump() for e in first]
    for example in first:
        pair = next(p for p in PAIRS if p.toxic == example.history[-1].text)
        assert example.dialogue_id == pair_key(pair)
    assert pair_key(PAIRS[0]) == pair_key(PAIRS[1]) != pair_key(PAIRS[2])


def test_held_out_split_keeps_every_sentence_on_one_side():
    pairs = [Pair(neutral=f"중립 문장 {i // 3}", toxic=f"공격 문장 {i}") for i in range(90)]
    pairs += [Pair(neutral="다른 중립", toxic="공격 문장 5")]  # a repeated implicit sentence
    train, test = split_pairs(pairs, 0.3, seed=0)
    assert train and test and len(train) + len(test) == 90
    assert not {p.neutral for p in train} & {p.neutral for p in test}
    assert not {p.toxic for p in train} & {p.toxic for p in test}
    assert split_pairs(pairs, 0.3, seed=0) == (train, test)
    assert split_pairs(pairs, 0.0, seed=0) == (pairs[:90], [])


def test_the_spec_names_the_category_and_an_llm_adds_one_reply_per_intent():
    spec = RoleSpec(
        name="t",
        outline="돌봄 전화",
        categories=[Category(name="safety", description="d", error_category="위험")],
    )
    llm = LLM(load_backend("fake:safety"))
    plain = safety_examples(PAIRS[:2], seed=0, spec=spec)
    with_llm = safety_examples(PAIRS[:2], seed=0, spec=spec, llm=llm)
    assert {e.category for e in plain if e.label == "negative"} == {"위험"}
    assert llm.stats.calls == 4  # two pairs, two prompts
    extra = [e for e in with_llm if e not in plain]
    assert len(extra) == 4 and {e.label for e in extra} == {"negative", "positive"}


def test_the_classifier_trains_on_them(tmp_path):
    pytest.importorskip("torch")
    from rolecall.train.classifier import ClassifierSettings, train_classifier
    from rolecall.train.loop import TrainConfig
    from tests.dialogue_data import tiny

    path = tmp_path / "safety.jsonl"
    write_jsonl(path, safety_examples(PAIRS, seed=0))
    assert all(isinstance(e, Example) for e in read_jsonl(path, Example))
    metrics = train_classifier(
        path,
        tmp_path / "clf",
        tiny(frozen=True),
        ClassifierSettings(max_length=48, response_max=16, width=16),
        TrainConfig(epochs=2, batch_size=8, lr=1e-2),
        test_share=0.0,
        progress=False,
    )
    assert metrics["train_examples"] == len(list(read_jsonl(path, Example)))
