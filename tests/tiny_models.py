"""Tiny, randomly initialised models for the tests: fast to build, deterministic.

``tiny_tokenizer`` trains a WordPiece tokenizer on the test texts; ``tiny_backbone`` is a
2-layer BERT on it (a ``Backbone`` with source ``"in-code"``); ``tiny_causal_lm`` a 2-layer
Llama for the generator and detox tests (``GeneratorSettings.base`` = ``"in-code"``);
``tiny_gemma`` a 3-layer Gemma 3 backbone, cut to a layer, for the layer tests, its tokenizer
trained on ``TEXTS`` (four short sentences the backbone tests encode).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from rolecall.train.backbones.base import Backbone

TEXTS = ["오늘 날씨가 좋네요", "식사는 하셨어요", "어르신 산책 다녀오셨어요", "가 나 다 라 마"]


def tiny_tokenizer(texts: Sequence[str], vocab_size: int = 400) -> Any:
    """A WordPiece tokenizer (BERT specials, NFC) trained on ``texts`` (tests)."""
    from tokenizers import (
        Tokenizer,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    raw = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    raw.normalizer = normalizers.NFC()
    raw.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    raw.train_from_iterator(
        list(texts),
        trainers.WordPieceTrainer(
            vocab_size=vocab_size, special_tokens=specials, show_progress=False
        ),
    )
    # the trainer numbers tokens in hash order, which changes from run to run: renumber
    # (specials first, then sorted) so that a seeded tiny model is the same model every time
    learned = sorted(set(raw.get_vocab()) - set(specials))
    raw.model = models.WordPiece(
        {t: i for i, t in enumerate(specials + learned)}, unk_token="[UNK]"
    )
    raw.post_processor = processors.BertProcessing(
        ("[SEP]", raw.token_to_id("[SEP]")), ("[CLS]", raw.token_to_id("[CLS]"))
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=raw,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def tiny_backbone(
    texts: Sequence[str],
    hidden_size: int = 32,
    layers: int = 2,
    vocab_size: int = 400,
    max_length: int = 512,
    seed: int = 0,
    dropout: float = 0.1,
) -> Backbone:
    """A random 2-layer BERT and a WordPiece tokenizer trained on ``texts`` (tests)."""
    from transformers import BertConfig, BertModel

    tokenizer = tiny_tokenizer(texts, vocab_size)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=hidden_size * 2,
        max_position_embeddings=max_length,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    return Backbone(BertModel(config), tokenizer, "in-code", frozen=False)


def tiny_causal_lm(texts: Sequence[str], seed: int = 0) -> tuple[Any, Any]:
    """A random 2-layer Llama and a WordPiece tokenizer trained on ``texts`` (tests)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tiny_tokenizer(list(texts) + ["user: system:"], vocab_size=300)
    tokenizer.bos_token, tokenizer.eos_token = "[CLS]", "[SEP]"
    torch.manual_seed(seed)
    # subtle: LoRA leaves the LM head frozen; at the usual 0.02 init its rows are so short
    # that the logits stay within about +-0.6 whatever the adapters do (no token can
    # become likely), so the test model starts with larger weights
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        initializer_range=0.3,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config), tokenizer


def tiny_gemma(layer=None, frozen=True):
    """A random 3-layer Gemma 3 (final norm, sliding and full attention) on the tiny
    tokenizer, cut to ``layer`` layers."""
    from transformers import Gemma3TextConfig, Gemma3TextModel

    tokenizer = tiny_tokenizer(TEXTS * 3, vocab_size=120)
    torch.manual_seed(0)
    config = Gemma3TextConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=3,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        sliding_window=3,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
    )
    return Backbone(Gemma3TextModel(config), tokenizer, "in-code", frozen, layer)
