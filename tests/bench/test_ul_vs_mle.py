"""bench/ul_vs_mle.py and its bench/ul_data.py: the data split by dialogue, the repeated
n-grams, the alpha rule and the targets; then the whole bench on the tiny random Llama
(not the embedded Gemma)."""

from __future__ import annotations

import json
import sys

import pytest

from rolecall.records import Example, Turn
from tests.bench.loading import check_targets, load_bench

pytest.importorskip("torch")
pytest.importorskip("peft")

bench = load_bench("ul_vs_mle")
data = sys.modules["ul_data"]  # its examples and repeat measure, imported by the bench


def example(dialogue: str, turn: int, response: str, negative: bool = False) -> Example:
    history = [Turn(role="user" if i % 2 else "system", text=f"t{i}") for i in range(turn)]
    return Example(
        history=history,
        response=response,
        label="negative" if negative else "positive",
        category="persona" if negative else None,
        dialogue_id=dialogue,
    )


def test_the_data_are_the_in_context_turns_split_by_dialogue_without_leakage():
    positives, negatives = data.carecall_examples()
    assert len(negatives) == 183 and all(e.label == "negative" for e in negatives)
    assert all(e.history for e in positives + negatives)  # no opening turn
    assert len({e.dialogue_id for e in positives}) == 39
    train, test = data.split_by_dialogue(positives + negatives, 0.3, seed=0)
    train_ids, test_ids = {e.dialogue_id for e in train}, {e.dialogue_id for e in test}
    assert not train_ids & test_ids
    assert len(test_ids) == round(0.3 * 39)
    assert len(train) + len(test) == len(positives) + len(negatives)
    texts = {(e.response, e.label) for e in train}
    assert not any((e.response, e.label) in texts for e in test if e.label == "negative")
    assert data.split_by_dialogue(positives + negatives, 0.3, seed=0) == (train, test)
    assert data.split_by_dialogue(positives + negatives, 0.3, seed=1)[1] != test
    # every held-out negative's context is in the contexts, with its in-bounds turn
    contexts = data.contexts_with_negatives(test)
    assert sum(len(c.negatives) for c in contexts) == sum(e.label == "negative" for e in test)
    assert all(len(c.in_bounds) == 1 for c in contexts)


def test_a_reply_repeats_a_negative_only_by_ngrams_of_its_own():
    context = data.Context(
        "d",
        3,
        [Turn(role="user", text="저는 손주가 셋이에요")],
        negatives=["저도 손주가 둘 있어요, 어르신."],
        in_bounds=["손주가 셋이라니 좋으시겠어요, 어르신."],
    )
    grams = data.negative_ngrams(context)
    assert "저도손주" in grams and "좋으시겠" not in grams and "손주가셋" not in grams
    assert "요어르신" not in grams  # the in-bounds turn says it too
    replies = ["저도 손주가 있답니다", "손주가 셋이라니 좋으시겠어요!"]
    assert data.repeat_share(replies, [context, context]) == 0.5
    # content morphemes: 둘 (a number) is the negative's own; 손주 is the context's
    words = data.negative_ngrams(context, data.morphemes)
    assert any(w.startswith("둘/") for w in words) and not any("손주" in w for w in words)
    replies = ["손주 둘이 오나요?", "손주가 셋이라니 좋으시겠어요!"]
    assert data.repeat_share(replies, [context, context], data.morphemes) == 0.5
    assert data.char_ngrams("a, b c!") == set()  # 3 letters: no 4-gram
    assert data.repeat_share([], []) == 0.0


def row(pos: float, neg: float, share: float | None = None) -> dict:
    out = {"ppl_positive": pos, "ppl_negative": neg, "ppl_ratio": neg / pos}
    return out if share is None else {**out, "repeat_morph": share}


