"""How well the retrievers pick a chatbot's answer: bi- and poly-encoder vs BM25. One run.

Data: the Q->A pairs of ../shared/data/neutral/chatbot_data.csv (columns Q, A, label;
~11.8k Korean chit-chat pairs). Split with ``data.split_by`` keyed by the question (10%
held out, so no held-out question was trained on). Contexts are the questions as a
one-turn user history (``data.context_text``), candidates the answers.

Metric: Hits@1/K for K = 20 and 100 on the held-out part (the NAACL 2022 paper's measure):
each held-out question's gold answer among K-1 other answers drawn at random (fixed seed)
from the held-out pool of unique answers; ties count against the gold
(``rolecall.eval.retrieval``). Chance is 1/K.

Models, all scored on the very same candidates:

- BM25 on Kiwi content morphemes (``retrieval.slang.search_tokens`` and bm25s, the slang
  index's settings), the question against the answer texts; IDF over the held-out pool.
  Questions and answers share few words ("3박4일 놀러가고 싶다" -> "여행은 언제나 좋죠."),
  so this lexical baseline is weak by nature, and zero scores tie (against the gold);
- a bi-encoder and a poly-encoder (``train/retriever.py``) trained with in-batch
  negatives on the training pairs, over the backbone named in the output: by default the
  embedded Gemma 3 270M, frozen, its hidden states cached under ``--cache-dir`` (the
  first run computes ~20k texts on a CPU, with progress bars; later runs read the cache);
- the reranker (``train/reranker.py``, the default ``attention`` interaction for a frozen
  backbone) trained on the same pairs against 7 random negatives each, scoring the same
  K candidates (a reranker normally only sees the retriever's top few; here it ranks the
  same random K, so its numbers compare with the retrievers').

Usage: python bench/retrieval_quality.py [--backbone embedded|PATH] [--limit N]
       [--epochs 5] [--batch-size 32] [--lr 1e-3] [--cache-dir runs/bench-features]
       [--kinds bi,poly,reranker] [--seed 0]
The last line printed is a JSON object with every number.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import time
from pathlib import Path

import bm25s
import numpy as np
import torch

from rolecall.eval.retrieval import HitsEvaluator
from rolecall.records import Example, Turn
from rolecall.retrieval.slang import BM25_PARAMS, search_tokens
from rolecall.train.backbone import EMBEDDED, load_backbone
from rolecall.train.data import context_text, split_by, unique_candidates
from rolecall.train.features import Features
from rolecall.train.loop import TrainConfig
from rolecall.train.reranker import Reranker, RerankerSettings
from rolecall.train.retriever import RetrieverSettings, fit_retriever

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "neutral" / "chatbot_data.csv"
KS = (20, 100)


def read_pairs(path: Path, limit: int | None, seed: int) -> list[tuple[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as file:
        pairs = [(row["Q"].strip(), row["A"].strip()) for row in csv.DictReader(file)]
    pairs = [(q, a) for q, a in pairs if q and a]
    if limit and limit < len(pairs):
        keep = sorted(random.Random(seed).sample(range(len(pairs)), limit))
        pairs = [pairs[i] for i in keep]  # a random subset: the file is sorted by Q
    return pairs


def context(question: str) -> str:
    return context_text([Turn(role="user", text=question)])


def bm25_scores(questions: list[str], pool: list[str]) -> np.ndarray:
    """[questions, pool] BM25 scores of each question against every pool answer."""
    model = bm25s.BM25(**BM25_PARAMS)
    model.index(search_tokens(pool), show_progress=False)
    vocab = model.vocab_dict
    rows = []
    for tokens in search_tokens(questions):
        ids = [vocab[t] for t in tokens if t in vocab]
        rows.append(model.get_scores_from_ids(ids) if ids else np.zeros(len(pool)))
    return np.asarray(rows, dtype=float)


def describe_backbone(name: str, backbone) -> str:
    what = "Gemma 3 270M (embedded)" if name == EMBEDDED else name
    state = "frozen" if backbone.frozen else "trainable"
    return f"{what}, {state}, hidden {backbone.hidden_size}"


def train_and_score(
    kind: str, backbone, train_pairs, contexts, pool, gold, evaluator, args
) -> dict:
    """Train one retriever on the training pairs; its Hits@1/K on the held-out part."""
    started = time.perf_counter()
    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed)
    retriever, history = fit_retriever(
        train_pairs,
        backbone,
        RetrieverSettings(kind=kind),
        config,
        progress=True,
        cache_dir=args.cache_dir if backbone.frozen else None,
    )
    trained = time.perf_counter() - started
    retriever.encode_contexts(contexts, progress=True)  # held-out features, with a bar
    retriever.encode_candidates(pool, progress=True)

    def score(queries, index):
        return retriever.score(queries, [[pool[j] for j in row] for row in index])

    return {
        **evaluator(score, contexts, pool, gold),
        "train_seconds": round(trained, 1),
        "seconds": round(time.perf_counter() - started, 1),
        "steps": history["steps"],
        "first_loss": round(history["first_loss"], 4),
        "last_loss": round(history["last_loss"], 4),
    }


def rerank_and_score(backbone, train, contexts, pool, gold, evaluator, args) -> dict:
    """Train a reranker on the training pairs; its Hits@1/K on the held-out part."""
    started = time.perf_counter()
    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed)
    features = Features(
        backbone, args.cache_dir if backbone.frozen else None, batch_size=args.batch_size
    )
    reranker = Reranker.create(backbone, RerankerSettings(), features)
    examples = [
        Example(history=[Turn(role="user", text=q)], response=a, label="positive") for q, a in train
    ]
    history = reranker.fit(examples, config, progress=True)
    trained = time.perf_counter() - started

    def score(queries, index):
        return reranker.score(queries, [[pool[j] for j in row] for row in index], 256)

    return {
        **evaluator(score, contexts, pool, gold),
        "train_seconds": round(trained, 1),
        "seconds": round(time.perf_counter() - started, 1),
        "steps": history["steps"],
        "interaction": reranker.settings.interaction,
        "first_loss": round(history["first_loss"], 4),
        "last_loss": round(history["last_loss"], 4),
    }


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default=EMBEDDED)
    parser.add_argument(
        "--train-backbone",
        action="store_true",
        help="fine-tune the backbone too (GPU); frozen by default",
    )
    parser.add_argument("--limit", type=int, default=None, help="use only N pairs")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "runs" / "bench-features")
    parser.add_argument("--kinds", default="bi,poly,reranker")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA)
    return parser.parse_args()


def main() -> None:
    args = arguments()
    torch.set_num_threads(2)
    pairs = read_pairs(args.data, args.limit, args.seed)
    train, test = split_by(pairs, key=lambda pair: pair[0], held_out=0.1, seed=args.seed)
    pool = unique_candidates(a for _, a in test)
    position = {answer: number for number, answer in enumerate(pool)}
    gold = [position[a] for _, a in test]
    ks = tuple(k for k in KS if k <= len(pool))
    evaluator = HitsEvaluator(ks=ks, seed=args.seed)
    print(
        f"data: {args.data.name}: {len(pairs)} pairs -> train {len(train)}, held-out "
        f"{len(test)} (pool of {len(pool)} unique answers); Hits@1/K for K in {ks}",
        flush=True,
    )
    results: dict[str, dict] = {"random": {f"hits@1/{k}": 1 / k for k in ks}}
    started = time.perf_counter()
    bm25 = bm25_scores([q for q, _ in test], pool)
    results["bm25 (kiwi morphemes, Q vs A)"] = {
        **evaluator(lambda _, index: np.take_along_axis(bm25, index, axis=1), test, pool, gold),
        "seconds": round(time.perf_counter() - started, 2),
    }

    started = time.perf_counter()
    backbone = load_backbone(args.backbone, frozen=not args.train_backbone)
    name = describe_backbone(args.backbone, backbone)
    print(f"backbone: {name} (loaded in {time.perf_counter() - started:.1f} s)", flush=True)
    train_pairs = [(context(q), a) for q, a in train]
    contexts = [context(q) for q, _ in test]
    for kind in args.kinds.split(","):
        if kind == "reranker":
            scored = rerank_and_score(backbone, train, contexts, pool, gold, evaluator, args)
            results[f"reranker ({scored['interaction']})"] = scored
            continue
        results[f"{kind}-encoder"] = train_and_score(
            kind, backbone, train_pairs, contexts, pool, gold, evaluator, args
        )

    print(f"\nHits@1/K on {len(test)} held-out questions; backbone: {name}")
    print(f"{'model':32s}" + "".join(f"{f'hits@1/{k}':>12s}" for k in ks))
    for model, metrics in results.items():
        print(f"{model:32s}" + "".join(f"{metrics[f'hits@1/{k}']:12.3f}" for k in ks))
    print(
        json.dumps(
            {
                "bench": "retrieval_quality",
                "data": args.data.name,
                "backbone": name,
                "pairs": len(pairs),
                "train": len(train),
                "held_out": len(test),
                "pool": len(pool),
                "epochs": args.epochs,
                "seed": args.seed,
                "results": results,
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
