"""The llamacpp backend on the real embedded model (Gemma 3 270M GGUF)."""

import json
import random

import pytest

from rolecall.errors import ConfigError, UnsupportedCapability
from rolecall.llm import LLM, Message, Request, SamplingParams

pytestmark = pytest.mark.embedded

NATURAL = "오늘은 날씨가 맑아서 공원에 산책을 나갔습니다."


def test_generates_korean_text(embedded):
    prompt = "다음은 한국어 인사말입니다.\n인사말: 안녕하세요, 어르신. 오늘"
    out = embedded.complete(
        Request(prompt=prompt, params=SamplingParams(temperature=0.0, max_tokens=16))
    )
    assert out.text.strip() and out.tokens_out > 0 and out.tokens_in > 5
    assert any("\uac00" <= ch <= "\ud7a3" for ch in out.text), out.text


def test_token_logprobs_with_top_alternatives(embedded):
    out = embedded.complete(
        Request(
            prompt="한국의 수도는", params=SamplingParams(temperature=0.0, max_tokens=6, logprobs=3)
        )
    )
    assert len(out.logprobs) == out.tokens_out == 6
    for step in out.logprobs:
        assert isinstance(step.logprob, float) and step.logprob <= 0
        assert len(step.top) == 3
        assert step.top[0].logprob >= step.top[1].logprob >= step.top[2].logprob
        # greedy decoding picks the most likely token
        assert step.logprob == pytest.approx(step.top[0].logprob)
    assert "".join(t.token for t in out.logprobs) == out.text


def test_scoring_matches_the_generation_logprobs(embedded):
    params = SamplingParams(temperature=0.0, max_tokens=8, logprobs=1)
    generated = embedded.complete(Request(prompt="어르신, 오늘 점심은", params=params))
    scored = embedded.complete(Request(prompt="어르신, 오늘 점심은", score_text=generated.text))
    assert len(scored.logprobs) == len(generated.logprobs)
    for a, b in zip(scored.logprobs, generated.logprobs):
        # batch and token-by-token evaluation round differently in a Q4 model
        assert a.logprob == pytest.approx(b.logprob, abs=0.3)


def test_natural_korean_is_less_perplexing_than_the_same_tokens_shuffled(embedded):
    tokens = embedded._llm.tokenize(NATURAL.encode(), add_bos=False)
    shuffled = tokens[:]
    random.Random(0).shuffle(shuffled)
    assert shuffled != tokens
    scrambled = embedded._llm.detokenize(shuffled).decode("utf-8", errors="ignore")
    natural = embedded.complete(Request(prompt="", score_text=NATURAL)).perplexity
    worse = embedded.complete(Request(prompt="", score_text=scrambled)).perplexity
    assert natural < worse / 10, (natural, worse)


def test_json_schema_constrained_output_is_valid_json(embedded):
    schema = {
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": ["유지", "변화"]},
            "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
        },
        "required": ["label", "score"],
    }
    out = embedded.complete(
        Request(
            prompt="문장의 맥락이 유지되었는지 JSON으로 답하세요.\n답:",
            params=SamplingParams(temperature=0.7, max_tokens=40, json_schema=schema, seed=3),
        )
    )
    data = json.loads(out.text)
    assert data["label"] in ("유지", "변화") and 1 <= data["score"] <= 5


def test_grammar_constrained_output(embedded):
    out = embedded.complete(
        Request(
            prompt="정답은 예 또는 아니오:",
            params=SamplingParams(
                temperature=1.0, max_tokens=5, grammar='root ::= "예" | "아니오"', logprobs=2
            ),
        )
    )
    assert out.text in ("예", "아니오")


def test_stop_strings_and_seeds(embedded):
    prompt = "인사말 목록:\n1. 안녕하세요\n2."
    params = SamplingParams(temperature=0.9, max_tokens=30, stop=("\n",), seed=11)
    first = embedded.complete(Request(prompt=prompt, params=params), sample_index=0)
    again = embedded.complete(Request(prompt=prompt, params=params), sample_index=0)
    assert "\n" not in first.text and first.text == again.text
    others = {
        embedded.complete(Request(prompt=prompt, params=params), sample_index=i).text
        for i in range(1, 5)
    }
    assert len(others | {first.text}) > 1


def test_chat_is_refused_before_any_call_when_the_model_has_no_template(embedded):
    llm = LLM(embedded)
    request = Request(messages=(Message(role="user", content="안녕?"),))
    with pytest.raises(UnsupportedCapability) as info:
        llm.generate([request])
    assert "chat" in str(info.value) and llm.stats.calls == 0


def test_prompt_longer_than_the_context_is_a_clear_error(embedded):
    long_prompt = "안녕하세요 " * 5000
    with pytest.raises(ConfigError) as info:
        embedded.complete(Request(prompt=long_prompt))
    assert "n_ctx" in info.value.fix


def test_rerun_through_the_cache_makes_no_calls(embedded, tmp_path):
    from rolecall.llm import Cache

    prompts = [
        Request(
            prompt=f"{i}번째 인사말: 안녕하세요,",
            params=SamplingParams(temperature=0.8, max_tokens=8, seed=5),
        )
        for i in range(3)
    ]
    first = LLM(embedded, Cache(tmp_path / "c.sqlite"))
    out1 = first.generate(prompts, n=2)
    second = LLM(embedded, Cache(tmp_path / "c.sqlite"))
    out2 = second.generate(prompts, n=2)
    assert first.stats.calls == 6 and second.stats.calls == 0
    assert second.stats.cache_hits == 6
    assert [[s.completion.text for s in x] for x in out1] == [
        [s.completion.text for s in x] for x in out2
    ]


def test_scoring_reuses_the_prompt_but_never_changes_the_numbers(embedded):
    prompt = "다음 대화의 마지막 발화를 판정합니다.\n시스템: 안녕하세요, 어르신.\n판정:"
    labels = [" 적절", " persona", " safety", " 적절"]
    first = [
        embedded.complete(Request(prompt=prompt, score_text=label)).loglikelihood
        for label in labels
    ]
    assert first[0] == first[3]  # bit-identical, after other labels used the kept prefix
    embedded.complete(Request(prompt="전혀 다른 프롬프트", params=SamplingParams(max_tokens=4)))
    again = [
        embedded.complete(Request(prompt=prompt, score_text=label)).loglikelihood
        for label in reversed(labels)
    ]
    assert again == list(reversed(first))


def test_penalties_reduce_repetition(embedded):
    prompt = "어르신, 어르신, 어르신,"
    plain = embedded.complete(
        Request(prompt=prompt, params=SamplingParams(temperature=0.0, max_tokens=24))
    )
    penalised = embedded.complete(
        Request(
            prompt=prompt,
            params=SamplingParams(
                temperature=0.0, max_tokens=24, frequency_penalty=2.0, presence_penalty=2.0
            ),
        )
    )
    assert plain.text != penalised.text
    assert penalised.text.count("어르신") < plain.text.count("어르신"), (plain.text, penalised.text)
