"""Out-of-bounds classifier on a tiny backbone; the fallback question on scripted scorers."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rolecall.errors import ConfigError, InputFileError, UnsupportedCapability  # noqa: E402
from rolecall.jsonl import write_jsonl  # noqa: E402
from rolecall.llm import LLM, load_backend  # noqa: E402
from rolecall.records import Turn  # noqa: E402
from rolecall.train.backbones.features import Features  # noqa: E402
from rolecall.train.classifier import (  # noqa: E402
    Classifier,
    ClassifierSettings,
    train_classifier,
)
from rolecall.train.data import LAST  # noqa: E402
from rolecall.train.loop import TrainConfig, save_model  # noqa: E402
from rolecall.train.pairs import pool_states  # noqa: E402
from rolecall.train.perplexity import lm_perplexities, lm_prompt  # noqa: E402
from tests.dialogue_data import Scripted, make_examples, tiny  # noqa: E402

SETTINGS = ClassifierSettings(max_length=48, response_max=16, width=16)
CONFIG = TrainConfig(epochs=8, batch_size=8, lr=1e-2)


def test_a_frozen_backbone_trains_only_the_head_and_the_loss_falls(tmp_path):
    backbone = tiny(frozen=True)
    model = Classifier.create(backbone, SETTINGS, Features(backbone, tmp_path / "cache"))
    assert model.settings.pool == "mean+first"  # an encoder: its CLS token
    head_before = [p.detach().clone() for p in model.head.parameters()]
    backbone_before = next(backbone.parameters()).detach().clone()
    history = model.fit(make_examples(), CONFIG, progress=False)
    assert history["last_loss"] < history["first_loss"]
    assert all(
        not torch.equal(a, b) for a, b in zip(head_before, model.head.parameters(), strict=True)
    )
    assert torch.equal(next(backbone.parameters()), backbone_before)
    assert list((tmp_path / "cache").glob("shard-*.npz"))  # states kept on disk


def test_a_new_heads_weights_come_from_its_seed_not_from_what_the_process_drew():
    backbone = tiny(frozen=True)

    def head(seed: int, draws: int) -> list:
        torch.rand(draws)  # what earlier models of a bench drew
        model = Classifier.create(backbone, SETTINGS, seed=seed)
        return [p.detach().clone() for p in model.head.parameters()]

    first = head(0, 1)
    assert all(torch.equal(a, b) for a, b in zip(first, head(0, 1000), strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(first, head(1, 1), strict=True))
    torch.manual_seed(5)
    Classifier.create(backbone, SETTINGS, seed=0)
    after = torch.rand(1)
    torch.manual_seed(5)
    assert torch.equal(torch.rand(1), after)  # the caller's draws are left as they were


def test_a_trainable_backbone_trains_with_the_head():
    backbone = tiny(frozen=False)
    model = Classifier.create(backbone, SETTINGS.model_copy(update={"class_weights": "balanced"}))
    before = next(backbone.parameters()).detach().clone()
    history = model.fit(
        make_examples(16),
        TrainConfig(epochs=8, batch_size=8, lr=1e-2, backbone_lr=1e-3),
        progress=False,
    )
    losses = history["losses"]
    assert history["steps"] == 16 and sum(losses[-3:]) < sum(losses[:3])
    assert not torch.equal(next(backbone.parameters()), before)


def test_train_classifier_reports_held_out_metrics_and_reloads_identically(tmp_path):
    path = tmp_path / "examples.jsonl"
    examples = make_examples(30)
    write_jsonl(path, examples)
    metrics = train_classifier(
        path,
        tmp_path / "model",
        tiny(frozen=True),
        SETTINGS,
        CONFIG,
        test_share=0.3,
        progress=False,
    )
    assert metrics["train_examples"] + metrics["test_examples"] == 30
    assert metrics["test_examples"] > 0
    assert {"accuracy", "precision", "recall", "f1"} <= set(metrics)
    assert metrics["last_loss"] < metrics["first_loss"]
    model = Classifier.load(tmp_path / "model")
    again = Classifier.load(tmp_path / "model")
    contexts = [e.history for e in examples[:6]]
    responses = [e.response for e in examples[:6]]
    proba = model.predict_proba(contexts, responses)
    assert proba.shape == (6, 2) and np.allclose(proba.sum(1), 1.0)
    assert np.array_equal(proba, again.predict_proba(contexts, responses))
    assert model.predict(contexts, responses).dtype == bool
    # the guard's threshold was chosen on the held-out dialogues (issue 46), saved with the
    # model and reported with the cross-fitted numbers of choosing it so
    chosen = metrics["held_out_threshold"]
    assert model.settings.threshold == chosen["threshold"] == metrics["threshold"]
    assert metrics["at_default_threshold"]["threshold"] == 0.5
    assert 0 <= chosen["recall"] <= 1 and 0 <= chosen["precision"] <= 1
    # the same seed, the same model
    train_classifier(
        path, tmp_path / "model2", tiny(frozen=True), SETTINGS, CONFIG, 0.3, progress=False
    )
    twin = Classifier.load(tmp_path / "model2")
    assert np.allclose(twin.predict_proba(contexts, responses), proba, atol=1e-6)
    assert twin.settings.threshold == model.settings.threshold


def test_the_model_in_memory_and_the_saved_one_agree(tmp_path):
    backbone = tiny(frozen=False)
    model = Classifier.create(backbone, SETTINGS)
    model.fit(make_examples(8), TrainConfig(epochs=1, batch_size=4), progress=False)
    model.save(tmp_path / "m", {"note": 1})
    loaded = Classifier.load(tmp_path / "m")
    contexts, responses = ["user: 밥 먹었어요"] * 2, ["푹 쉬세요", "바보 같은 소리 마세요"]
    assert np.allclose(
        model.predict_proba(contexts, responses),
        loaded.predict_proba(contexts, responses),
        atol=1e-6,
    )
    assert loaded.settings == model.settings


def test_a_lexical_classifier_averages_the_head_and_tfidf_and_keeps_both(tmp_path):
    """settings.lexical: P = the mean of the head's and the TF-IDF model's over the
    response, fitted on the same examples; saved in lexical/ and read back."""
    from rolecall.train.classifier import lexical_model

    backbone = tiny(frozen=True)
    settings = SETTINGS.model_copy(update={"lexical": True})
    model = Classifier.create(backbone, settings, Features(backbone))
    examples = make_examples(12)
    model.fit(examples, TrainConfig(epochs=2, batch_size=4, seed=3), progress=False)
    contexts, responses = ["user: 밥 먹었어요"] * 3, ["푹 쉬세요", "바보 같은 소리 마세요", "네"]
    lexical = model.lexical.predict_proba(responses)
    again = lexical_model(examples, seed=3).predict_proba(responses)
    assert np.allclose(lexical, again) and not np.allclose(lexical, 0.5)
    model.lexical = None
    head = model.predict_proba(contexts, responses)
    model.lexical = lexical_model(examples, seed=3)
    fused = model.predict_proba(contexts, responses)
    assert np.allclose(fused, (head + lexical) / 2) and np.allclose(fused.sum(1), 1.0)
    model.save(tmp_path / "m")
    assert (tmp_path / "m" / "lexical" / "model.json").is_file()
    loaded = Classifier.load(tmp_path / "m")
    assert loaded.settings.lexical and loaded.lexical is not None
    assert np.allclose(loaded.predict_proba(contexts, responses), fused, atol=1e-6)
    # a model directory without its lexical half is a clear error, not a silent head alone
    import shutil

    shutil.rmtree(tmp_path / "m" / "lexical")
    with pytest.raises(InputFileError, match="lexical"):
        Classifier.load(tmp_path / "m")


def test_pooling_picks_the_last_real_token():
    hidden = torch.arange(2 * 3 * 2, dtype=torch.float).view(2, 3, 2)
    mask = torch.tensor([[True, True, False], [True, True, True]])
    pooled = pool_states(hidden, mask, "mean+last")
    assert pooled[0].tolist() == [1.0, 2.0, 2.0, 3.0]  # mean of rows 0-1, then row 1
    assert pooled[1, 2:].tolist() == [10.0, 11.0]
    assert pool_states(hidden, mask, "mean+first")[0, 2:].tolist() == [0.0, 1.0]


def test_bad_inputs_are_clear_errors(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputFileError, match="holds no examples"):
        train_classifier(empty, tmp_path / "m", "unused")
    positives = tmp_path / "pos.jsonl"
    write_jsonl(positives, make_examples(6, negatives=False))
    with pytest.raises(InputFileError, match="no negative"):
        train_classifier(positives, tmp_path / "m", "unused")
    examples = tmp_path / "ex.jsonl"
    write_jsonl(examples, make_examples(12))
    with pytest.raises(InputFileError, match="no such model directory"):
        train_classifier(examples, tmp_path / "m", str(tmp_path / "no-backbone"))
    backbone = tiny(frozen=False)
    save_model(tmp_path / "other", "reranker", {}, torch.nn.Linear(2, 1), backbone)
    with pytest.raises(InputFileError, match="holds a reranker model, not a classifier"):
        Classifier.load(tmp_path / "other")
    with pytest.raises(InputFileError, match="not a trained rolecall model"):
        Classifier.load(tmp_path)


# ---- perplexity of a response after the dialogue (train/perplexity.py) ----------------------


QUESTIONS = ["요즘 잠은 잘 주무세요", "식사는 하셨어요", "오늘 기분은 어떠세요"]
HISTORY = [
    Turn(role="user", text="오늘 좀 피곤해요"),
    Turn(role="system", text="푹 쉬세요"),
    Turn(role="user", text="당신 주소가 어디예요"),
]


def test_each_response_gets_its_perplexity_after_the_dialogue():
    scorer = Scripted(
        {"요즘 잠은 잘 주무세요": -2.0, "식사는 하셨어요": -0.5, "오늘 기분은 어떠세요": -1.0}
    )
    values = lm_perplexities(scorer, [lm_prompt(HISTORY)] * 3, QUESTIONS)
    assert values == pytest.approx([math.exp(2.0), math.exp(0.5), math.exp(1.0)])
    prompt, text = scorer.prompts[0]
    assert prompt == (
        "user: 오늘 좀 피곤해요\nsystem: 푹 쉬세요\nuser: 당신 주소가 어디예요\nsystem:"
    )
    assert text == " 요즘 잠은 잘 주무세요"


def test_perplexities_through_the_fake_backend_and_a_context_string():
    # the fake's per-token logprobs fall with position: fewer tokens, lower perplexity
    llm = LLM(load_backend("fake:ppl"))
    prompt = lm_prompt(f"user: 안녕\n{LAST}user: 뭐 해요")
    assert prompt == "user: 안녕\nuser: 뭐 해요\nsystem:"
    values = lm_perplexities(llm, [prompt] * 3, QUESTIONS)
    assert int(values.argmin()) == 1 and values[1] == pytest.approx(math.exp(1.05))


def test_perplexities_refuse_non_scoring_backends():
    no_scores = Scripted({})
    no_scores.supports_loglikelihood = False
    with pytest.raises(UnsupportedCapability, match="loglikelihood"):
        lm_perplexities(no_scores, [lm_prompt(HISTORY)] * 3, QUESTIONS)
    with pytest.raises(ConfigError, match="cannot score text"):
        lm_perplexities("hf:embedded", [lm_prompt(HISTORY)] * 3, QUESTIONS)
