"""Decoding that keeps the input's content, for the detox model (issue #17 item 4).

Trained on few pairs, the detox model often drops the offensive tail of a sentence together
with some of its neutral content. Two decoding knobs act against that, on both rewriting
paths (transformers and llama.cpp), both off unless set:

- ``copy_bias``: added to the logit of every token of the input sentence at every step, so
  that the rewrite prefers the input's own words (copy-aware decoding);
- ``min_length_ratio``: the rewrite may not end (newline or end of text) before it has
  ``ratio`` x the input's token count (length control).

The model's defaults live in its ``model.json`` (``DetoxSettings``); ``rolecall detox
rewrite --copy-bias B --min-length-ratio R`` overrides them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class KeepContent:
    copy_bias: float = 0.0
    min_length_ratio: float = 0.0

    @classmethod
    def of(cls, settings: Any) -> KeepContent:
        """The decoding a detox model was saved with (its ``DetoxSettings``)."""
        return cls(settings.copy_bias, settings.min_length_ratio)

    def active(self) -> bool:
        return bool(self.copy_bias or self.min_length_ratio)

    def label(self) -> str:
        return f"copy bias {self.copy_bias:g}, min length x{self.min_length_ratio:g}"


@dataclass(frozen=True)
class Source:
    """What decoding needs of one input sentence: its token ids (as the sentence starts a
    line and inside one) and the tokens the rewrite must reach before it may end."""

    token_ids: list[int]
    min_tokens: int


def source(text: str, tokenize: Callable[[str], list[int]], keep: KeepContent) -> Source:
    """``tokenize``: text -> ids, without BOS (the backend's own tokenizer)."""
    text = text.strip()
    alone = tokenize(text)
    ids = sorted(set(alone) | set(tokenize(" " + text))) if keep.copy_bias else []
    return Source(ids, int(keep.min_length_ratio * len(alone)))


def adjust_row(row: Any, src: Source, stop_ids: Sequence[int], bias: float, generated: int):
    """One row of next-token logits (a NumPy or torch 1-D array), changed in place."""
    if bias and src.token_ids:
        row[src.token_ids] += bias
    if generated < src.min_tokens:
        row[list(stop_ids)] = float("-inf")
    return row


def llama_processor(src: Source, keep: KeepContent, stop_ids: Sequence[int], prompt_len: int):
    """A llama-cpp-python logits processor for one rewrite (``prompt_len`` tokens of
    prompt)."""

    def process(input_ids, scores):
        return adjust_row(scores.copy(), src, stop_ids, keep.copy_bias, len(input_ids) - prompt_len)

    return process


def torch_processor(
    sources: Sequence[Source], keep: KeepContent, stop_ids: Sequence[int], width: int
):
    """A transformers ``LogitsProcessorList`` for a left-padded batch whose prompts end at
    column ``width``: row ``i`` of the batch rewrites ``sources[i]``."""
    from transformers import LogitsProcessor, LogitsProcessorList

    class KeepContentProcessor(LogitsProcessor):
        def __call__(self, input_ids, scores):
            generated = input_ids.shape[1] - width
            for row, src in enumerate(sources):
                adjust_row(scores[row], src, stop_ids, keep.copy_bias, generated)
            return scores

    return LogitsProcessorList([KeepContentProcessor()])
