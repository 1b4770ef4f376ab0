"""Unanswerable-context detectors on the demo's held-out contexts (issue #32): which one
tells a fitting reply from the retriever's best wrong one.

Reads a ``rolecall demo`` run directory (``--demo``, default ``runs/demo``): its bot's
retriever, candidate index and reranker, and its held-out dialogues' examples. The
validation set is the paper's (Appendix C, ``serve/unanswerable.py``): every held-out
context with its gold reply, half of them (picked by the seed) with the gold swapped for
the index's best other candidate. Each seed picks another half, so the mean over
``--seeds`` is not the luck of one draw (the demo calibrates on its own seed's draw).

Detectors, each scored by ROC AUC (1 = unanswerable):

- **bm25** (the classic baseline): BM25 of the last user turn against the reply (Kiwi
  morphemes, ``serve/lexical.py``; the replies of the set are the documents);
- **mc_dropout** (the paper's): the reranker's MC-dropout confidence, 10 passes;
- **cosine**: the bundled sentence encoder's cosine of context text and reply, untrained;
- **cosine+reranker**: the cosine and the reranker's plain score, each standardised over
  the seed's items (the scales the demo's bot keeps), summed.

Target: the demo's served detector (``cosine+reranker``, or whichever the demo chose:
``bot/metrics.json``) ROC AUC >= 0.7 on the mean over the seeds.

Usage: python bench/unanswerable_detectors.py [--demo runs/demo] [--seeds 0,1,2,3,4,5]
The last line printed is a JSON object with every number and the targets.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from rolecall.eval.thresholds import roc_auc
from rolecall.serve.candidates import CandidateIndex
from rolecall.serve.lexical import LexicalScorer
from rolecall.serve.selection import last_user_text
from rolecall.serve.unanswerable import METHODS, detector_named, validation_items
from rolecall.train.data import read_examples, selection_pairs
from rolecall.train.reranker import Reranker
from rolecall.train.retriever import Retriever

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.7


def bm25_scores(items: list[dict]) -> np.ndarray:
    """BM25 of each item's last user turn against its reply; high = answerable."""
    replies = list(dict.fromkeys(item["response"] for item in items))
    row = {text: i for i, text in enumerate(replies)}
    scorer = LexicalScorer(replies)
    queries = scorer.scores_many([last_user_text(item["context"]) for item in items])
    return np.array([q[row[item["response"]]] for q, item in zip(queries, items)])


def aucs(items: list[dict], detectors: dict) -> dict[str, float]:
    labels = [item["label"] for item in items]
    contexts = [item["context"] for item in items]
    replies = [item["response"] for item in items]
    found = {"bm25": roc_auc(labels, -bm25_scores(items))}
    for name, detector in detectors.items():
        fit = getattr(detector, "fit_scores", None)
        scores = fit(contexts, replies) if fit else detector.scores(contexts, replies)
        sign = 1.0 if detector.higher_is_unanswerable else -1.0
        found[name] = roc_auc(labels, sign * np.asarray(scores, dtype=float))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, default=ROOT / "runs" / "demo")
    parser.add_argument("--seeds", default="0,1,2,3,4,5")
    args = parser.parse_args()
    torch.set_num_threads(2)
    bot = args.demo / "bot"
    if not (bot / "reranker").is_dir() or not (args.demo / "held_out_examples.jsonl").is_file():
        raise SystemExit(
            f"{args.demo} holds no demo bot: run 'rolecall demo --out {args.demo}' first"
        )
    started = time.perf_counter()
    features = args.demo / "features"
    retriever = Retriever.load(bot / "retriever", features)
    index = CandidateIndex.load(bot / "retriever" / "candidates", retriever)
    reranker = Reranker.load(bot / "reranker", features)
    served = json.loads((bot / "metrics.json").read_text(encoding="utf-8"))["unanswerable"]
    pairs = selection_pairs(read_examples(args.demo / "held_out_examples.jsonl"))

    def hard_negatives(context: str, gold: str, k: int) -> list[str]:
        return [t for _, t, _ in index.search([context], k + 1)[0] if t != gold][:k]

    seeds = [int(s) for s in args.seeds.split(",")]
    per_seed = {}
    for seed in seeds:
        items = validation_items(pairs, hard_negatives, 0.5, seed)
        detectors = {m: detector_named(m, reranker, passes=10) for m in METHODS}
        per_seed[seed] = aucs(items, detectors)
        print(f"seed {seed}: " + "  ".join(f"{k} {v:.3f}" for k, v in per_seed[seed].items()))
    summary = {
        name: {
            "mean": statistics.mean(per_seed[s][name] for s in seeds),
            "min": min(per_seed[s][name] for s in seeds),
            "max": max(per_seed[s][name] for s in seeds),
        }
        for name in per_seed[seeds[0]]
    }
    print(f"{len(pairs)} held-out contexts, half swapped per seed; ROC AUC over {len(seeds)} seeds")
    print(f"{'detector':20s}{'mean':>8s}{'min':>8s}{'max':>8s}")
    for name, row in summary.items():
        print(f"{name:20s}{row['mean']:8.3f}{row['min']:8.3f}{row['max']:8.3f}")
    method = served.get("method", "mc_dropout")
    value = summary[method]["mean"]
    print(
        json.dumps(
            {
                "bench": "unanswerable_detectors",
                "demo": str(args.demo),
                "contexts": len(pairs),
                "served": method,
                "seeds": seeds,
                "per_seed": per_seed,
                "summary": summary,
                "seconds": round(time.perf_counter() - started, 1),
                "targets": {
                    "unanswerable_roc_auc": {
                        "value": round(value, 4),
                        "method": method,
                        "target": f">= {TARGET}",
                        "met": value >= TARGET,
                    }
                },
            }
        )
    )


if __name__ == "__main__":
    main()
