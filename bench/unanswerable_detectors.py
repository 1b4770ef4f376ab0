"""Unanswerable-context detectors on the demo's held-out contexts (issue #32): which one
tells a fitting reply from the retriever's best wrong one.

Reads a ``rolecall demo`` run directory (``--demo``, default ``runs/demo``): its bot's
retriever, candidate index and reranker, its held-out dialogues' examples
(``bot/held_out.jsonl``) and its detector (``unanswerable_method`` in ``bot/bot.json``). The
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
  the seed's items (the scales the demo's bot keeps), summed;
- **e5**, **e5+reranker**, **cosine+e5+reranker** (issue #49): the same with
  multilingual-e5-small's cosine of the context (``query:``) and the reply (``passage:``),
  alone, in place of the sentence encoder's, and beside it (the last is not a method a bot
  serves).

Target: the demo's served detector (``cosine+reranker``, or whichever the bot names)
ROC AUC >= 0.7 on the mean over the seeds.

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

from rolecall.serve.candidates import CandidateIndex
from rolecall.serve.lexical import LexicalScorer
from rolecall.serve.selection import last_user_text
from rolecall.serve.unanswerable import (
    METHODS,
    CosineDetector,
    E5CosineDetector,
    RerankerDetector,
    SummedDetector,
    compare_detectors,
    detector_named,
    index_hard_negatives,
    validation_items,
)
from rolecall.train.data import read_examples, selection_pairs
from rolecall.train.reranker import Reranker
from rolecall.train.retriever import Retriever

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.7


class Bm25Detector:
    """BM25 of each context's last user turn against its reply (the replies scored are the
    documents); low = unanswerable."""

    name = "bm25"
    higher_is_unanswerable = False

    def scores(self, contexts: list[str], replies: list[str]) -> np.ndarray:
        documents = list(dict.fromkeys(replies))
        row = {text: i for i, text in enumerate(documents)}
        queries = LexicalScorer(documents).scores_many([last_user_text(c) for c in contexts])
        return np.array([q[row[reply]] for q, reply in zip(queries, replies)])


def both_cosines(reranker: Reranker) -> SummedDetector:
    """The two encoders' cosines beside the reranker (not a method a bot serves)."""
    return SummedDetector([CosineDetector(), E5CosineDetector(), RerankerDetector(reranker)])


def aucs(items: list[dict], detectors: list) -> dict[str, float]:
    """Each detector's ROC AUC on ``items``, as calibration computes it (a summed detector
    takes its scales from them)."""
    return {name: r["roc_auc"] for name, r in compare_detectors(detectors, items).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, default=ROOT / "runs" / "demo")
    parser.add_argument("--seeds", default="0,1,2,3,4,5")
    args = parser.parse_args()
    torch.set_num_threads(2)
    bot = args.demo / "bot"
    if not (bot / "reranker").is_dir() or not (bot / "held_out.jsonl").is_file():
        raise SystemExit(
            f"{args.demo} holds no demo bot: run 'rolecall demo --out {args.demo}' first"
        )
    started = time.perf_counter()
    features = args.demo / "features"
    retriever = Retriever.load(bot / "retriever", features)
    index = CandidateIndex.load(bot / "retriever" / "candidates", retriever)
    reranker = Reranker.load(bot / "reranker", features)
    settings = json.loads((bot / "bot.json").read_text(encoding="utf-8"))
    served = {"method": settings.get("unanswerable_method") or "mc_dropout"}
    pairs = selection_pairs(read_examples(bot / "held_out.jsonl"))

    seeds = [int(s) for s in args.seeds.split(",")]
    per_seed = {}
    for seed in seeds:
        items = validation_items(pairs, index_hard_negatives(index), 0.5, seed)
        detectors = [Bm25Detector(), *(detector_named(m, reranker, passes=10) for m in METHODS)]
        detectors.append(both_cosines(reranker))
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
    print(f"{'detector':28s}{'mean':>8s}{'min':>8s}{'max':>8s}")
    for name, row in summary.items():
        print(f"{name:28s}{row['mean']:8.3f}{row['min']:8.3f}{row['max']:8.3f}")
    method = served.get("method", "mc_dropout")
    value = summary[method]["mean"]
    best_e5 = max(
        ("e5", "e5+reranker", both_cosines(reranker).name), key=lambda n: summary[n]["mean"]
    )
    e5_gain = summary[best_e5]["mean"] - value
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
                    },
                    # issue #49: does an e5 detector beat the served one (for information)
                    "best_e5_vs_served": {
                        "value": round(e5_gain, 4),
                        "row": best_e5,
                        "target": ">= 0.0",
                        "met": e5_gain >= 0.0,
                    },
                },
            }
        )
    )


if __name__ == "__main__":
    main()
