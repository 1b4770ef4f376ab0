"""How well the detox model rewrites implicitly offensive Korean: chrF, BLEU, offensive rate.

Data: ../shared/data/detox/kda_ko.csv (``neutral,implicit``), split by neutral sentence
(10% held out; a held-out sentence's rewrites were never trained on). The detox model
(``train/detox_model.py``: embedded Gemma 3 270M + LoRA, instruction tuning implicit ->
neutral, greedy decoding) trains on ``--train-pairs`` training pairs and rewrites
``--test-pairs`` held-out implicit sentences.

Measured on the same held-out inputs, next to two baselines from the same run:

- **copy**: the input unchanged;
- **lexicon**: the input with every word removed that contains an entry (2+ characters) of
  ../shared/data/lexicon/korean_bad_words.txt (explicit profanity only, by design of K/DA
  the implicit kind mostly survives it);
- the references themselves (the neutral sentences), for the classifier's floor.

Metrics: chrF and BLEU against the neutral references (``eval/overlap.py``), and the offensive rate,
the share flagged by an offensiveness classifier trained in the same run
(``eval/offensiveness.py``: BEEP! labeled train, Curse-detection, and the K/DA pairs of the
*training* split, ``--per-source`` of each; frozen Gemma features, cached under
``--cache-dir``); its accuracy and F1 on BEEP! dev (../shared/data/eval) are printed too.

The detox rewrites go through transformers, or with ``--engine llamacpp`` through llama.cpp
(the embedded Q4_K_M GGUF with the adapter as a GGUF LoRA, ``train/gguf_lora.py``; several
times faster on a CPU, see bench/detox_rewrite_speed.py). ``--keep B:R,...`` adds a row per
content-keeping decoding (``train/keep_content.py``: copy bias B, minimum length R x the
input's tokens) next to the model's own. ``--model-dir`` evaluates a model trained before
(``rolecall detox train``, or this bench's ``--save-model``) instead of training one. The
last line's targets are issue #17's, on the model's own decoding: chrF >= copying's and
offensive rate <= 0.4 x copying's.

Usage: python bench/detox_quality.py [--train-pairs 300] [--eval-limit 100] [--epochs 2]
       [--lr 2e-4] [--batch-size 4] [--per-source 1500] [--cache-dir runs/bench-features]
       [--engine transformers|llamacpp] [--keep 1:0,0:0.8] [--model-dir DIR | --save-model DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch

from rolecall.eval.offensiveness import beep_examples, offensive_rate, offensiveness_examples
from rolecall.eval.overlap import bleu, chrf
from rolecall.formats.kda import read_kda_csv
from rolecall.train import jobs
from rolecall.train.backbones.features import Features
from rolecall.train.backbones.load import load_backbone
from rolecall.train.classifier import Classifier, ClassifierSettings
from rolecall.train.detox_model import DetoxModel, DetoxSettings, split_pairs
from rolecall.train.gguf_lora import LlamaCppRewriter
from rolecall.train.keep_content import KeepContent
from rolecall.train.loop import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def lexicon_words() -> list[str]:
    """The lexicon's entries of 2+ characters."""
    lines = (DATA / "lexicon" / "korean_bad_words.txt").read_text(encoding="utf-8").splitlines()
    return [w.strip() for w in lines if len(w.strip()) >= 2]


def lexicon_baseline(texts: list[str]) -> list[str]:
    words = lexicon_words()

    def clean(text: str) -> str:
        return " ".join(t for t in text.split() if not any(w in t for w in words))

    return [clean(t) for t in texts]


def targets(results: dict) -> dict:
    """Issue #17's: chrF at least copying's, offensive rate at most 0.4 x copying's."""
    copy, model = results["input (copy)"], results["detox model"]
    chrf_ratio = model["chrf"] / copy["chrf"] if copy["chrf"] else 0.0
    offensive_ratio = (
        model["offensive_rate"] / copy["offensive_rate"] if copy["offensive_rate"] else 0.0
    )
    return {
        "chrf_vs_copy": {
            "value": round(chrf_ratio, 3),
            "target": ">= 1.0",
            "met": chrf_ratio >= 1.0,
        },
        "offensive_rate_vs_copy": {
            "value": round(offensive_ratio, 3),
            "target": "<= 0.4",
            "met": offensive_ratio <= 0.4,
        },
    }


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-pairs", type=int, default=300)
    parser.add_argument(
        "--eval-limit",
        "--test-pairs",
        dest="test_pairs",
        type=int,
        default=100,
        help="held-out sentences rewritten",
    )
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--per-source", type=int, default=1500)
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "runs" / "bench-features")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--engine",
        choices=("transformers", "llamacpp"),
        default="transformers",
        help="of the rewriting: llamacpp = the embedded GGUF + the adapter as a GGUF LoRA",
    )
    parser.add_argument(
        "--keep",
        type=keep_list,
        default=[],
        help="more decodings, COPY_BIAS:MIN_LENGTH_RATIO,... (e.g. 1:0,0:0.8)",
    )
    parser.add_argument("--model-dir", type=Path, help="a trained detox model: no training")
    parser.add_argument("--save-model", type=Path, help="keep the trained model here")
    return parser.parse_args()


def keep_list(text: str) -> list[KeepContent]:
    try:
        return [
            KeepContent(float(b), float(r))
            for b, r in (item.split(":") for item in text.split(",") if item.strip())
        ]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give COPY_BIAS:MIN_LENGTH_RATIO,...") from None


