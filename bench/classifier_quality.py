"""The offensiveness classifier against the classic baseline on BEEP! dev (issue #17 item 5).

Every model below trains on the very same examples, in the same run:

- **tfidf**: character n-gram TF-IDF + logistic regression (``train/baselines.py``, the
  ``chars`` view), the baseline;
- **classifier, default**: what ``rolecall train classifier EXAMPLES`` makes on the
  embedded Gemma (``EMBEDDED_DEFAULTS["classifier"]``: cut after layer 7, its top 4
  layers tuned with the head; ``classifier_training``: one pass);
- **classifier, frozen layer L** (``--frozen-layers``): the head alone over the frozen
  Gemma cut after layer L (``--frozen --layer L``: three passes; 18 is the old default,
  the whole model);
- **classifier, sentence encoder** (``--sentence``): the head over the bundled sentence
  encoder's vector of the comment (``--backbone sentence``: frozen, three passes).

The examples (``--examples``): ``beep``, BEEP! train (``slang/beep_labeled_train.tsv``,
news comments like the dev set; ``--limit`` draws a seeded sample), or ``mixed``, the
README's ``rolecall detox offensiveness-data`` (BEEP! train, Curse-detection and the K/DA
training pairs, at most ``--per-source`` of each, seeded).

Scored on BEEP! dev (``eval/beep_labeled_dev.tsv``, 471 comments, offensive = ``hate``
offensive or hate): macro-F1 over the two classes, and prediction throughput in texts a
second (the classifier's from raw text: its states computed afresh, nothing cached).

Usage: python bench/classifier_quality.py [--examples beep|mixed] [--limit N]
       [--per-source 1000] [--frozen-layers 7,18] [--sentence] [--seed 0] [--cache-dir DIR]
The last line printed is a JSON object with every number and the target
``classifier_vs_tfidf``: the default classifier's macro-F1 minus TF-IDF's, ">= 0.05".
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from rolecall.eval.offensiveness import beep_examples, offensiveness_examples
from rolecall.formats.kda import read_kda_csv
from rolecall.records import Example
from rolecall.train.backbone import EMBEDDED, EMBEDDED_DEFAULTS, SENTENCE
from rolecall.train.baselines import TfidfModel, TfidfSettings
from rolecall.train.classifier import OUT_OF_BOUNDS, Classifier
from rolecall.train.detox_model import split_pairs
from rolecall.train.features import Features
from rolecall.train.jobs import BackboneChoice, classifier_config

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
NAMES = ["in", "offensive"]
DEFAULT = "classifier, default"


def labels_of(examples: Sequence[Example]) -> list[int]:
    return [int(e.label == "negative") for e in examples]


def macro_f1(gold: Sequence[int], predicted: Sequence[int]) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(list(gold), list(predicted), average="macro"))


def timed(call):
    started = time.perf_counter()
    value = call()
    return value, time.perf_counter() - started


def target(value: float, goal: str = ">= 0.05") -> dict:
    return {"value": round(value, 4), "target": goal, "met": bool(value >= float(goal.split()[1]))}


def training_examples(
    data_dir: Path, kind: str, limit: int | None, per_source: int, seed: int
) -> list[Example]:
    """The examples every model trains on: BEEP! train (a seeded sample of ``limit``) or
    the README's mixture (``offensiveness_examples``, K/DA's training split only)."""
    if kind == "beep":
        examples = beep_examples(data_dir / "slang" / "beep_labeled_train.tsv")
        if limit and limit < len(examples):
            examples = random.Random(seed).sample(examples, limit)
        return examples
    if kind == "mixed":
        kda = split_pairs(read_kda_csv(data_dir / "detox" / "kda_ko.csv"), 0.1, seed)[0]
        return offensiveness_examples(data_dir, kda, per_source, seed)
    raise SystemExit(f"--examples is beep or mixed, not {kind!r}")


def classifier_row(model: Classifier, examples, dev_texts, dev_y, config) -> dict:
    """Train ``model`` on ``examples``, then score BEEP! dev from raw text."""
    history, seconds = timed(lambda: model.fit(examples, config, progress=True))
    model.features = Features(model.backbone, None, batch_size=config.batch_size)
    proba, predict_seconds = timed(
        lambda: model.predict_proba([[] for _ in dev_texts], dev_texts)[:, OUT_OF_BOUNDS]
    )
    predicted = (proba >= model.settings.threshold).astype(int)
    return {
        "macro_f1": round(macro_f1(dev_y, predicted), 4),
        "train_seconds": round(seconds, 1),
        "texts_per_second": round(len(dev_texts) / predict_seconds, 2),
        "last_loss": round(history["last_loss"], 4),
    }


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", default="beep", choices=["beep", "mixed"])
    parser.add_argument("--limit", type=int, help="beep: a seeded sample of N comments")
    parser.add_argument("--per-source", type=int, default=1000, help="mixed: per corpus")
    parser.add_argument(
        "--frozen-layers", default="7", help="frozen classifiers, one per layer ('' for none)"
    )
    parser.add_argument(
        "--sentence", action="store_true", help="also the head over the sentence encoder"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "runs" / "bench-features")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    torch.set_num_threads(2)
    examples = training_examples(
        args.data_dir, args.examples, args.limit, args.per_source, args.seed
    )
    dev = beep_examples(args.data_dir / "eval" / "beep_labeled_dev.tsv")
    texts, y = [e.response.strip() for e in examples], labels_of(examples)
    dev_texts, dev_y = [e.response.strip() for e in dev], labels_of(dev)
    print(
        f"examples ({args.examples}): {len(examples)}, {sum(y)} offensive; "
        f"BEEP! dev {len(dev)}, {sum(dev_y)} offensive",
        flush=True,
    )
    results: dict[str, dict] = {}
    tfidf = TfidfModel(TfidfSettings(labels=NAMES, seed=args.seed))
    _, seconds = timed(lambda: tfidf.fit(texts, [NAMES[v] for v in y]))
    proba, predict_seconds = timed(lambda: tfidf.predict_proba(dev_texts))
    results["tfidf"] = {
        "macro_f1": round(macro_f1(dev_y, proba.argmax(1)), 4),
        "train_seconds": round(seconds, 1),
        "texts_per_second": round(len(dev) / predict_seconds, 1),
    }
    print(f"tfidf: {results['tfidf']}", flush=True)

    choice = BackboneChoice(EMBEDDED)  # the policy's default: layer 7, its top 4 tuned
    config = classifier_config(choice, seed=args.seed)
    default = EMBEDDED_DEFAULTS["classifier"]
    model = Classifier.for_training(choice.load("classifier"), None, config, None)
    results[DEFAULT] = classifier_row(model, examples, dev_texts, dev_y, config)
    print(f"{DEFAULT} (layer {default.layer}, top {default.tune} tuned): {results[DEFAULT]}")
    for layer in (int(n) for n in args.frozen_layers.split(",") if n.strip()):
        frozen_choice = BackboneChoice(EMBEDDED, frozen=True, layer=layer)
        backbone = frozen_choice.load("classifier")
        name = f"classifier, frozen layer {layer}"
        frozen = classifier_config(frozen_choice, seed=args.seed)
        model = Classifier.for_training(backbone, None, frozen, args.cache_dir)
        results[name] = classifier_row(model, examples, dev_texts, dev_y, frozen)
        print(f"{name}: {results[name]}", flush=True)

    if args.sentence:
        sentence = BackboneChoice(SENTENCE)
        name, frozen = "classifier, sentence encoder", classifier_config(sentence, seed=args.seed)
        model = Classifier.for_training(sentence.load("classifier"), None, frozen, args.cache_dir)
        results[name] = classifier_row(model, examples, dev_texts, dev_y, frozen)
        print(f"{name}: {results[name]}", flush=True)
    print(f"\n{'model':36s}{'macro-F1':>10s}{'texts/s':>10s}")
    for name, row in results.items():
        print(f"{name:36s}{row['macro_f1']:10.3f}{row['texts_per_second']:10.1f}")
    gain = results[DEFAULT]["macro_f1"] - results["tfidf"]["macro_f1"]
    print(
        json.dumps(
            {
                "bench": "classifier_quality",
                "examples": args.examples,
                "n_examples": len(examples),
                "limit": args.limit,
                "per_source": args.per_source if args.examples == "mixed" else None,
                "dev": len(dev),
                "default": {"layer": default.layer, "tune": default.tune},
                "config": config.model_dump(),  # the default's (frozen ones: 3 epochs)
                "results": results,
                "targets": {"classifier_vs_tfidf": target(gain)},
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
