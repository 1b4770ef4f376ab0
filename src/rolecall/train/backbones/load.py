"""Loading a backbone: by name (``load_backbone``: ``"embedded"``, ``"sentence"``, ``"e5"``
or a local model directory) or as a model directory saved it (``load_saved_backbone``)."""

from __future__ import annotations

import json
from pathlib import Path

from rolecall.errors import ConfigError, InputFileError
from rolecall.train.backbones.base import (
    BACKBONE_DIR,
    E5,
    EMBEDDED,
    EMBEDDED_LAYER,
    SENTENCE,
    SOURCE_FILE,
    TUNED_FILE,
    Backbone,
    torch_module,
)
from rolecall.train.backbones.e5 import E5Encoder
from rolecall.train.backbones.sentence import SentenceEncoder


def load_backbone(name: str, frozen: bool | None = None, layer: int | None = None) -> Backbone:
    """``"embedded"`` (frozen unless told otherwise), ``"sentence"`` or ``"e5"`` (the
    bundled encoders, frozen) or a local model directory (trainable unless told otherwise).
    ``layer``: keep the first ``layer`` transformer layers (default: ``EMBEDDED_LAYER``
    for the embedded model, all of a model directory's; the model's own layer count keeps
    them all)."""
    if name == EMBEDDED:
        frozen = True if frozen is None else frozen
        return _load_source(name, frozen, EMBEDDED_LAYER if layer is None else layer)
    if name in (SENTENCE, E5):
        return _load_source(name, True if frozen is None else frozen, layer)
    return _load_source(name, False if frozen is None else frozen, layer)


def _load_source(name: str, frozen: bool, layer: int | None) -> Backbone:
    """``load_backbone`` with every setting given (``layer`` None: all layers)."""
    if name == SENTENCE:
        if not frozen or layer is not None:
            raise ConfigError(
                "the sentence encoder is used whole, frozen or with its dense top tuned",
                fix="leave --trainable and --layer out for --backbone sentence (the "
                "retriever's default); --tune-layers 1-5 trains the last layers of its top; "
                "--backbone embedded --layer N cuts the embedded Gemma after layer N",
            )
        return SentenceEncoder()
    if name == E5:
        if not frozen or layer is not None:
            raise ConfigError(
                "the e5 encoder is used whole and frozen: its package gives sentence vectors only",
                fix="leave --trainable, --layer and --tune-layers out for --backbone e5",
            )
        return E5Encoder()
    if name == EMBEDDED:
        from rolecall.llm.hf import embedded_snapshot

        backbone = _from_directory(embedded_snapshot(), frozen, layer)
        backbone.source = EMBEDDED
        return backbone
    path = Path(name).expanduser()
    if not path.is_dir():
        raise InputFileError(
            path,
            "no such model directory" if not path.exists() else "is not a model directory",
            fix="give a local transformers model directory (config.json, "
            "weights, tokenizer files) or 'embedded'; nothing is "
            "downloaded from a model hub",
        )
    backbone = _from_directory(path, frozen, layer)
    backbone.source = str(path.resolve())
    return backbone


def _from_directory(path: Path, frozen: bool, layer: int | None = None) -> Backbone:
    torch_module()
    from transformers import AutoModel, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModel.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise InputFileError(
            path,
            f"transformers cannot load this model: {exc}",
            fix="check that the directory holds config.json, the weights and the tokenizer files",
        ) from exc
    return Backbone(model, tokenizer, str(path), frozen, layer)


def load_saved_backbone(directory: Path) -> Backbone:
    """The backbone a model directory saved (``Backbone.save``): copied whole, a reference
    to its source, or the source with its tuned top layers put back."""
    path = directory / SOURCE_FILE
    if not path.is_file():
        raise InputFileError(
            directory,
            f"has no {SOURCE_FILE}: not a saved rolecall model",
            fix="point at the directory that 'rolecall train' wrote",
        )
    info = json.loads(path.read_text(encoding="utf-8"))
    layer = info.get("layer")  # absent (saved before the setting): the whole model
    if info["copied"]:
        backbone = _from_directory(directory / BACKBONE_DIR, info["frozen"], layer)
        backbone.source = info["source"]
        backbone.layer = layer  # saved already cut: its config counts only these
        return backbone
    if info.get("tuned"):
        return _load_tuned(directory, info, layer)
    return _load_source(info["source"], info["frozen"], layer)


def _load_tuned(directory: Path, info: dict, layer: int | None) -> Backbone:
    """The source loaded again with its saved tuned layers put back."""
    from safetensors.torch import load_file

    path = directory / TUNED_FILE
    if not path.is_file():
        raise InputFileError(
            directory,
            f"says its top {info['tuned']} layers were tuned but has no {TUNED_FILE}",
            fix="copy the whole model directory that 'rolecall train' wrote, or train again",
        )
    backbone = _load_source(info["source"], True, layer).tune_top(int(info["tuned"]))
    if not backbone.put_tuned_weights(load_file(str(path))):
        raise InputFileError(
            path,
            f"does not fit the top {info['tuned']} layers of {info['source']} (the source "
            "model changed since training?)",
            fix="train the model again on the backbone it names",
        )
    return backbone