def detox_model(args: argparse.Namespace) -> tuple[DetoxModel, dict, Path]:
    """The model (trained here by ``jobs.detox``, as ``rolecall detox train`` does, unless
    ``--model-dir``), its training facts, and the directory it is saved in (llama.cpp reads
    its adapter there)."""
    if args.model_dir:
        return DetoxModel.load(args.model_dir), {"model_dir": str(args.model_dir)}, args.model_dir
    started = time.perf_counter()
    saved = args.save_model or Path(tempfile.mkdtemp(prefix="detox-bench-"))
    model, metrics = jobs.detox(
        jobs.Job(DATA / "detox" / "kda_ko.csv", saved, checkpoint_every=None),
        "embedded",
        DetoxSettings(max_length=192, response_max=96),
        TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed),
        test_share=0.1,  # the split main() measures on: the same seed, the same pairs
        limit=args.train_pairs,
        eval_limit=0,  # main() rewrites and scores, with more systems beside it
    )
    facts = {
        "train_pairs": metrics["train_pairs"],
        "epochs": args.epochs,
        "lr": args.lr,
        "batch_size": args.batch_size,
        "steps": metrics["steps"],
        "first_loss": metrics["first_loss"],
        "last_loss": metrics["last_loss"],
        "train_seconds": round(time.perf_counter() - started, 1),
    }
    return model, facts, saved


def rewrite_all(model, saved: Path, engine: str, inputs: list[str], keep) -> list[str]:
    if engine == "llamacpp":
        rewriter = LlamaCppRewriter(saved, n_threads=2, keep=keep)
        return list(rewriter.rewrites(inputs, progress=True))
    return model.rewrite(inputs, progress=True, keep=keep)


def main() -> None:
    args = arguments()
    torch.set_num_threads(2)
    pairs = read_kda_csv(DATA / "detox" / "kda_ko.csv")
    train, test = split_pairs(pairs, 0.1, args.seed)
    test = test[: args.test_pairs]
    source = (
        f"from {args.model_dir}"
        if args.model_dir
        else f"on the first {args.train_pairs} training pairs"
    )
    print(
        f"K/DA: {len(pairs)} pairs -> train {len(train)}, held-out {len(test)} used; "
        f"detox model {source}",
        flush=True,
    )

    # the judge: an offensiveness classifier on frozen Gemma features
    started = time.perf_counter()
    backbone = load_backbone("embedded")
    examples = offensiveness_examples(DATA, train, args.per_source, args.seed)
    classifier = Classifier.create(
        backbone,
        # the head alone, as this bench measured it before the TF-IDF half became the
        # default (2026-11-28), so that its numbers stay comparable
        ClassifierSettings(max_length=128, response_max=120, lexical=False),
        Features(backbone, args.cache_dir),
        seed=args.seed,
    )
    classifier.fit(examples, TrainConfig(epochs=5, batch_size=32, lr=1e-3, seed=args.seed))
    dev = beep_examples(DATA / "eval" / "beep_labeled_dev.tsv")
    judge = {
        "train_examples": len(examples),
        **{f"beep_dev_{k}": round(v, 3) for k, v in classifier.evaluate(dev).items()},
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(f"offensiveness classifier: {judge}", flush=True)

    # the detox model
    model, facts, saved = detox_model(args)
    inputs, references = [p.toxic for p in test], [p.neutral for p in test]
    started = time.perf_counter()
    rewrites = rewrite_all(model, saved, args.engine, inputs, None)
    rewrite_seconds = time.perf_counter() - started
    own = KeepContent.of(model.settings)
    print(f"detox model ({own.label()}): {rewrite_seconds:.0f} s", flush=True)
    variants = {}
    for keep in args.keep:
        variants[f"detox model ({keep.label()})"] = rewrite_all(
            model, saved, args.engine, inputs, keep
        )
        print(f"{keep.label()}: done", flush=True)

    systems = {
        "input (copy)": inputs,
        "lexicon deletion": lexicon_baseline(inputs),
        "detox model": rewrites,
        **variants,
        "reference (neutral)": references,
    }
    results = {
        name: {
            "chrf": round(chrf(outputs, references), 2),
            "bleu": round(bleu(outputs, references), 2),
            "offensive_rate": round(offensive_rate(classifier, outputs), 3),
        }
        for name, outputs in systems.items()
    }
    print(f"\n{'system':52s}{'chrF':>8s}{'BLEU':>8s}{'offensive':>12s}")
    for name, row in results.items():
        print(f"{name:52s}{row['chrf']:8.2f}{row['bleu']:8.2f}{row['offensive_rate']:12.3f}")
    before = results["input (copy)"]["offensive_rate"]
    after = results["detox model"]["offensive_rate"]
    print(
        f"detox outputs less offensive than the inputs: {'yes' if after < before else 'NO'}"
        f" ({before:.3f} -> {after:.3f})"
    )
    for source, output in list(zip(inputs, rewrites))[:5]:
        print(f"  {source}\n  -> {output}")
    print(
        json.dumps(
            {
                "bench": "detox_quality",
                **facts,
                "test_pairs": len(test),
                "decoding": own.label(),
                "engine": args.engine,
                "rewrite_seconds": round(rewrite_seconds, 1),
                "judge": judge,
                "results": results,
                "targets": targets(results),
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
