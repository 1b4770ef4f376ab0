"""The offensiveness classifier against the classic baseline on BEEP! dev (issue #17 item 5).

Every model below trains on the very same examples, in the same run:

- **tfidf**: character n-gram TF-IDF + logistic regression (``train/baselines.py``, the
  ``chars`` view), the baseline;
- **classifier, default**: what ``rolecall train classifier EXAMPLES`` makes on the
  embedded Gemma (``EMBEDDED_DEFAULTS["classifier"]``: cut after layer 7, its top 4
  layers tuned with the head; ``classifier_training``: one pass), with its TF-IDF half
  (``ClassifierSettings.lexical``, on by default since 2026-11-28): P(offensive) the mean
  of the head's and character TF-IDF + LR's (the ``tfidf`` row's model), at 0.5 (a late
  fusion: the learned features and the character n-grams, issue #32's "stacked with the
  TF-IDF features"); its texts/s counts both halves;
- **classifier head alone (--no-lexical)**: the same trained head without its TF-IDF half
  (what ``--no-lexical`` makes, and the default before 2026-11-28; before that date this
  bench printed it as ``classifier, default`` and the fusion as ``default + tfidf (mean
  P)``);
- **classifier, frozen layer L** (``--frozen-layers``): the head alone over the frozen
  Gemma cut after layer L (``--frozen --layer L``: three passes; 18 is the old default,
  the whole model);
- **classifier, sentence encoder** / **classifier, e5** (``--encoders sentence,e5``;
  ``--sentence`` is ``--encoders sentence``): the head over the bundled sentence encoder's
  (USE-m) or multilingual-e5-small's vector of the comment (``--backbone sentence`` /
  ``e5``: frozen, three passes);
- **tfidf + sentence view** / **tfidf + e5 view** / **tfidf + both encoders** (with
  ``--encoders``): the ``tfidf`` row's model with the encoders' vectors beside its
  character n-grams (``TfidfSettings.views``), the encoders side by side;

The examples (``--examples``): ``beep``, BEEP! train (``slang/beep_labeled_train.tsv``,
news comments like the dev set; ``--limit`` draws a seeded sample), or ``mixed``, the
README's ``rolecall detox offensiveness-data`` (BEEP! train, Curse-detection and the K/DA
training pairs, at most ``--per-source`` of each, seeded).

Scored on BEEP! dev (``eval/beep_labeled_dev.tsv``, 471 comments, offensive = ``hate``
offensive or hate) and, a second domain (``--curse N``), on a seeded sample of N
Curse-detection comments (community sites; 1 = curse) that the training examples do not
hold: macro-F1 over the two classes, and prediction throughput in texts a second on BEEP!
dev (the classifier's from raw text: its states computed afresh, nothing cached). Each seed
(``--seeds``) draws its own sample and initialisation; every number is the mean over the
seeds with its min-max spread.

Usage: python bench/classifier_quality.py [--examples beep|mixed] [--limit N]
       [--per-source 1000] [--frozen-layers 7,18] [--encoders sentence,e5] [--skip-gemma]
       [--seeds 0,1,2] [--curse 1000] [--epochs N] [--cache-dir DIR]
The last line printed is a JSON object with every number and the targets (issue #32): the
default classifier no worse than TF-IDF on BEEP! dev on the seeds' mean
(``default_vs_tfidf_beep_dev`` >= 0) and its prediction at least 20 texts a second
(``default_texts_per_second``); with ``--encoders``, the best encoder row's gain over
TF-IDF (``best_encoder_vs_tfidf_beep_dev``, issue #49). ``--skip-gemma`` leaves out the
embedded model's rows (and their targets): the encoders against TF-IDF alone.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from rolecall.eval.offensiveness import beep_examples, curse_examples, offensiveness_examples
from rolecall.formats.kda import read_kda_csv
from rolecall.records import Example
from rolecall.train.backbones.base import E5, EMBEDDED, EMBEDDED_DEFAULTS, SENTENCE
from rolecall.train.backbones.features import Features
from rolecall.train.baselines import TfidfModel, TfidfSettings
from rolecall.train.classifier import Classifier
from rolecall.train.detox_model import split_pairs
from rolecall.train.jobs import BackboneChoice, classifier_config
from rolecall.train.out_of_bounds import OUT_OF_BOUNDS
from rolecall.train.settings import ClassifierSettings

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
NAMES = ["in", "offensive"]
DEFAULT = "classifier, default"
HEAD_ALONE = "classifier head alone (--no-lexical)"
HEAD_SETTINGS = ClassifierSettings(lexical=False)  # the frozen and encoder rows: heads alone
ENCODERS = {SENTENCE: ("classifier, sentence encoder", "tfidf + sentence view"),
            E5: ("classifier, e5", "tfidf + e5 view")}  # fmt: skip
BOTH = "tfidf + both encoders"


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


def scores(proba_out, threshold: float, gold: Sequence[int]) -> float:
    return round(macro_f1(gold, [int(p >= threshold) for p in proba_out]), 4)


def classifier_row(model: Classifier, examples, domains, config) -> dict:
    """Train ``model`` on ``examples``, then score each domain from raw text (its
    ``predicted_row``)."""
    history, seconds = timed(lambda: model.fit(examples, config, progress=True))
    model.features = Features(model.backbone, None, batch_size=config.batch_size)
    row = {"train_seconds": round(seconds, 1), "last_loss": round(history["last_loss"], 4)}
    return {**row, **predicted_row(model, domains)}


def predicted_row(model: Classifier, domains) -> dict:
    """A trained ``model``'s macro-F1 on each domain from raw text, and its texts/s on
    BEEP! dev."""
    row = {}
    for domain, (texts, gold) in domains.items():
        forget_e5()
        proba, seconds = timed(
            lambda texts=texts: model.predict_proba([[] for _ in texts], texts)[:, OUT_OF_BOUNDS]
        )
        row[f"{domain}_macro_f1"] = scores(proba, model.settings.threshold, gold)
        if domain == "beep_dev":
            row["texts_per_second"] = round(len(texts) / seconds, 2)
    return row


def forget_e5() -> None:
    """Drop e5's memoised vectors, so that a timed prediction encodes its texts afresh."""
    from rolecall.retrieval.e5_vectors import shared_e5

    shared_e5().forget()


