"""The detox model on a tiny random Llama: prompts, training, rewriting, save/load."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from rolecall.errors import InputFileError  # noqa: E402
from rolecall.records import Pair  # noqa: E402
from rolecall.train.detox_model import DetoxModel, DetoxSettings, split_pairs  # noqa: E402
from rolecall.train.generator import Generator  # noqa: E402
from rolecall.train.loop import TrainConfig  # noqa: E402
from tests.tiny_models import tiny_causal_lm  # noqa: E402
from tests.train.detox_pairs import PAIRS  # noqa: E402


def test_the_model_learns_to_rewrite_and_reloads(tmp_path):
    texts = [p.neutral for p in PAIRS] + [p.toxic for p in PAIRS] + ["원문: 중립:"]
    model = DetoxModel.create(
        tiny_causal_lm(texts),
        DetoxSettings(
            base="in-code", lora_r=8, lora_alpha=16, lora_dropout=0.0, max_length=96, copy_bias=0.0
        ),
    )
    prompt = model.rewrite_prompt(" 가격 또 올렸네 ")
    assert prompt.endswith("원문: 가격 또 올렸네\n중립:") and "중립적인 문장" in prompt
    before = float(model.pair_loss(PAIRS))
    history = model.fit_pairs(
        PAIRS * 4, TrainConfig(epochs=15, batch_size=4, lr=1e-2), progress=False
    )
    assert history["last_loss"] < 0.5 * before
    rewrites = model.rewrite([p.toxic for p in PAIRS], max_new_tokens=12)
    # a memorised toy set: most rewrites are the neutral sentence itself (spaces aside:
    # the WordPiece decoder re-spaces the tokens)
    hits = sum(
        r.replace(" ", "") == p.neutral.replace(" ", "")
        for r, p in zip(rewrites, PAIRS, strict=True)
    )
    assert hits >= 3, rewrites
    model.save(tmp_path / "detox")
    again = DetoxModel.load(tmp_path / "detox")
    assert again.settings.language == "ko" and again.settings.alpha == 0
    assert again.rewrite([p.toxic for p in PAIRS], max_new_tokens=12) == rewrites
    with pytest.raises(InputFileError, match="holds a detox model, not a generator"):
        Generator.load(tmp_path / "detox")


def test_pairs_split_by_neutral_sentence():
    pairs = PAIRS + [Pair(neutral=PAIRS[0].neutral, toxic="회의 취소 ㅋㅋ 월급 루팡들")]
    train, test = split_pairs(pairs * 5, 0.5, seed=0)
    assert train and test
    assert not {p.neutral for p in train} & {p.neutral for p in test}
