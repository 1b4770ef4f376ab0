"""The offensiveness classifier against the classic baseline on BEEP! dev (issue #17 item 5).

Examples are made the README's way (``rolecall detox offensiveness-data``: BEEP! train,
Curse-detection and the K/DA training pairs, at most ``--per-source`` of each, seeded)
and every model below trains on that very same list, in the same run:

- **tfidf**: character n-gram TF-IDF + logistic regression (``train/baselines.py``, the
  ``chars`` view), the baseline;
- **classifier, layer L**: ``rolecall train classifier``'s model (``train/classifier.py``,
  default settings and TrainConfig) over the frozen embedded Gemma, once with the whole
  model (the old default, last layer) and once with each ``--layers`` cut (``load_backbone
  (layer=N)``);
- **hybrid, layer L**: one logistic regression over the TF-IDF features and the
  classifier's own pooled pair vectors side by side (standardised), the same examples.

Scored on BEEP! dev (``eval/beep_labeled_dev.tsv``, 471 comments, offensive = ``hate``
offensive or hate): macro-F1 over the two classes, and prediction throughput in texts a
second (the classifier's from raw text: its states computed afresh, nothing cached).

Usage: python bench/classifier_quality.py [--per-source 1000] [--layers 7,18]
       [--epochs 3] [--seed 0] [--cache-dir runs/bench-features]
The last line printed is a JSON object with every number and the targets
``classifier_vs_tfidf`` (the best classifier's macro-F1 minus TF-IDF's, ">= 0.05") and
``hybrid_vs_tfidf`` (the best hybrid's, the same target).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from rolecall.eval.offensiveness import beep_examples, offensiveness_examples
from rolecall.formats.kda import read_kda_csv
from rolecall.records import Example
from rolecall.train.backbone import EMBEDDED, load_backbone
from rolecall.train.baselines import TfidfModel, TfidfSettings
from rolecall.train.classifier import OUT_OF_BOUNDS, Classifier
from rolecall.train.detox_model import split_pairs
from rolecall.train.features import Features
from rolecall.train.loop import TrainConfig
from rolecall.train.pairs import as_context, encode_pairs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
NAMES = ["in", "offensive"]


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


def hybrid_f1(tfidf: TfidfModel, train_texts, train_vectors, train_y, dev_texts, dev_vectors):
    """Logistic regression over [TF-IDF features, standardised neural vectors]: dev labels."""
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression

    mean, std = train_vectors.mean(0), train_vectors.std(0) + 1e-6
    scale = 1.0 / np.sqrt(train_vectors.shape[1])  # the dense block's rows about unit length

    def matrix(texts, vectors):
        dense = sparse.csr_matrix((vectors - mean) / std * scale)
        return sparse.hstack([tfidf._matrix(list(texts)), dense]).tocsr()

    model = LogisticRegression(
        C=tfidf.settings.c, max_iter=3000, class_weight="balanced", random_state=0
    )
    model.fit(matrix(train_texts, train_vectors), train_y)
    return model.predict(matrix(dev_texts, dev_vectors))


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-source", type=int, default=1000, help="examples per corpus")
    parser.add_argument("--layers", default="7,18", help="embedded layers kept, one model each")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "runs" / "bench-features")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    torch.set_num_threads(2)
    kda = split_pairs(read_kda_csv(args.data_dir / "detox" / "kda_ko.csv"), 0.1, args.seed)[0]
    examples = offensiveness_examples(args.data_dir, kda, args.per_source, args.seed)
    dev = beep_examples(args.data_dir / "eval" / "beep_labeled_dev.tsv")
    texts, y = [e.response.strip() for e in examples], labels_of(examples)
    dev_texts, dev_y = [e.response.strip() for e in dev], labels_of(dev)
    print(
        f"examples (detox offensiveness-data, {args.per_source} per source): {len(examples)}, "
        f"{sum(y)} offensive; BEEP! dev {len(dev)}, {sum(dev_y)} offensive",
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

    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, seed=args.seed)
    for layer in (int(n) for n in args.layers.split(",")):
        backbone = load_backbone(EMBEDDED, frozen=True, layer=layer)
        name = f"classifier, layer {layer}" + (" (whole)" if backbone.layer is None else "")
        model = Classifier.for_training(backbone, None, config, args.cache_dir)
        history, seconds = timed(lambda: model.fit(examples, config, progress=True))
        cached = model.features
        model.features = Features(backbone, None, batch_size=args.batch_size)  # from raw text
        proba, predict_seconds = timed(
            lambda: model.predict_proba([[] for _ in dev], dev_texts)[:, OUT_OF_BOUNDS]
        )
        predicted = (proba >= model.settings.threshold).astype(int)
        results[name] = {
            "macro_f1": round(macro_f1(dev_y, predicted), 4),
            "train_seconds": round(seconds, 1),
            "texts_per_second": round(len(dev) / predict_seconds, 2),
            "last_loss": round(history["last_loss"], 4),
        }
        print(f"{name}: {results[name]}", flush=True)
        empty = as_context([], model.settings.max_turns)  # as the classifier reads []
        vectors = [
            encode_pairs(backbone, features, [empty] * len(inputs), inputs, model.settings).numpy()
            for features, inputs in ((cached, texts), (model.features, dev_texts))
        ]
        predicted = hybrid_f1(tfidf, texts, vectors[0], y, dev_texts, vectors[1])
        results[f"hybrid tfidf + layer {layer}"] = {
            "macro_f1": round(macro_f1(dev_y, predicted), 4)
        }
        print(f"hybrid: {results[f'hybrid tfidf + layer {layer}']}", flush=True)

    print(f"\n{'model':32s}{'macro-F1':>10s}{'texts/s':>10s}")
    for name, row in results.items():
        speed = f"{row['texts_per_second']:10.1f}" if "texts_per_second" in row else ""
        print(f"{name:32s}{row['macro_f1']:10.3f}{speed}")
    tfidf_f1 = results["tfidf"]["macro_f1"]
    pure = {n: r for n, r in results.items() if n.startswith("classifier")}
    hybrid = {n: r for n, r in results.items() if n.startswith("hybrid")}
    best = max(pure, key=lambda n: pure[n]["macro_f1"])
    best_hybrid = max(hybrid, key=lambda n: hybrid[n]["macro_f1"])
    print(
        json.dumps(
            {
                "bench": "classifier_quality",
                "examples": len(examples),
                "per_source": args.per_source,
                "dev": len(dev),
                "epochs": args.epochs,
                "seed": args.seed,
                "results": results,
                "best": best,
                "best_hybrid": best_hybrid,
                "targets": {
                    "classifier_vs_tfidf": target(pure[best]["macro_f1"] - tfidf_f1),
                    "hybrid_vs_tfidf": target(hybrid[best_hybrid]["macro_f1"] - tfidf_f1),
                },
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
