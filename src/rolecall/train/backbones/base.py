"""The ``Backbone``: a transformers model and its tokenizer with the text handling every
head shares (texts and pairs to token ids, padding, states, pooling defaults), tuning its
top layers, saving; the cut after layer N (``keep_layers``); ``torch_module``, the one
way a model module reaches torch. How a backbone is loaded by name, or a saved one again:
``load.py``; the package's docstring says what a backbone can be."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from rolecall.errors import BackendNotInstalled, ConfigError

EMBEDDED = "embedded"
# the source of a model built in code (a (model, tokenizer) handed over, not a name or a
# path): nothing could load it again, so a model directory keeps its weights whole
IN_CODE = "in-code"
SENTENCE = "sentence"  # the bundled sentence encoder (sentence.py; its NAME)
E5 = "e5"  # the second bundled encoder, multilingual-e5-small (e5.py), frozen
EMBEDDED_LAYERS = 18  # transformer layers of the embedded Gemma 3 270M
# layers kept of the embedded Gemma when none is asked for (None: all). Layer 7 is the
# best single layer for the classifier and retriever probes and 2.5x faster to extract
# (bench/feature_layers.py, docs/models.md#which-layer), but the attention reranker did
# not learn on it in tests/integration/test_dialogue_models.py (its loss stayed flat; it
# falls through all 18), and the bot's retriever and reranker share one context pass: the
# default stays whole until the reranker is measured per layer (#17 item 2). The classifier
# has its own default below (it shares no pass with them).
EMBEDDED_LAYER: int | None = None


class HeadDefaults(NamedTuple):
    """What ``rolecall train KIND`` does with a bundled backbone when not told otherwise."""

    layer: int | None  # layers kept (None: all)
    tune: int  # top layers of those trained (0: frozen, states cached)
    backbone_lr: float | None = None  # the tuned layers' learning rate (None: TrainConfig's)


# measured per head (bench/classifier_quality.py, docs/models.md#the-classifiers-default-
# the-top-layers-tuned); a kind not listed: EMBEDDED_LAYER, frozen
EMBEDDED_DEFAULTS = {"classifier": HeadDefaults(layer=7, tune=4)}
# the retriever tunes the sentence encoder's whole dense top (bench/retrieval_quality.py:
# chosen on a dev split of chatbot_data's training questions, docs/models.md)
SENTENCE_DEFAULTS = {"retriever": HeadDefaults(layer=None, tune=5, backbone_lr=3e-4)}
HEAD_DEFAULTS = {EMBEDDED: EMBEDDED_DEFAULTS, SENTENCE: SENTENCE_DEFAULTS}
# the backbone each model kind trains on when none is named: the one table the training
# commands, 'rolecall bot run' (its retriever and reranker) and the demo read; why each,
# with the benches' numbers: docs/models.md ("Which backbone by default")
DEFAULT_BACKBONE = {
    "classifier": EMBEDDED,
    "retriever": SENTENCE,
    "reranker": EMBEDDED,
    "features": EMBEDDED,
    "bot": SENTENCE,  # the bot pipeline's retriever and reranker
}
# the bot's second retriever, by its first one's backbone: the two retrievers' scores are
# summed (serve/selection.py); a backbone not listed gets none
BOT_PARTNER = {SENTENCE: E5, E5: SENTENCE}
# where a transformers model keeps its list of transformer layers
LAYER_LISTS = ("layers", "encoder.layer", "h", "model.layers", "decoder.layers", "transformer.h")
BACKBONE_DIR = "backbone"
TUNED_FILE = "tuned.safetensors"
# the norm some models put after their last transformer layer (tuned with the top layers)
FINAL_NORMS = ("norm", "final_layer_norm", "final_layernorm", "ln_f")
SOURCE_FILE = "backbone.json"


def torch_module():
    """torch, once transformers is there too: the one way every model module reaches it
    (a clear error with the install command where either is missing)."""
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError:
        raise BackendNotInstalled(
            "training needs torch and transformers", fix="pip install torch==2.13.0 'rolecall[hf]'"
        ) from None
    return torch


class Backbone:
    """A transformers model and its tokenizer, with the text handling every head shares.

    ``source`` names where it came from (a path, ``"embedded"`` or ``IN_CODE``); a frozen
    backbone never trains and runs under ``no_grad`` in eval mode (no dropout).
    """

    def __init__(
        self, model: Any, tokenizer: Any, source: str, frozen: bool, layer: int | None = None
    ):
        self.model, self.tokenizer, self.source, self.frozen = model, tokenizer, source, frozen
        self.layer = keep_layers(model, layer)
        self.tuned: int | None = None  # top layers trained by ``tune_top``; None: all or none
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        config = model.config
        self.hidden_size = int(getattr(config, "hidden_size", 0) or config.d_model)
        self.has_segments = int(getattr(config, "type_vocab_size", 0) or 0) > 1
        self.start_id = (
            tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
        )
        self.sep_id = (
            tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
        )
        if frozen:
            self._freeze()

    def _freeze(self) -> None:
        """No weight trains, and the model runs in eval mode (no dropout)."""
        self.frozen, self.tuned = True, None
        self.model.eval()
        for parameter in self.model.parameters():
            parameter.requires_grad_(False)

    def tune_top(self, layers: int) -> Backbone:
        """Train the top ``layers`` transformer layers and the final norm after them, keep
        every other weight as loaded (0: frozen). Returns the backbone."""
        if layers == 0:
            self._freeze()
            return self
        found = layer_list(self.model)
        if found is None:
            raise ConfigError(
                f"cannot find the transformer layers of {type(self.model).__name__} to tune",
                fix="train the whole backbone (--trainable) or freeze it (--frozen)",
            )
        parent, _, blocks = found
        if not 1 <= layers <= len(blocks):
            raise ConfigError(
                f"cannot tune the top {layers} layers: the backbone has {len(blocks)}",
                fix=f"give a number from 0 (frozen) to {len(blocks)} (every layer)",
            )
        self._freeze()
        modules = list(blocks)[-layers:]
        modules += [getattr(parent, n) for n in FINAL_NORMS if hasattr(parent, n)]
        for module in modules:
            for parameter in module.parameters():
                parameter.requires_grad_(True)
        self.frozen, self.tuned = False, layers
        return self

    def tuned_weights(self) -> dict[str, Any]:
        """The weights ``tune_top`` trains, by parameter name."""
        return {
            name: parameter.detach().contiguous()
            for name, parameter in self.model.named_parameters()
            if parameter.requires_grad
        }

    def put_tuned_weights(self, weights: dict[str, Any]) -> bool:
        """Put back saved ``tuned_weights``; False (nothing changed) if they do not fit."""
        if not weights_fit(weights, self.tuned_weights()):
            return False
        self.model.load_state_dict(weights, strict=False)
        return True

    @property
    def identity(self) -> str:
        """What the cached features of this backbone are keyed by (a cut one: its layer)."""
        whole = f"{self.source}|{type(self.model).__name__}|{self.hidden_size}"
        return whole if self.layer is None else f"{whole}|layer={self.layer}"

    def parameters(self):
        return self.model.parameters()

    @property
    def device(self) -> Any:
        """Where the states come out (and a head over them runs)."""
        return next(self.model.parameters()).device

    @property
    def default_pool(self) -> str:
        """What a pair head's ``auto`` pool becomes: a decoder's last token has attended
        to the whole pair (its first token has seen nothing), an encoder's CLS token is
        trained as a summary; both are joined with the mean of the states."""
        config = self.model.config
        decoder = bool(getattr(config, "is_decoder", False)) or self.tokenizer.cls_token_id is None
        return "mean+last" if decoder else "mean+first"

    # ---- token ids ---------------------------------------------------------------------

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        return self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]

    def _wrap(self, *segments: list[int]) -> tuple[list[int], list[int]]:
        ids, types = [], []
        if self.start_id is not None:
            ids.append(self.start_id)
            types.append(0)
        for number, segment in enumerate(segments):
            ids += segment
            types += [number] * len(segment)
            if self.sep_id is not None:
                ids.append(self.sep_id)
                types.append(number)
        return ids, types

    def _specials(self, segments: int) -> int:
        return (self.start_id is not None) + segments * (self.sep_id is not None)

    def batch_texts(
        self, texts: Sequence[str], max_length: int, side: str = "right"
    ) -> dict[str, Any]:
        """Token tensors for single texts, cut to ``max_length`` from ``side``."""
        room = max_length - self._specials(1)
        rows = [self._wrap(_cut(ids, room, side)) for ids in self._ids(texts)]
        return self._pad(rows)

    def batch_pairs(
        self,
        firsts: Sequence[str],
        seconds: Sequence[str],
        max_length: int,
        second_max: int | None = None,
    ) -> dict[str, Any]:
        """``[CLS] first [SEP] second [SEP]``: the second text keeps up to ``second_max``
        tokens (default half the room), the first fills the rest, cut from the left."""
        if len(firsts) != len(seconds):
            raise ValueError("batch_pairs needs as many second texts as first texts")
        room = max_length - self._specials(2)
        second_max = room // 2 if second_max is None else min(second_max, room)
        rows = []
        for first, second in zip(self._ids(firsts), self._ids(seconds)):
            second = second[:second_max]
            rows.append(self._wrap(_cut(first, room - len(second), "left"), second))
        return self._pad(rows)

    def _pad(self, rows: list[tuple[list[int], list[int]]]) -> dict[str, Any]:
        torch = torch_module()
        width = max(1, max(len(ids) for ids, _ in rows))
        pad = self.tokenizer.pad_token_id
        input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        types = torch.zeros((len(rows), width), dtype=torch.long)
        for row, (ids, kinds) in enumerate(rows):
            input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            mask[row, : len(ids)] = 1
            types[row, : len(ids)] = torch.tensor(kinds, dtype=torch.long)
        batch = {"input_ids": input_ids, "attention_mask": mask}
        if self.has_segments:
            batch["token_type_ids"] = types
        return batch

    # ---- hidden states -----------------------------------------------------------------

    def states(self, batch: dict[str, Any]) -> tuple[Any, Any]:
        """(hidden [B, T, H], mask [B, T] bool) of a batch from ``batch_texts``/``pairs``."""
        torch = torch_module()
        device = next(self.model.parameters()).device
        batch = {key: value.to(device) for key, value in batch.items()}
        with torch.set_grad_enabled(not self.frozen and torch.is_grad_enabled()):
            output = self.model(**batch)
        hidden = output.last_hidden_state if hasattr(output, "last_hidden_state") else output[0]
        return hidden.float(), batch["attention_mask"].bool()

    def encode(self, texts: Sequence[str], max_length: int, side: str = "right"):
        return self.states(self.batch_texts(texts, max_length, side))

    def train(self, mode: bool = True) -> None:
        self.model.train(mode and not self.frozen)

    def to(self, device: str) -> Backbone:
        self.model.to(device)
        return self

    # ---- saving ------------------------------------------------------------------------

    def save(self, directory: Path) -> None:
        """A trained backbone is saved whole; a frozen one that came from a path or the
        embedded model is saved as a reference (its weights never changed); a tuned one as
        a reference and its tuned layers' weights."""
        directory.mkdir(parents=True, exist_ok=True)
        copy = (not self.frozen and self.tuned is None) or self.source == IN_CODE
        if copy:
            self.model.save_pretrained(directory / BACKBONE_DIR)
            self.tokenizer.save_pretrained(directory / BACKBONE_DIR)
        elif self.tuned is not None:
            from safetensors.torch import save_file

            save_file(self.tuned_weights(), str(directory / TUNED_FILE))
        info = {"source": self.source, "frozen": self.frozen, "copied": copy, "layer": self.layer}
        if self.tuned is not None and not copy:
            info["tuned"] = self.tuned
        (directory / SOURCE_FILE).write_text(json.dumps(info), encoding="utf-8")


