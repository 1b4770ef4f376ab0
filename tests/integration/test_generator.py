"""The generator on the embedded Gemma 3 270M (through transformers) with LoRA, real data.

Positives: system turns of examples/carecall/dialogues.jsonl after their history; negatives:
the same contexts answered with implicitly offensive sentences of
../shared/data/detox/kda_ko.csv. A few steps only (CPU): the point is the real model,
tokenizer and PEFT through training, scoring, generation, saving and export.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from rolecall.train.generator import Generator, GeneratorSettings  # noqa: E402
from rolecall.train.loop import TrainConfig  # noqa: E402
from tests.dialogue_data import carecall_examples  # noqa: E402

pytestmark = [pytest.mark.embedded, pytest.mark.timeout(3600)]


def test_mle_plus_unlikelihood_on_the_embedded_model(tmp_path):
    examples = carecall_examples()
    positives = [e for e in examples if e.label == "positive"][:8]
    negatives = [e for e in examples if e.label == "negative"][:4]
    train = positives + negatives
    generator = Generator.create(
        "embedded", GeneratorSettings(max_length=128, response_max=48), seed=0
    )
    trainable = sum(p.numel() for p in generator.model.parameters() if p.requires_grad)
    assert 0 < trainable < 5_000_000  # LoRA adapters only, not the 270M weights
    before = generator.perplexity(train)
    history = generator.fit(train, TrainConfig(epochs=1, batch_size=2, lr=1e-3), progress=False)
    after = generator.perplexity(train)
    assert history["steps"] == 6
    assert after["ppl_positive"] < before["ppl_positive"], (before, after)
    assert after["ppl_negative"] > before["ppl_negative"], (before, after)  # unlearned
    reply = generator.generate([positives[0].history], max_new_tokens=16)[0]
    assert reply.strip() and "\n" not in reply  # one turn, cut where the next would begin
    again = generator.generate([positives[0].history], max_new_tokens=16)[0]
    assert again == reply  # greedy decoding: the same reply every time

    generator.save(tmp_path / "gen")
    assert not (tmp_path / "gen" / "base").exists()  # the embedded base is a reference
    again = Generator.load(tmp_path / "gen")
    assert again.perplexity(positives[:4]) == pytest.approx(
        generator.perplexity(positives[:4]), rel=1e-4
    )
    adapter = generator.export(tmp_path / "adapter", merged=False)
    config = json.loads((adapter / "adapter_config.json").read_text(encoding="utf-8"))
    assert (tmp_path / config["base_model_name_or_path"]).joinpath("config.json").is_file()