def tfidf_row(examples, domains, seed: int, views: Sequence[str] = ("chars",)) -> dict:
    texts, y = [e.response.strip() for e in examples], labels_of(examples)
    tfidf = TfidfModel(TfidfSettings(labels=NAMES, seed=seed, views=list(views)))
    _, seconds = timed(lambda: tfidf.fit(texts, [NAMES[v] for v in y]))
    row = {"train_seconds": round(seconds, 1)}
    for domain, (domain_texts, gold) in domains.items():
        forget_e5()
        proba, predict_seconds = timed(lambda t=domain_texts: tfidf.predict_proba(t))
        row[f"{domain}_macro_f1"] = scores(proba[:, 1], 0.5, gold)
        if domain == "beep_dev":
            row["texts_per_second"] = round(len(domain_texts) / predict_seconds, 1)
    return row


def curse_held_out(data_dir: Path, examples: Sequence[Example], size: int, seed: int):
    """Curse-detection comments (community sites, not news) that ``examples`` do not hold:
    a second domain, a seeded sample of ``size``."""
    seen = {e.response.strip() for e in examples}
    rows = [
        e
        for e in curse_examples(data_dir / "slang" / "curse_detection.txt")
        if e.response.strip() not in seen
    ]
    rows = random.Random(seed).sample(rows, min(size, len(rows)))
    return [e.response.strip() for e in rows], labels_of(rows)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", default="beep", choices=["beep", "mixed"])
    parser.add_argument("--limit", type=int, help="beep: a seeded sample of N comments")
    parser.add_argument("--per-source", type=int, default=1000, help="mixed: per corpus")
    parser.add_argument(
        "--frozen-layers", default="", help="frozen classifiers, one per layer (e.g. 7,18)"
    )
    parser.add_argument(
        "--encoders",
        default="",
        help="also heads over these bundled encoders and TF-IDF with their views "
        "(sentence, e5; comma-separated)",
    )
    parser.add_argument("--sentence", action="store_true", help="--encoders sentence")
    parser.add_argument(
        "--skip-gemma", action="store_true", help="leave out the embedded model's rows"
    )
    parser.add_argument("--seeds", default="0,1,2", help="one run per seed, comma-separated")
    parser.add_argument(
        "--curse", type=int, default=1000, help="Curse-detection comments scored (0: none)"
    )
    parser.add_argument(
        "--epochs", type=int, default=None, help="passes (default: rolecall train's; a smoke run)"
    )
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "runs" / "bench-features")
    return parser.parse_args()


