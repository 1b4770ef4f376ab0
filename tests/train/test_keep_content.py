"""Content-keeping decoding: the logit changes themselves, then on both rewriting paths
(the tiny transformers detox model here, llama.cpp in test_gguf_lora.py)."""

from __future__ import annotations

import numpy as np
import pytest

from rolecall.train.keep_content import KeepContent, adjust_row, llama_processor, source


def _tokenize(text: str) -> list[int]:  # one id a character, +100 after a space
    return [
        ord(c) % 50 + (100 if text.startswith(" ") and i == 0 else 0) for i, c in enumerate(text)
    ]


def test_source_takes_both_tokenizations_and_the_length_to_reach():
    src = source(" ab ", _tokenize, KeepContent(copy_bias=2.0, min_length_ratio=1.5))
    assert src.token_ids == sorted({*_tokenize("ab"), *_tokenize(" ab")})
    assert src.min_tokens == 3  # 1.5 x the 2 tokens of "ab"
    plain = source("ab", _tokenize, KeepContent(min_length_ratio=0.5))
    assert plain.token_ids == [] and plain.min_tokens == 1  # no bias: no ids needed


def test_bias_on_the_input_tokens_and_no_end_before_the_length():
    keep = KeepContent(copy_bias=3.0, min_length_ratio=1.0)
    src = source("ab", _tokenize, keep)
    stops = [7, 8]
    row = adjust_row(np.zeros(200, dtype=np.float32), src, stops, keep.copy_bias, generated=0)
    assert set(np.flatnonzero(row == 3.0)) == set(src.token_ids)
    assert np.isneginf(row[stops]).all()
    later = adjust_row(np.zeros(200, dtype=np.float32), src, stops, keep.copy_bias, generated=2)
    assert not np.isinf(later).any() and (later[src.token_ids] == 3.0).all()


def test_llama_processor_counts_only_generated_tokens_and_leaves_the_scores():
    keep = KeepContent(min_length_ratio=1.0)
    process = llama_processor(source("abc", _tokenize, keep), keep, [7], prompt_len=5)
    scores = np.zeros(60, dtype=np.float32)
    assert np.isneginf(process(np.arange(7), scores)[7])  # 2 of 3 generated: no end yet
    assert process(np.arange(8), scores)[7] == 0  # 3 generated: may end
    assert (scores == 0).all()  # llama.cpp's own array is not changed


def test_off_by_default():
    assert not KeepContent().active() and KeepContent(copy_bias=0.5).active()


@pytest.fixture(scope="module")
def trained():
    """The tiny detox model, trained to write the short neutral sentences."""
    pytest.importorskip("peft")
    from rolecall.train.detox_model import DetoxModel, DetoxSettings
    from rolecall.train.loop import TrainConfig
    from tests.tiny_models import tiny_causal_lm
    from tests.train.detox_pairs import PAIRS

    texts = [p.neutral for p in PAIRS] + [p.toxic for p in PAIRS] + ["원문: 중립:"]
    settings = DetoxSettings(base="in-code", lora_dropout=0.0, max_length=96, copy_bias=0.0)
    model = DetoxModel.create(tiny_causal_lm(texts), settings)
    model.fit_pairs(PAIRS * 4, TrainConfig(epochs=15, batch_size=4, lr=1e-2), progress=False)
    return model, [p.toxic for p in PAIRS]


def test_copy_bias_writes_only_the_inputs_tokens(trained):
    model, inputs = trained
    plain = model.rewrite(inputs, max_new_tokens=10)
    copied = model.rewrite(inputs, max_new_tokens=10, keep=KeepContent(copy_bias=1e4))
    assert copied != plain
    for text, out in zip(inputs, copied, strict=True):
        assert out and set(out.replace(" ", "")) <= set(text.replace(" ", "")), (text, out)


def test_min_length_ratio_keeps_the_rewrite_from_ending_early(trained):
    model, inputs = trained

    def size(text: str) -> int:
        return len(model.tokenizer(text, add_special_tokens=False)["input_ids"])

    plain = model.rewrite(inputs, max_new_tokens=40)
    assert sum(size(out) < size(text) for text, out in zip(inputs, plain, strict=True)) >= 3
    long = model.rewrite(inputs, max_new_tokens=40, keep=KeepContent(min_length_ratio=1.0))
    for text, out in zip(inputs, long, strict=True):
        assert size(out) >= size(text), (text, out)
