"""Every trained model's settings and the optimisation settings, in one light module.

A model's settings are what its ``model.json`` stores and its head is built from; the
command line reads its options' defaults from here (``cli.common.field_default``), so
each default has one home. Pydantic only: ``import rolecall.cli.app`` reads this module,
and must not pull in torch or numpy (the model modules that do re-export these types).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rolecall.train.backbones.base import E5, EMBEDDED, SENTENCE
from rolecall.train.data import MAX_TURNS

Pool = Literal["auto", "mean", "mean+first", "mean+last", "pair"]


class TrainConfig(BaseModel):
    """Optimisation settings shared by every model (``rolecall train ... --epochs``)."""

    model_config = ConfigDict(extra="forbid")
    epochs: int = Field(3, ge=1, description="passes over the training data")
    batch_size: int = Field(32, ge=1, description="examples per training step")
    lr: float = Field(1e-3, gt=0, description="the head's learning rate")
    backbone_lr: float = Field(2e-5, gt=0, description="a trainable backbone's learning rate")
    weight_decay: float = Field(0.01, ge=0)
    max_steps: int | None = Field(None, ge=1, description="stop after this many steps")
    min_steps: int | None = Field(
        None, ge=1, description="more passes than epochs when they make fewer steps"
    )
    seed: int = Field(
        0, description="random seed: the initial weights, the batch order and any held-out split"
    )


# LoRA adapters on a causal LM: one pass, small batches, a larger learning rate
GENERATOR_TRAINING = TrainConfig(epochs=1, batch_size=8, lr=2e-4)
DETOX_TRAINING = TrainConfig(epochs=1, batch_size=4, lr=2e-4)  # the K/DA paper's
# the classifier with its backbone's top layers tuned (the embedded default): one pass, or
# as many as make 400 steps on a small set (on BEEP! train a second pass of 494 steps
# lowered dev F1 twice; on 2,000 comments the third pass raised it), small batches
# (bench/classifier_quality.py)
CLASSIFIER_TRAINING = TrainConfig(epochs=1, min_steps=400, batch_size=16, backbone_lr=3e-5)
FROZEN_CLASSIFIER_EPOCHS = 3  # a head alone on cached states: passes cost next to nothing
# the retriever and the reranker: the passes bench/retrieval_quality.py measures them at
RETRIEVER_TRAINING = TrainConfig(epochs=5)
RERANKER_TRAINING = TrainConfig(epochs=5)


def classifier_training(frozen: bool, **given) -> TrainConfig:
    """The classifier's ``TrainConfig``: ``CLASSIFIER_TRAINING``; three passes and no
    step floor when the backbone is frozen; whatever is ``given`` (epochs given: exactly
    those passes)."""
    fixed = {"epochs": FROZEN_CLASSIFIER_EPOCHS, "min_steps": None} if frozen else {}
    if "epochs" in given:
        fixed["min_steps"] = None
    return TrainConfig(**{**CLASSIFIER_TRAINING.model_dump(), **fixed, **given})


class Settings(BaseModel):
    """Base of each model's settings (what ``model.json`` stores and the head is built
    from); unknown keys are refused so a typo never trains the wrong model."""

    model_config = ConfigDict(extra="forbid")


class PairSettings(Settings):
    """What a head over ``[CLS] context [SEP] response`` pairs is built from."""

    max_length: int = Field(512, ge=8, description="tokens of the whole pair")
    response_max: int = Field(128, ge=1, description="tokens kept of the response")
    max_turns: int | None = Field(None, ge=1, description="history turns kept; None: all")
    pool: Pool = Field(
        "auto",
        description="auto: mean+last for decoders, mean+first for encoders, pair for the "
        "sentence encoder",
    )
    width: int = Field(256, ge=1, description="the head's hidden layer")
    dropout: float = Field(0.1, ge=0.0, lt=1.0)


class ClassifierSettings(PairSettings):
    class_weights: Literal["none", "balanced"] | tuple[float, float] = Field(
        "none", description="cross-entropy weights (in, out); balanced: n / (2 * n_class)"
    )
    threshold: float = Field(0.5, gt=0.0, lt=1.0, description="P(out) that flags")
    lexical: bool = Field(
        True,
        description="also character TF-IDF + logistic regression over the response, fitted "
        "on the same examples; P(out) is the mean of both (a late fusion, the default: "
        "better than the head alone on most sets measured, docs/models.md); a model "
        "directory saved without it (false) loads as it was",
    )


# retriever kinds that give one vector per context: the candidate index searches them
# exactly (a poly-encoder's codes are averaged for a first stage, then re-scored)
SINGLE_VECTOR = ("bi", "residual")


class RetrieverSettings(Settings):
    """What a retriever is built from; stored in ``model.json``."""

    kind: Literal["bi", "poly", "residual"] = Field(
        "poly",
        description="residual: a sentence encoder's cosine with trained residual maps "
        "(retriever.ResidualHead)",
    )
    codes: int = Field(16, ge=1, description="poly-encoder codes (context vectors)")
    dim: int = Field(256, ge=1, description="width of the context and candidate vectors")
    dropout: float = Field(0.1, ge=0, lt=1, description="in the projections, training only")
    max_turns: int = Field(MAX_TURNS, ge=1, description="history turns kept (paper: 10)")
    context_max_tokens: int = Field(256, ge=4, description="context cut from the left")
    candidate_max_tokens: int = Field(64, ge=4, description="candidates cut from the right")
    rerank_depth: int = Field(
        100,
        ge=1,
        description="poly-encoder search: candidates of "
        "the first stage re-scored with the full attention",
    )
    backbone: str = Field(EMBEDDED, description="'embedded', 'in-code' or a model directory")
    frozen: bool = True


# a sentence encoder's cosine already ranks (bench/retrieval_quality.py on care-call, fused
# with BM25: residual above poly on the same vectors; docs/models.md)
RETRIEVER_KIND_OF_BACKBONE = {SENTENCE: "residual", E5: "residual"}


def retriever_kind(backbone: str, given: str | None = None) -> str:
    """``given``, or the retriever kind that suits ``backbone``: residual on the sentence
    encoder, the poly-encoder on every other backbone."""
    return given or RETRIEVER_KIND_OF_BACKBONE.get(backbone, "poly")


class RerankerSettings(PairSettings):
    interaction: Literal["auto", "joint", "attention"] = Field(
        "auto",
        description="joint: each pair through the backbone (cross-encoder); "
        "attention: separate states joined in a cross-attention head; auto: attention for "
        "a frozen backbone, joint for a trainable one",
    )
    context_max_tokens: int = Field(
        256,
        ge=4,
        description="attention: context cut from the left (the retriever's default, "
        "so one pass serves both)",
    )
    candidate_max_tokens: int = Field(
        64, ge=4, description="attention: candidates cut from the right"
    )
    dim: int = Field(256, ge=1, description="attention: width of the token projections")
    heads: int = Field(4, ge=1, description="attention: heads of the cross-attention")
    max_turns: int | None = Field(MAX_TURNS, ge=1, description="history turns (paper: 10)")
    negatives: int = Field(7, ge=1, description="negatives per example (paper: 7)")
    hard_count: int = Field(3, ge=0, description="of them from hard_negatives, when given")
    eval_candidates: int = Field(20, ge=2, description="K of the held-out Hits@1/K")


class GeneratorSettings(Settings):
    """What a generator is trained with; stored in ``model.json``."""

    base: str = Field(EMBEDDED, description="'embedded', a model directory, or 'in-code'")
    alpha: float = Field(1.0, ge=0.0, description="weight of the unlikelihood term; 0: MLE")
    lora_r: int = Field(8, ge=1, description="rank of the LoRA adapters")
    lora_alpha: int = Field(
        16, ge=1, description="the LoRA adapters' update is scaled by alpha / rank"
    )
    lora_dropout: float = Field(0.05, ge=0.0, lt=1.0)
    target_modules: str = Field(
        "all-linear",
        description="'all-linear' or module names, comma-separated (e.g. q_proj,v_proj)",
    )
    max_length: int = Field(384, ge=16, description="prompt + response tokens")
    response_max: int = Field(96, ge=4, description="response tokens kept")
    max_turns: int | None = Field(MAX_TURNS, ge=1, description="history turns in the prompt")


class DetoxSettings(GeneratorSettings):
    alpha: float = Field(0.0, ge=0.0, description="plain MLE: the paper's instruction tuning")
    language: str = Field("ko", description="of the detoxify prompt template")
    max_length: int = Field(256, ge=16)
    response_max: int = Field(128, ge=4)
    # 1.5: on all 676 held-out K/DA sentences (bench/detox_quality.py, the full epoch) the
    # only tried bias with chrF >= copying the input and <= 0.4 x its offensive rate
    copy_bias: float = Field(
        1.5, description="rewriting: added to the logits of the input's own tokens"
    )
    min_length_ratio: float = Field(
        0.0, ge=0.0, description="rewriting: no end before this x the input's token count"
    )