def one_seed(args, seed: int, dev) -> tuple[dict[str, dict], int]:
    """Every model's row for one seed (its sample, split and initialisation)."""
    examples = training_examples(args.data_dir, args.examples, args.limit, args.per_source, seed)
    domains = {"beep_dev": ([e.response.strip() for e in dev], labels_of(dev))}
    if args.curse:
        domains["curse"] = curse_held_out(args.data_dir, examples, args.curse, seed)
    print(
        f"seed {seed}: examples ({args.examples}) {len(examples)}, "
        f"{sum(labels_of(examples))} offensive; "
        + ", ".join(f"{d} {len(g)} ({sum(g)} offensive)" for d, (_, g) in domains.items()),
        flush=True,
    )
    rows = {}
    rows["tfidf"] = tfidf_row(examples, domains, seed)
    print(f"tfidf: {rows['tfidf']}", flush=True)
    if not args.skip_gemma:
        choice = BackboneChoice(EMBEDDED)  # the policy's default: layer 7, its top 4 tuned
        config = classifier_config(choice, args.epochs, seed=seed)
        model = Classifier.for_training(
            choice.load("classifier"), ClassifierSettings(), config, None
        )
        rows[DEFAULT] = classifier_row(model, examples, domains, config)
        print(f"{DEFAULT}: {rows[DEFAULT]}", flush=True)
        model.lexical = None  # the same head without its TF-IDF half
        rows[HEAD_ALONE] = predicted_row(model, domains)
        print(f"{HEAD_ALONE}: {rows[HEAD_ALONE]}", flush=True)
    layers = [] if args.skip_gemma else args.frozen_layers.split(",")
    for layer in (int(n) for n in layers if n.strip()):
        frozen_choice = BackboneChoice(EMBEDDED, frozen=True, layer=layer)
        frozen = classifier_config(frozen_choice, args.epochs, seed=seed)
        model = Classifier.for_training(
            frozen_choice.load("classifier"), HEAD_SETTINGS, frozen, args.cache_dir
        )
        name = f"classifier, frozen layer {layer}"
        rows[name] = classifier_row(model, examples, domains, frozen)
        print(f"{name}: {rows[name]}", flush=True)
    for encoder in encoders_of(args):
        head, with_view = ENCODERS[encoder]
        choice = BackboneChoice(encoder)
        frozen = classifier_config(choice, args.epochs, seed=seed)
        model = Classifier.for_training(
            choice.load("classifier"), HEAD_SETTINGS, frozen, args.cache_dir
        )
        rows[head] = classifier_row(model, examples, domains, frozen)
        rows[with_view] = tfidf_row(examples, domains, seed, ("chars", encoder))
        for name in (head, with_view):
            print(f"{name}: {rows[name]}", flush=True)
    if len(encoders_of(args)) == len(ENCODERS):
        rows[BOTH] = tfidf_row(examples, domains, seed, ("chars", *ENCODERS))
        print(f"{BOTH}: {rows[BOTH]}", flush=True)
    return rows, len(examples)


