"""Unlikelihood vs MLE on the embedded Gemma + LoRA: perplexity of positives and negatives.

The NAACL 2022 paper's Table 8: training the generator with unlikelihood on out-of-bounds
responses raises their perplexity far more than the in-bounds responses'. Here on real
Korean data from ../shared/data/detox/kda_ko.csv: **positives** are the neutral sentences,
**negatives** their implicitly offensive rewrites (category "offensive"), as the system
turn after an empty history. Split by neutral sentence (a held-out neutral sentence and
its rewrites were never trained on).

Three models, each scored on the same held-out examples: the base model (LoRA adapters at
their zero start, exactly the base), **MLE** (positives only, alpha = 0) and **MLE+UL**
(positives by MLE, negatives by unlikelihood, alpha = 1). Printed: PPL(pos), PPL(neg) and
neg/pos for each; MLE+UL's ratio should exceed MLE's.

Speed: the training step time (forward, loss, backward, optimiser step) of MLE+UL vs MLE on
the very same batches of positives and negatives, alternating the two so that machine noise
hits both alike; with alpha = 0 the negatives' tokens are forwarded but add no loss. Target:
MLE+UL / MLE <= 1.15.

Usage: python bench/ul_vs_mle.py [--train-sentences 120] [--test-sentences 40]
       [--epochs 2] [--batch-size 8] [--lr 1e-3] [--timing-batches 6]
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

import torch

from rolecall.llm.hf import load_hf_model
from rolecall.records import Example
from rolecall.train.data import split_by
from rolecall.train.generator import Generator, GeneratorSettings
from rolecall.train.loop import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
KDA = ROOT.parent / "shared" / "data" / "detox" / "kda_ko.csv"


def read_groups() -> list[tuple[str, list[str]]]:
    """(neutral, [implicit rewrites]) in file order."""
    groups: dict[str, list[str]] = defaultdict(list)
    with KDA.open(encoding="utf-8", newline="") as file:
        for row in csv.DictReader(file):
            neutral, implicit = row["neutral"].strip(), row["implicit"].strip()
            if neutral and implicit and implicit != neutral:
                groups[neutral].append(implicit)
    return list(groups.items())


def examples_of(groups: list[tuple[str, list[str]]]) -> list[Example]:
    out = []
    for neutral, rewrites in groups:
        out.append(Example(history=[], response=neutral, label="positive", dialogue_id=neutral))
        out += [
            Example(
                history=[], response=r, label="negative", category="offensive", dialogue_id=neutral
            )
            for r in rewrites
        ]
    return out


def step_seconds(generator: Generator, batches: list[list[Example]], lr: float) -> list[float]:
    """Seconds of one full training step per batch (adapters restored afterwards)."""
    state = {k: v.clone() for k, v in generator.model.state_dict().items() if "lora" in k}
    params = [p for p in generator.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr)
    generator.model.train()
    times = []
    for batch in batches:
        started = time.perf_counter()
        loss = generator.loss(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - started)
    generator.model.load_state_dict(state, strict=False)
    return times


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-sentences", type=int, default=120)
    parser.add_argument("--test-sentences", type=int, default=40)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--timing-batches", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--timing-only",
        action="store_true",
        help="skip the three trainings; time the steps on fresh adapters",
    )
    return parser.parse_args()


def main() -> None:
    args = arguments()
    torch.set_num_threads(2)
    train_groups, test_groups = split_by(
        read_groups(), key=lambda g: g[0], held_out=0.2, seed=args.seed
    )
    train = examples_of(train_groups[: args.train_sentences])
    test = examples_of(test_groups[: args.test_sentences])
    count = {label: sum(e.label == label for e in train) for label in ("positive", "negative")}
    print(
        f"train: {count['positive']} positives, {count['negative']} negatives; held-out: "
        f"{sum(e.label == 'positive' for e in test)} / "
        f"{sum(e.label == 'negative' for e in test)}",
        flush=True,
    )

    started = time.perf_counter()
    base_model, tokenizer = load_hf_model("embedded")
    print(
        f"embedded Gemma 3 270M loaded through transformers in "
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )
    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed)
    settings = GeneratorSettings(max_length=128, response_max=96)
    results, generators = {}, {}
    runs = (("base", None), ("MLE", 0.0), ("MLE+UL", args.alpha))
    for name, alpha in runs[-1:] if args.timing_only else runs:
        model = copy.deepcopy(base_model)
        generator = Generator.create(
            (model, tokenizer), settings.model_copy(update={"alpha": alpha or 0.0}), seed=args.seed
        )
        row: dict = {}
        if args.timing_only:
            generators[name] = generator
            continue
        if alpha is not None:
            started = time.perf_counter()
            history = generator.fit(train, config, progress=True)
            row.update(
                steps=history["steps"],
                train_seconds=round(time.perf_counter() - started, 1),
                first_loss=round(history["first_loss"], 3),
                last_loss=round(history["last_loss"], 3),
            )
        row.update({k: round(v, 3) for k, v in generator.perplexity(test, progress=True).items()})
        results[name] = row
        generators[name] = generator
        print(f"{name}: {row}", flush=True)

    # step time on the same batches, MLE and MLE+UL alternating (both on the MLE+UL model's
    # adapters, restored after each measurement)
    ul = generators["MLE+UL"]
    batches = [
        train[i : i + args.batch_size]
        for i in range(0, args.batch_size * args.timing_batches, args.batch_size)
    ]
    mle_loss, ul_loss = type(ul.loss_fn)(0.0), ul.loss_fn
    timings: dict[str, list[float]] = {"MLE": [], "MLE+UL": []}
    step_seconds(ul, batches[:1], args.lr)  # warm-up
    for round_number in range(2):
        for name, loss in (
            (("MLE", mle_loss), ("MLE+UL", ul_loss))
            if round_number == 0
            else (("MLE+UL", ul_loss), ("MLE", mle_loss))
        ):
            ul.loss_fn = loss
            timings[name] += step_seconds(ul, batches, args.lr)
    ul.loss_fn = ul_loss
    median = {name: statistics.median(values) for name, values in timings.items()}

    if results:
        print(f"\n{'model':10s}{'PPL(pos)':>12s}{'PPL(neg)':>12s}{'neg/pos':>10s}")
        for name, row in results.items():
            print(
                f"{name:10s}{row['ppl_positive']:12.2f}{row['ppl_negative']:12.2f}"
                f"{row['ppl_ratio']:10.3f}"
            )
        better = results["MLE+UL"]["ppl_ratio"] > results["MLE"]["ppl_ratio"]
        print(f"MLE+UL neg/pos ratio exceeds MLE's: {'yes' if better else 'NO'}")
    ratio = median["MLE+UL"] / median["MLE"]
    print(
        f"training step, median of {len(timings['MLE'])} on the same batches: MLE "
        f"{median['MLE']:.3f} s, MLE+UL {median['MLE+UL']:.3f} s, ratio {ratio:.3f} "
        f"(target <= 1.15)"
    )
    print(
        json.dumps(
            {
                "bench": "ul_vs_mle",
                "train_examples": len(train),
                "test_examples": len(test),
                "epochs": args.epochs,
                "lr": args.lr,
                "alpha": args.alpha,
                "results": results,
                "step_seconds": {k: round(v, 4) for k, v in median.items()},
                "step_ratio": round(ratio, 4),
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
