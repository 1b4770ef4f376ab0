"""The detoxification model (K/DA, ACL 2025): instruction fine-tuning, offensive -> neutral.

A causal LM with LoRA adapters (``generator.py`` does the modelling) learns to rewrite an
implicitly offensive sentence as the neutral sentence it came from: the prompt is the
``detoxify`` template (one per language, ``prompts/<lang>/detoxify.j2``) around the
offensive sentence, the target the neutral one, by plain MLE (the paper: learning rate
2e-4, batch size 4). K/DA pairs (``formats/kda.py``: ``neutral,implicit``) are the data;
held-out pairs are split by neutral sentence so that no held-out meaning was trained on.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from rolecall.progress import progress_bar
from rolecall.prompts import load_template
from rolecall.records import Pair
from rolecall.train.backbones.base import EMBEDDED
from rolecall.train.checkpoints import Checkpoints
from rolecall.train.generator import Generator
from rolecall.train.keep_content import KeepContent, source, torch_processor
from rolecall.train.loop import TrainConfig, fit
from rolecall.train.settings import DetoxSettings as DetoxSettings  # re-exported

KIND = "detox"


class DetoxModel(Generator):
    """``rewrite(texts)``: neutral versions of offensive sentences."""

    KIND = KIND
    COMMAND = "rolecall detox train"
    SETTINGS = DetoxSettings

    @classmethod
    def create(
        cls,
        base: str | tuple[Any, Any] = EMBEDDED,
        settings: DetoxSettings | None = None,
        seed: int = 0,
    ) -> DetoxModel:
        return super().create(base, settings or DetoxSettings(), seed)

    def rewrite_prompt(self, toxic: str) -> str:
        return load_template("detoxify", self.settings.language).render(toxic=toxic.strip())

    def pair_loss(self, pairs: Sequence[Pair]) -> Any:
        batch = self._batch_rows([(self.rewrite_prompt(p.toxic), p.neutral, False) for p in pairs])
        value, _ = self.loss_fn(*self._logits(batch))
        return value

    def fit_pairs(
        self,
        pairs: Sequence[Pair],
        config: TrainConfig,
        progress: bool = True,
        checkpoints: Checkpoints | None = None,
    ) -> dict[str, Any]:
        if not pairs:
            raise ValueError("no pairs to train the detox model on")
        description = "training detox model"
        return fit(
            self.model,
            None,
            list(pairs),
            self.pair_loss,
            config,
            progress,
            description,
            checkpoints,
        )

    def rewrite(
        self,
        texts: Sequence[str],
        max_new_tokens: int = 64,
        batch_size: int = 8,
        progress: bool = False,
        keep: KeepContent | None = None,
    ) -> list[str]:
        """Greedy neutral rewrites, one per input sentence (a progress bar on stderr with
        ``progress``); ``keep``: the content-keeping decoding, the model's own by default."""
        return list(self.rewrites(texts, max_new_tokens, batch_size, progress, keep))

    def rewrites(
        self,
        texts: Sequence[str],
        max_new_tokens: int = 64,
        batch_size: int = 8,
        progress: bool = False,
        keep: KeepContent | None = None,
    ) -> Iterator[str]:
        """``rewrite``, one sentence at a time as each batch is done."""
        keep = keep or KeepContent.of(self.settings)
        with progress_bar(len(texts), "rewriting", enabled=progress) as advance:
            for start in range(0, len(texts), batch_size):
                chunk = texts[start : start + batch_size]
                prompts = [self.rewrite_prompt(t) for t in chunk]
                processors = self._keep_processors(chunk, keep) if keep.active() else None
                yield from self._complete(prompts, max_new_tokens, 0.0, 0, processors)
                advance(len(chunk))

    def _keep_processors(self, texts: Sequence[str], keep: KeepContent):
        tok = self.tokenizer

        def tokenize(text: str) -> list[int]:
            return tok(text, add_special_tokens=False)["input_ids"]

        sources = [source(text, tokenize, keep) for text in texts]
        stops = sorted({*tokenize("\n"), *tokenize("\n\n"), tok.eos_token_id})
        return lambda width: torch_processor(sources, keep, stops, width)


REWRITE_ENGINES = ("transformers", "llamacpp")


def rewriter(model: DetoxModel | None, model_dir, engine: str, keep: KeepContent | None = None):
    """``rewrite(texts, max_new_tokens, progress)`` -> rewrites, one at a time: ``model``
    itself (transformers), or llama.cpp with the adapter saved in ``model_dir``; ``keep``:
    the content-keeping decoding (default: the model's own)."""
    from rolecall.errors import ConfigError

    if engine not in REWRITE_ENGINES:
        raise ConfigError(f"no rewriting engine {engine!r}", fix="use transformers or llamacpp")
    if engine == "llamacpp":
        from rolecall.train.gguf_lora import LlamaCppRewriter

        return LlamaCppRewriter(model_dir, keep=keep).rewrites
    return lambda texts, max_new_tokens, progress: model.rewrites(
        texts, max_new_tokens, progress=progress, keep=keep
    )


def split_pairs(pairs: Sequence[Pair], held_out: float, seed: int) -> tuple[list[Pair], list[Pair]]:
    """(train, test) by neutral sentence: a neutral sentence's rewrites stay together."""
    from rolecall.train.data import split_by

    return split_by(list(pairs), key=lambda pair: pair.neutral, held_out=held_out, seed=seed)
