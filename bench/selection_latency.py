"""Latency of response selection on this CPU: retrieve, then rerank, then check answerability.

What a bot does per user turn (NAACL 2022, section 4.3), timed one turn at a time through
``rolecall.retrieval.selection.ResponseSelector``:

1. **retrieve**: run the context through the backbone once, the poly-encoder's context
   head, FAISS top-``depth`` over the candidate index, re-score them with the full poly
   attention, keep the top ``k``;
2. **rerank**: the reranker scores the ``k`` candidates. With the default ``attention``
   interaction it reads the *same* context states (no second backbone pass) and the
   candidates' states, computed once for the whole index (``prepare``, like the index);
   ``--interaction joint`` times the cross-encoder proper (one backbone pass per pair);
3. **MC dropout** (optional): ``passes`` reranker-head passes with dropout on, for the
   best candidate's confidence (mean - variance), from the same states;
4. **PPL** (the other detector): the LM perplexity of the best candidate given the context,
   on the embedded model through llama.cpp (``llamacpp:embedded`` scoring).

Candidates: the unique answers of ../shared/data/neutral/chatbot_data.csv, then KorSTS
sentences up to 10,000. Models: a poly-encoder and a reranker trained briefly on
chatbot Q->A pairs over the backbone named (default: the embedded Gemma 3 270M, frozen;
training states are cached under --cache-dir). Every timed turn runs its context through
the backbone afresh (the selector never caches contexts). Queries: held-out questions,
never seen in training. Quality next to speed: on the timed queries, how often the
selected answer is the gold one (top-1 over all 10,000 candidates), poly-encoder alone vs
retrieve + rerank.

Baseline in the same run: BM25 on Kiwi morphemes over the same candidates (what a system
without neural selection would pay per turn); ratios are printed against it, and p50/p95
of every part. Target: retrieve + rerank p50 < 150 ms.

Usage: python bench/selection_latency.py [--queries 100] [--k 10] [--passes 10]
       [--interaction attention|joint] [--backbone embedded|PATH]
       [--cache-dir runs/bench-features]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import time
from pathlib import Path

import bm25s
import numpy as np
import torch

from rolecall.llm.opening import open_llm
from rolecall.records import Example, Turn
from rolecall.serve.candidates import build_candidate_index
from rolecall.serve.selection import ResponseSelector
from rolecall.serve.unanswerable import response_perplexity
from rolecall.slang.index import BM25_PARAMS, search_tokens
from rolecall.train.backbones.base import EMBEDDED
from rolecall.train.backbones.load import load_backbone
from rolecall.train.data import context_text, split_by, unique_candidates
from rolecall.train.loop import TrainConfig
from rolecall.train.reranker import Reranker, RerankerSettings
from rolecall.train.retriever import RetrieverSettings, fit_retriever

ROOT = Path(__file__).resolve().parents[1]
NEUTRAL = ROOT.parent / "shared" / "data" / "neutral"
MIN_CANDIDATES = 10_000


def read_data() -> tuple[list[tuple[str, str]], list[str]]:
    with (NEUTRAL / "chatbot_data.csv").open(encoding="utf-8-sig", newline="") as file:
        pairs = [(r["Q"].strip(), r["A"].strip()) for r in csv.DictReader(file)]
    pairs = [(q, a) for q, a in pairs if q and a]
    extra = []
    with (NEUTRAL / "korsts_train.tsv").open(encoding="utf-8", newline="") as file:
        for row in csv.DictReader(file, delimiter="\t", quoting=csv.QUOTE_NONE):
            extra += [row["sentence1"] or "", row["sentence2"] or ""]
    candidates = unique_candidates([a for _, a in pairs] + extra)
    return pairs, candidates[:MIN_CANDIDATES]  # every answer, then KorSTS up to 10,000


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(1000 * statistics.median(ordered), 2),
        "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 2),
    }


def timed(function, queries: list[str]) -> tuple[list[float], list]:
    times, results = [], []
    for query in queries:
        started = time.perf_counter()
        results.append(function(query))
        times.append(time.perf_counter() - started)
    return times, results


def context(question: str) -> str:
    return context_text([Turn(role="user", text=question)])


def train_models(backbone, train_pairs, args):
    """A poly-encoder and a reranker on (question, answer) pairs."""
    config = TrainConfig(epochs=1, batch_size=32, max_steps=args.steps, seed=0)
    retriever, _ = fit_retriever(
        [(context(q), a) for q, a in train_pairs],
        backbone,
        RetrieverSettings(kind="poly"),
        config,
        progress=True,
        cache_dir=args.cache_dir,
    )
    settings = RerankerSettings(interaction=args.interaction, max_length=128, response_max=48)
    reranker = Reranker.create(backbone, settings, retriever.features)  # one cache in memory
    examples = [
        Example(history=[Turn(role="user", text=q)], response=a, label="positive")
        for q, a in train_pairs[: args.rerank_examples]
    ]
    reranker.fit(examples, TrainConfig(epochs=1, batch_size=16, seed=0), progress=True)
    return retriever, reranker


def bm25_search(candidates: list[str]):
    model = bm25s.BM25(**BM25_PARAMS)
    model.index(search_tokens(candidates), show_progress=False)
    vocab = model.vocab_dict

    def search(query: str, k: int) -> list[int]:
        ids = [vocab[t] for t in search_tokens([query])[0] if t in vocab]
        scores = model.get_scores_from_ids(ids) if ids else np.zeros(len(candidates))
        return list(np.argsort(-scores)[:k])

    return search


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=10, help="candidates the reranker scores")
    parser.add_argument("--passes", type=int, default=10, help="MC dropout passes")
    parser.add_argument("--steps", type=int, default=300, help="retriever training steps")
    parser.add_argument(
        "--rerank-examples",
        type=int,
        default=5000,
        help="training examples of the reranker (joint: each one is 8 backbone passes; use ~100)",
    )
    parser.add_argument("--interaction", default="attention", choices=["attention", "joint"])
    parser.add_argument("--backbone", default=EMBEDDED)
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "runs" / "bench-features")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    torch.set_num_threads(2)
    pairs, candidates = read_data()
    assert len(candidates) == MIN_CANDIDATES, len(candidates)
    train, test = split_by(pairs, key=lambda pair: pair[0], held_out=0.1, seed=0)
    held_out = [(context(q), a) for q, a in test][: args.queries]
    if len(held_out) < args.queries:
        raise SystemExit(f"only {len(held_out)} held-out questions: lower --queries")
    queries = [q for q, _ in held_out]
    warm = [context(q) for q, _ in train[:3]]
    print(f"{len(candidates):,} candidates; {len(queries)} held-out queries", flush=True)

    backbone = load_backbone(args.backbone)
    retriever, reranker = train_models(backbone, train, args)
    if reranker.joint:  # pairs straight through the backbone, never from the cache
        reranker.features = None
    index = build_candidate_index(retriever, candidates, args.cache_dir / "latency-index")
    selector = ResponseSelector(index, reranker, k=args.k)
    selector.prepare()  # the candidates' reranker states: once, like the index
    scorer = open_llm("llamacpp:embedded", ":memory:")  # every call asked, none cached

    bm25 = bm25_search(candidates)
    for query in warm:  # warm-up: lazy imports, first-call allocations
        selector.select(query, mc_passes=args.passes)
        bm25(query, args.k)
    results = {}
    bm25_times, _ = timed(lambda q: bm25(q, args.k), queries)
    results["bm25 top-k (baseline)"] = percentiles(bm25_times)
    times, retrieved = timed(selector.retrieve, queries)
    results["retrieve (poly-encoder + FAISS)"] = percentiles(times)
    times, turns = timed(selector.select, queries)
    results["retrieve + rerank"] = percentiles(times)
    times, _ = timed(lambda q: selector.select(q, mc_passes=args.passes), queries)
    results[f"retrieve + rerank + MC dropout ({args.passes})"] = percentiles(times)
    best = {q: turn.best.text for q, turn in zip(queries, turns, strict=True)}
    times, _ = timed(lambda q: response_perplexity(scorer, [q], [best[q]]), queries)
    results["PPL of the best (llamacpp:embedded)"] = percentiles(times)

    gold = [a for _, a in held_out]
    quality = {
        "poly top-1 = gold": np.mean([r[0].text == g for r, g in zip(retrieved, gold)]),
        f"gold in poly top-{args.k}": np.mean(
            [any(s.text == g for s in r) for r, g in zip(retrieved, gold)]
        ),
        "rerank top-1 = gold": np.mean([t.best.text == g for t, g in zip(turns, gold)]),
    }
    base = results["bm25 top-k (baseline)"]["p50_ms"]
    print(f"\n{'part':40s}{'p50 ms':>10s}{'p95 ms':>10s}{'p50 / bm25':>12s}")
    for name, value in results.items():
        print(
            f"{name:40s}{value['p50_ms']:10.1f}{value['p95_ms']:10.1f}"
            f"{value['p50_ms'] / base:12.1f}"
        )
    p50 = results["retrieve + rerank"]["p50_ms"]
    print(
        f"retrieve + rerank p50 = {p50:.1f} ms (target < 150 ms), k = {args.k}, "
        f"backbone {backbone.source} ({'frozen' if backbone.frozen else 'trainable'}), "
        f"reranker {reranker.settings.interaction}, one context pass per turn: "
        f"{selector.shared}"
    )
    for name, value in quality.items():
        print(f"{name:40s}{value:10.3f}")
    print(
        json.dumps(
            {
                "bench": "selection_latency",
                "candidates": len(candidates),
                "queries": len(queries),
                "k": args.k,
                "passes": args.passes,
                "interaction": reranker.settings.interaction,
                "backbone": backbone.source,
                "results": results,
                "quality": {k: round(float(v), 4) for k, v in quality.items()},
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