def test_the_chosen_alpha_and_the_targets():
    results = {
        "MLE": row(10.0, 20.0, 0.4),
        "MLE+UL a=1": row(10.5, 30.0, 0.3),
        "MLE+UL a=3": row(11.0, 45.0, 0.2),  # 1.10 x MLE: still allowed
        "MLE+UL a=9": row(13.0, 90.0, 0.0),
    }
    names = ["MLE+UL a=1", "MLE+UL a=3", "MLE+UL a=9"]
    assert bench.choose_alpha(results, names) == "MLE+UL a=3"
    goals = bench.targets(results, "MLE+UL a=3", 1.05)
    assert goals["ppl_neg_ul_over_mle"] == {"value": 2.25, "target": ">= 2.0", "met": True}
    assert goals["ppl_pos_ul_over_mle"] == {"value": 1.1, "target": "<= 1.1", "met": True}
    assert goals["reply_negative_morpheme_share_ul_minus_mle"]["value"] == pytest.approx(-0.2)
    assert goals["reply_negative_morpheme_share_ul_minus_mle"]["met"] is True
    assert goals["step_time_ul_over_mle"]["met"] is True
    # none keeps PPL(pos): the lowest PPL(pos), reported as not met
    assert bench.choose_alpha(results, ["MLE+UL a=9"]) == "MLE+UL a=9"
    goals = bench.targets(results, "MLE+UL a=9", None)
    assert goals["ppl_pos_ul_over_mle"]["met"] is False
    assert "step_time_ul_over_mle" not in goals


def test_differing_tokens_leave_out_what_the_in_bounds_turn_says_too():
    from rolecall.train.generator import Generator, GeneratorSettings
    from tests.tiny_models import tiny_causal_lm

    good, bad = "식사는 챙겨 드셨어요?", "식사는 내일 하세요."
    generator = Generator.create(
        tiny_causal_lm([good, bad, "t0 t1 t2"]),
        GeneratorSettings(base="in-code", max_length=64, response_max=16),
    )
    train = [example("d", 3, good), example("d", 3, bad, negative=True)]
    other = example("e", 3, bad, negative=True)  # no in-bounds turn: every token counts
    batch = bench.differing_batch(generator, train)(train + [other])
    full = generator.batch(train + [other])
    assert batch["labels"][0].tolist() == full["labels"][0].tolist()  # positives untouched
    assert batch["labels"][2].tolist() == full["labels"][2].tolist()
    tok = generator.tokenizer
    good_ids = set(tok(" " + good + "\n", add_special_tokens=False)["input_ids"])
    kept = [t for t in batch["labels"][1].tolist() if t != -100]
    assert kept and not set(kept) & (good_ids | {tok.eos_token_id})
    assert len(kept) < sum(t != -100 for t in full["labels"][1].tolist())


def test_the_bench_runs_end_to_end_on_a_tiny_model(capsys, tmp_path):
    from tests.tiny_models import tiny_causal_lm

    positives, negatives = data.carecall_examples()
    texts = [e.response for e in positives + negatives] + [
        t.text for e in positives for t in e.history
    ]
    report = bench.main(
        ["--alphas", "2", "--max-new-tokens", "4", "--timing-batches", "1", "--threads", "1"]
        + ["--out", str(tmp_path / "replies.jsonl"), "--ul-tokens", "differing"],
        base=tiny_causal_lm(texts),
    )
    lines = (tmp_path / "replies.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == report["data"]["test"]["contexts_with_negatives"]
    assert set(json.loads(lines[0])["replies"]) == {"base", "MLE", "MLE+UL a=2"}
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == report
    assert set(report["results"]) == {"base", "MLE", "MLE+UL a=2"}
    assert report["chosen"] == "MLE+UL a=2"
    goals = report["targets"]
    check_targets(
        goals,
        {
            "ppl_neg_ul_over_mle",
            "ppl_pos_ul_over_mle",
            "reply_negative_morpheme_share_ul_minus_mle",
            "step_time_ul_over_mle",
        },
    )
    # the values are the chosen run's numbers over MLE's, as the results table shows them
    ul, mle = report["results"]["MLE+UL a=2"], report["results"]["MLE"]
    for target, key in (
        ("ppl_neg_ul_over_mle", "ppl_negative"),
        ("ppl_pos_ul_over_mle", "ppl_positive"),
    ):
        assert goals[target]["value"] == pytest.approx(ul[key] / mle[key], rel=1e-3)
    assert goals["reply_negative_morpheme_share_ul_minus_mle"]["value"] == pytest.approx(
        ul["repeat_morph"] - mle["repeat_morph"], abs=1e-3
    )
    assert report["results"]["MLE+UL a=2"]["steps"] > report["results"]["MLE"]["steps"]