def encoders_of(args) -> list[str]:
    """The bundled encoders asked for (``--encoders``, ``--sentence``), in ``ENCODERS``
    order."""
    asked = {n.strip() for n in args.encoders.split(",") if n.strip()}
    asked |= {SENTENCE} if args.sentence else set()
    unknown = asked - set(ENCODERS)
    if unknown:
        raise SystemExit(f"--encoders takes {', '.join(ENCODERS)}, not {', '.join(unknown)}")
    return [name for name in ENCODERS if name in asked]


def summary(per_seed: list[dict[str, dict]]) -> dict[str, dict]:
    """Per model and number: the mean over seeds and the (min, max) spread."""
    out: dict[str, dict] = {}
    for name in per_seed[0]:
        out[name] = {}
        for key in per_seed[0][name]:
            values = [rows[name][key] for rows in per_seed]
            out[name][key] = round(statistics.fmean(values), 4)
            out[name][f"{key}_range"] = [min(values), max(values)]
    return out


def main() -> None:
    args = arguments()
    torch.set_num_threads(2)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    dev = beep_examples(args.data_dir / "eval" / "beep_labeled_dev.tsv")
    per_seed, sizes = [], []
    for seed in seeds:
        rows, size = one_seed(args, seed, dev)
        per_seed.append(rows)
        sizes.append(size)
    results = summary(per_seed)
    domains = [k[: -len("_macro_f1")] for k in per_seed[0]["tfidf"] if k.endswith("_macro_f1")]
    print(f"\nmean over seeds {seeds} (min-max)")
    print(f"{'model':34s}" + "".join(f"{d + ' F1':>24s}" for d in domains) + f"{'texts/s':>10s}")
    for name, row in results.items():
        cells = "".join(
            f"{row[d + '_macro_f1']:8.3f} ({row[d + '_macro_f1_range'][0]:.3f}-"
            f"{row[d + '_macro_f1_range'][1]:.3f})"
            for d in domains
        )
        print(f"{name:34s}{cells}{row['texts_per_second']:10.1f}")
    default = EMBEDDED_DEFAULTS["classifier"]
    tfidf_f1 = {d: results["tfidf"][f"{d}_macro_f1"] for d in domains}
    gains, targets = {}, {}
    if DEFAULT in results:
        gains = {d: results[DEFAULT][f"{d}_macro_f1"] - tfidf_f1[d] for d in domains}
        targets["default_vs_tfidf_beep_dev"] = target(gains["beep_dev"], ">= 0.0")
        speed = results[DEFAULT]["texts_per_second"]
        targets["default_texts_per_second"] = target(speed, ">= 20")
        # for information: the head alone, the default before its TF-IDF half
        head_gain = results[HEAD_ALONE]["beep_dev_macro_f1"] - tfidf_f1["beep_dev"]
        targets["head_alone_vs_tfidf_beep_dev"] = target(head_gain, ">= 0.0")
    encoder_rows = [name for pair in ENCODERS.values() for name in pair] + [BOTH]
    encoder_rows = [name for name in encoder_rows if name in results]
    if encoder_rows:
        best = max(encoder_rows, key=lambda name: results[name]["beep_dev_macro_f1"])
        gain = results[best]["beep_dev_macro_f1"] - tfidf_f1["beep_dev"]
        targets["best_encoder_vs_tfidf_beep_dev"] = {**target(gain, ">= 0.0"), "row": best}
    print(
        json.dumps(
            {
                "bench": "classifier_quality",
                "examples": args.examples,
                "seeds": seeds,
                "n_examples": sizes,
                "limit": args.limit,
                "per_source": args.per_source if args.examples == "mixed" else None,
                "dev": len(dev),
                "default": {"layer": default.layer, "tune": default.tune},
                "config": classifier_config(
                    BackboneChoice(EMBEDDED), args.epochs, seed=seeds[0]
                ).model_dump(),
                "gains_over_tfidf": {d: round(g, 4) for d, g in gains.items()},
                "results": results,
                "per_seed": per_seed,
                "targets": targets,
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
