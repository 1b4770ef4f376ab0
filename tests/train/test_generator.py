"""The LoRA generator on a tiny random Llama: batches, MLE vs MLE+UL, save/load, export."""

from __future__ import annotations

import copy
import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from rolecall.errors import ConfigError, InputFileError  # noqa: E402
from rolecall.records import Example, Turn  # noqa: E402
from rolecall.train.generator import Generator, GeneratorSettings  # noqa: E402
from rolecall.train.loop import TrainConfig  # noqa: E402
from tests.dialogue_data import BAD, GOOD, USERS, make_examples  # noqa: E402
from tests.tiny_models import tiny_causal_lm  # noqa: E402

SETTINGS = GeneratorSettings(
    base="in-code", lora_r=4, lora_alpha=8, lora_dropout=0.0, max_length=64, response_max=16
)


@pytest.fixture(scope="module")
def base():
    return tiny_causal_lm(USERS + GOOD + BAD)


def fresh(base, **update) -> Generator:
    model, tokenizer = copy.deepcopy(base[0]), base[1]
    return Generator.create((model, tokenizer), SETTINGS.model_copy(update=update))


def test_the_batch_masks_prompt_and_padding_and_flags_negatives(base):
    generator = fresh(base)
    examples = [
        Example(history=[Turn(role="user", text=USERS[0])], response=GOOD[0], label="positive"),
        Example(
            history=[
                Turn(role="user", text=USERS[1]),
                Turn(role="system", text=GOOD[1]),
                Turn(role="user", text=USERS[2]),
            ],
            response=BAD[0],
            label="negative",
            category="persona",
        ),
    ]
    batch = generator.batch(examples)
    tok = generator.tokenizer
    assert batch["negative"].tolist() == [False, True]
    for row, example in enumerate(examples):
        ids, labels = batch["input_ids"][row], batch["labels"][row]
        counted = labels != -100
        length = int(batch["attention_mask"][row].sum())
        assert not counted[length:].any()  # padding never counts
        first = int(counted.nonzero()[0])
        prompt = tok.decode(ids[:first], skip_special_tokens=True)
        assert prompt.replace(" ", "").endswith("system:")  # the whole prompt is masked
        answer = tok.decode(ids[counted], skip_special_tokens=True)
        assert answer.replace(" ", "") == example.response.replace(" ", "")
        assert int(ids[length - 1]) == tok.eos_token_id and bool(counted[length - 1])


def test_unlikelihood_raises_the_negatives_perplexity_more_than_mle(base):
    examples = make_examples(36)
    config = TrainConfig(epochs=12, batch_size=6, lr=1e-2, seed=0)
    results = {}
    for name, alpha in (("mle", 0.0), ("ul", 1.0)):
        generator = fresh(base, alpha=alpha)
        before = generator.perplexity(examples)
        generator.fit(examples, config, progress=False)
        results[name] = (before, generator.perplexity(examples))
    (start, mle), (_, ul) = results["mle"], results["ul"]
    assert mle["ppl_positive"] < start["ppl_positive"]  # both learn the positives
    assert ul["ppl_positive"] < start["ppl_positive"]
    assert ul["ppl_negative"] > 1.3 * mle["ppl_negative"], results  # seen: 1.7x, 3.7x
    assert ul["ppl_ratio"] > mle["ppl_ratio"]


def test_a_saved_generator_reloads_scores_identically_and_exports(base, tmp_path):
    generator = fresh(base)
    examples = make_examples(12)
    generator.fit(examples, TrainConfig(epochs=2, batch_size=4, lr=3e-3), progress=False)
    generator.save(tmp_path / "gen", {"note": "test"})
    again = Generator.load(tmp_path / "gen")
    assert again.settings.base == "in-code"
    assert again.perplexity(examples) == pytest.approx(generator.perplexity(examples), rel=1e-5)
    replies = again.generate(
        [[Turn(role="user", text=USERS[0])], "user: 밥 먹었어요"], max_new_tokens=6
    )
    assert len(replies) == 2 and all(isinstance(r, str) and "\n" not in r for r in replies)
    assert replies == generator.generate(
        [[Turn(role="user", text=USERS[0])], "user: 밥 먹었어요"], max_new_tokens=6
    )

    from transformers import AutoModelForCausalLM

    merged_dir = generator.export(tmp_path / "merged", merged=True)
    merged = AutoModelForCausalLM.from_pretrained(merged_dir, local_files_only=True)
    batch = generator.batch(examples[:2])
    with torch.no_grad():
        expected = generator.model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
        ).logits
        got = merged(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    assert torch.allclose(got, expected, atol=1e-4)
    adapter = generator.export(tmp_path / "adapter", merged=False)
    config = json.loads((adapter / "adapter_config.json").read_text(encoding="utf-8"))
    assert config["base_model_name_or_path"] == "in-code" and config["r"] == 4
    with pytest.raises(ConfigError, match="not empty"):
        generator.export(tmp_path / "adapter")


def test_broken_model_directories_are_clear_errors(base, tmp_path):
    with pytest.raises(InputFileError, match="no model.json"):
        Generator.load(tmp_path)
    generator = fresh(base)
    generator.save(tmp_path / "gen")
    weights = next((tmp_path / "gen" / "adapter").glob("adapter_model.*"))
    weights.write_bytes(b"not a safetensors file")
    with pytest.raises(InputFileError, match="cannot be loaded"):
        Generator.load(tmp_path / "gen")
    (tmp_path / "gen" / "adapter" / "adapter_config.json").unlink()
    with pytest.raises(InputFileError, match="adapter_config.json"):
        Generator.load(tmp_path / "gen")
    with pytest.raises(ValueError, match="positive"):
        fresh(base).fit(
            [e for e in make_examples(6) if e.label == "negative"],
            TrainConfig(epochs=1),
            progress=False,
        )
