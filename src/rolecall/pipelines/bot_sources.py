"""``rolecall bot run``'s config (``BotRunConfig``, a YAML file such as
``examples/carecall/bot.yaml``) and its first stage: the example sources merged, exact
duplicates dropped, counted per source, and split into training and held-out examples by
dialogue (no dialogue on both sides).

A source is one of:

- ``examples: PATH``: example JSONL (``Example`` records), as a dialogue run writes them
  (``OUT/examples.jsonl``), as ``rolecall web export`` writes them, as ``rolecall detox
  safety-examples`` writes them, or written by hand;
- ``dialogues: PATH``: dialogues written in bounds (Dialogue JSONL, or a CareCall corpus
  ``.json``): every system turn a positive; with ``forbidden_examples`` the spec's
  forbidden examples are placed after contexts of these dialogues' training side, as
  negatives.

Relative paths are relative to the config file.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from rolecall.errors import InputFileError
from rolecall.pipelines.run_config import Section, relative_path
from rolecall.records import Example, RoleSpec
from rolecall.train.backbones.base import BOT_PARTNER, DEFAULT_BACKBONE

CONFIG_HELP = "see examples/carecall/bot.yaml and docs/bots.md"
GUARD_CANDIDATES = ("tfidf", "sentence", "embedded")


class Source(Section):
    """One source of examples: exactly one of ``examples`` and ``dialogues``."""

    examples: str | None = Field(None, description="example JSONL (Example records)")
    dialogues: str | None = Field(None, description="in-bounds dialogues: positives")
    name: str | None = Field(None, description="how the card names it (default: the file)")

    @model_validator(mode="after")
    def _one_path(self):
        if (self.examples is None) == (self.dialogues is None):
            raise ValueError("a source names exactly one of 'examples' and 'dialogues'")
        return self

    @property
    def path(self) -> str:
        return self.examples or self.dialogues or ""

    @property
    def label(self) -> str:
        return self.name or Path(self.path).name


class ChecksSection(Section):
    """The user-turn checks (``rolecall train user-checks``): trained when ``turns`` is
    given and the spec declares ``user_checks``."""

    turns: str | None = Field(None, description="training turns JSONL ({text, check})")
    dialogues: bool = Field(True, description="the dialogue sources' user turns as ordinary")
    data: str | None = Field(None, description="the shared-data folder for the spec's corpora")


class BotRunConfig(Section):
    spec: str = Field(description="the role spec (YAML)")
    out: str = Field(description="where the bot's versions are written (v1, v2 ...)")
    versions: bool = Field(
        True, description="out holds versions; false: out is the bot directory itself"
    )
    sources: list[Source] = Field(min_length=1)
    forbidden_examples: int = Field(
        3, ge=0, description="contexts per spec forbidden example, as negatives (0: none)"
    )
    held_out_share: float = Field(0.15, gt=0, lt=1, description="dialogues held out")
    seed: int = 0
    backbone: Literal["sentence", "e5", "embedded"] = Field(
        DEFAULT_BACKBONE["bot"],
        description="the retriever's and reranker's backbone (docs/models.md)",
    )
    partner: Literal["none", "sentence", "e5"] | None = Field(
        None,
        description="a second retriever's backbone, its scores summed with the first's "
        "(default: e5 beside sentence, sentence beside e5, none beside embedded); none: "
        "one retriever",
    )
    guard: list[Literal["tfidf", "sentence", "embedded"]] = Field(
        ["tfidf", "sentence"],
        min_length=1,
        description="the out-of-bounds classifiers fitted; the best on held-out data guards",
    )
    generator: str | None = Field(
        None, description="the model the bot falls back to (default: the embedded model)"
    )
    user_checks: ChecksSection = ChecksSection()
    features: str | None = Field(
        None, description="frozen backbones' states (default: ROLECALL_HOME/features)"
    )


def partner_of(config: BotRunConfig) -> str | None:
    """The backbone of the bot's second retriever (None: one retriever)."""
    partner = config.partner or BOT_PARTNER.get(config.backbone, "none")
    return None if partner in ("none", config.backbone) else partner