def weights_fit(weights: dict[str, Any], expected: dict[str, Any]) -> bool:
    """Whether saved weights have exactly the expected names, each of the expected shape."""
    return set(weights) == set(expected) and all(
        weights[n].shape == expected[n].shape for n in weights
    )


def _cut(ids: list[int], room: int, side: str) -> list[int]:
    if side not in ("left", "right"):
        raise ValueError("side is 'left' or 'right'")
    room = max(room, 0)
    if len(ids) <= room:
        return ids
    return ids[len(ids) - room :] if side == "left" else ids[:room]


def layer_list(model: Any) -> tuple[Any, str, Any] | None:
    """(parent module, attribute, ``ModuleList``) of a model's transformer layers, found
    at one of ``LAYER_LISTS``; None where it has none of them."""
    for path in LAYER_LISTS:
        *steps, name = path.split(".")
        parent = model
        for step in steps:
            parent = getattr(parent, step, None)
        layers = getattr(parent, name, None)
        if layers is not None and hasattr(layers, "__len__") and hasattr(layers, "__getitem__"):
            return parent, name, layers
    return None


def keep_layers(model: Any, layer: int | None) -> int | None:
    """Cut ``model`` to its first ``layer`` transformer layers, in place (None or the
    model's own count: unchanged). Returns the layers kept, None for all."""
    if layer is None:
        return None
    found = layer_list(model)
    if found is None:
        raise ConfigError(
            f"cannot find the transformer layers of {type(model).__name__} to keep {layer}",
            fix="leave the layer setting out for this model (it is kept whole)",
        )
    parent, name, layers = found
    total = len(layers)
    if not 1 <= layer <= total:
        raise ConfigError(
            f"layer {layer} is out of range: the model has {total} transformer layers",
            fix=f"give a layer from 1 to {total} ({total}: the whole model)",
        )
    if layer == total:
        return None
    import torch

    setattr(parent, name, torch.nn.ModuleList(list(layers)[:layer]))
    config = model.config
    config.num_hidden_layers = layer
    if isinstance(getattr(config, "layer_types", None), list):
        config.layer_types = config.layer_types[:layer]
    return layer