def load_bot_config(path: str | Path) -> BotRunConfig:
    """Read and validate a bot config; relative paths are relative to its file."""
    from rolecall.yaml_files import load_yaml_model

    path = Path(path)
    config = load_yaml_model(path, BotRunConfig, "bot config", CONFIG_HELP)
    folder = path.resolve().parent
    # printed in every stage's line: relative when below here, else absolute (not ../../tmp)
    relative = os.path.relpath(folder)
    base = folder if relative.startswith("..") else Path(relative)

    def here(given: str | None) -> str | None:  # short: printed in every stage's line
        return given and os.path.normpath(relative_path(base, given))

    sources = [
        s.model_copy(update={"examples": here(s.examples), "dialogues": here(s.dialogues)})
        for s in config.sources
    ]
    checks = config.user_checks
    checks = checks.model_copy(update={"turns": here(checks.turns), "data": here(checks.data)})
    return config.model_copy(
        update={
            "spec": here(config.spec),
            "out": here(config.out),
            "features": here(config.features),
            "sources": sources,
            "user_checks": checks,
        }
    )


def sources_digest(config: BotRunConfig) -> str:
    """A hash of the spec's and every source file's bytes (and the checks' turns): a run
    whose inputs changed is another bot."""
    digest = hashlib.sha256()
    paths = [Path(config.spec)] + [Path(s.path) for s in config.sources]
    paths += [Path(config.user_checks.turns)] if config.user_checks.turns else []
    for path in paths:
        if not path.is_file():
            raise InputFileError(path, "file not found", fix=f"check the path ({CONFIG_HELP})")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def merged_examples(
    config: BotRunConfig, spec: RoleSpec
) -> tuple[list[Example], list[Example], dict[str, Any]]:
    """``(train, held_out, counts)``: every source's examples, exact duplicates dropped
    (the first source's copy kept), split by dialogue; the spec's forbidden examples
    placed after contexts of the training dialogues."""
    from rolecall.examples import examples_from_dialogues, examples_from_forbidden, marked_in_bounds
    from rolecall.jsonl import read_jsonl
    from rolecall.pipelines.dialogues import read_dialogues
    from rolecall.train.data import split_by

    # subtle: seed + 1, so that the models' own test splits (by dialogue, seed) differ
    split_seed, share = config.seed + 1, config.held_out_share
    train: list[Example] = []
    held: list[Example] = []
    counts: dict[str, Any] = {"sources": {}}
    train_dialogues = []
    seen: set[str] = set()
    for source in config.sources:
        if source.dialogues:
            dialogues = read_dialogues(source.dialogues)
            kept, out = split_by(dialogues, lambda d: d.id, share, split_seed)
            train_dialogues += kept
            parts = [
                list(examples_from_dialogues(map(marked_in_bounds, kept))),
                list(examples_from_dialogues(map(marked_in_bounds, out))),
            ]
        else:
            examples = list(read_jsonl(source.examples, Example))
            parts = list(split_by(examples, _dialogue_key, share, split_seed))
        fresh = [[e for e in part if _first(e, seen)] for part in parts]
        train += fresh[0]
        held += fresh[1]
        read = sum(map(len, parts))
        if not read:
            raise InputFileError(
                source.path, "holds no examples", fix=f"give a source with examples ({CONFIG_HELP})"
            )
        counts["sources"][source.label] = {
            "read": read,
            "duplicates": read - sum(map(len, fresh)),
            "train": len(fresh[0]),
            "held_out": len(fresh[1]),
            "negatives": sum(e.label == "negative" for part in fresh for e in part),
        }
    if config.forbidden_examples and train_dialogues:
        forbidden = examples_from_forbidden(
            spec, train_dialogues, per_example=config.forbidden_examples, seed=config.seed
        )
        train += forbidden
        counts["spec_negatives"] = len(forbidden)
    counts |= {
        "train": len(train),
        "held_out": len(held),
        "negatives": sum(e.label == "negative" for e in train),
        "categories": dict(Counter(e.category for e in train if e.category)),
    }
    return train, held, counts


def _dialogue_key(example: Example) -> str:
    """An example's dialogue (its own text when it names none)."""
    if example.dialogue_id:
        return example.dialogue_id
    return " | ".join(t.text for t in example.history[:2]) or example.response


def _first(example: Example, seen: set[str]) -> bool:
    """True the first time an example (context, reply and label) is seen."""
    key = example.model_dump_json(include={"history", "response", "label", "category"})
    if key in seen:
        return False
    seen.add(key)
    return True
