"""Response selection on held-out data: BM25 vs the retriever vs retrieve + rerank. One run.

Two data sets, each split so that no held-out context was trained on:

- **chatbot**: the Q->A pairs of ../shared/data/neutral/chatbot_data.csv (~11.8k Korean
  chit-chat pairs), split by question (``data.split_by``, 10% held out); the context is
  the question as a one-turn user history;
- **carecall**: the shipped role-specified example (``examples/carecall``: 39 care-call
  dialogues written for the role spec), every in-bounds system turn with a history as a
  (context, response) pair, split **by dialogue** (``--carecall-test-share``, seeded).
  Only ~170 training pairs: ``--carecall-train`` chooses what the models train on,
  ``carecall`` (those pairs alone, the default: what ``rolecall train retriever`` and the
  demo do with a bot's own examples) or ``carecall+chatbot`` (with the chatbot training
  pairs added; on the sentence encoder that lowers the bot's first stage from 0.522 to
  0.488 Hits@1/20 over seeds 0-4, docs/models.md).

Metric: Hits@1/K (the NAACL 2022 paper's): each held-out context's gold response among K-1
others drawn at random (fixed seed) from the held-out pool of unique responses; ties count
against the gold (``rolecall.eval.retrieval``). K = 20 and 100 where the pool allows.

Models, scored on the very same candidate rows:

- **BM25** on Kiwi content morphemes (``serve/lexical.py``: bm25s, the slang index's
  tokens), the text of the context's last ``--bm25-turns`` turns against the responses;
  IDF over the pool;
- **retriever**: the poly-encoder (``train/retriever.py``, the bot's retriever) trained
  with in-batch negatives over the frozen backbone's cached states; on the sentence
  encoder the residual head with the encoder's dense top tuned (``rolecall train``'s
  default; ``--tune-layers 0`` keeps it frozen);
- **retrieve + rerank**, evaluated the way the bot uses it: the retriever ranks the K
  candidates, the reranker reorders its top ``--top`` (the bot's ``k``, 10), the rest keep
  the retriever's order. The reranker (``train/reranker.py``, attention interaction over
  frozen states) is trained on the same pairs against ``--negatives`` negatives of which
  ``--hard`` are the retriever's own best wrong candidates among the training responses
  (mined in batches from a candidate index of them, ``negatives.Miner``), the rest random;
  ``--hard 0`` trains on random negatives only (the old default). Also printed: the
  reranker alone on all K (its own ranking power) and the sum of the two models' scores
  over the top ``--top`` (``fused``), for information; and the retriever's and BM25's
  standardised scores summed over all K (``retriever + bm25``, a hybrid, BM25's z capped
  at ``serve/lexical.LEXICAL_CAP`` as the bot caps it; ``(fused, uncapped)`` without the
  cap), and with ``--lexical-weights`` the same sum at other weights of BM25's (the bot's
  ``lexical_weight``).

Targets (issue 17 item 2):
- ``rerank_vs_retriever_chatbot``, ``rerank_vs_retriever_carecall``: retrieve + rerank
  Hits@1/20 - retriever Hits@1/20 >= +0.05;
- ``retriever_vs_bm25_carecall``: retriever Hits@1/20 - BM25 Hits@1/20 >= +0.10;
  ``bot_first_stage_vs_bm25_carecall``: the same for ``retriever + bm25 (fused)``, what
  the bot's first stage does by default (``serve/lexical.py``, ``lexical_weight`` 1).
Target (issue 32): ``retriever_chatbot``: the retriever's Hits@1/20 on chatbot_data >= 0.475.
With ``--pair e5`` (beside ``--backbone sentence``), a second retriever on that backbone and
the two retrievers' standardised scores summed (``both retrievers``), alone and fused with
BM25 as the bot fuses; issue 49's targets for a pair of backbones: ``pair_retriever_chatbot``
>= 0.57 and ``pair_first_stage_vs_bm25_carecall`` >= +0.13.
On the sentence encoder, in-batch negatives cost nothing once the vectors are cached: the
residual head's batch size and epochs (``--batch-size 512 --epochs 20``) were chosen on a
dev split of the training questions (``--seeds 1`` on a CSV of the training rows only), not
on the held-out ones (docs/models.md).

Features are cached under ``--cache-dir`` (the first run computes ~20k texts on a CPU,
~20 minutes on 2 cores; later runs read the cache).

Usage: python bench/retrieval_quality.py [--data chatbot,carecall] [--limit N]
       [--epochs 5] [--reranker-epochs 5] [--batch-size 32] [--lr 1e-3] [--top 10]
       [--negatives 7] [--hard 0] [--carecall-train carecall] [--seeds 0,1,2,3,4]
       [--max-turns 10] [--bm25-turns 1] [--lexical-weights 0.25,0.5]
       [--layer N] [--tune-layers N --backbone-lr 1e-3] [--cache-dir runs/bench-features]
       [--backbone sentence --pair e5]
The last line printed is a JSON object with every number and the targets.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from rolecall.eval.retrieval import HitsEvaluator, hits_at
from rolecall.examples import examples_from_dialogues, marked_in_bounds
from rolecall.jsonl import read_jsonl
from rolecall.records import Dialogue, Example, Turn
from rolecall.serve.candidates import build_candidate_index
from rolecall.serve.lexical import LexicalScorer, fuse, standardised
from rolecall.slang.fusion import RRF_K
from rolecall.train.backbones.base import EMBEDDED
from rolecall.train.data import context_text, split_by, unique_candidates
from rolecall.train.jobs import BackboneChoice, retriever_config
from rolecall.train.loop import TrainConfig
from rolecall.train.negatives import Miner
from rolecall.train.reranker import Reranker, RerankerSettings
from rolecall.train.retriever import RetrieverSettings, fit_retriever
from rolecall.train.settings import RERANKER_TRAINING, RETRIEVER_TRAINING, retriever_kind

ROOT = Path(__file__).resolve().parents[1]
CHATBOT = ROOT.parent / "shared" / "data" / "neutral" / "chatbot_data.csv"
CARECALL = ROOT / "examples" / "carecall" / "dialogues.jsonl"
KS = (20, 100)
TARGET_RERANK, TARGET_BM25 = 0.05, 0.10
TARGET_CHATBOT = 0.475  # issue 32: the chatbot_data retriever, Hits@1/20
PAIR_BM25, PAIR_CHATBOT = 0.13, 0.57  # issue 49: the first stage over BM25; chatbot_data


@dataclass
class Pair:
    history: list[Turn]
    response: str
    max_turns: int = 10

    @property
    def context(self) -> str:
        return context_text(self.history, self.max_turns)

    def query(self, turns: int) -> str:
        return " ".join(t.text for t in self.history[-turns:])


@dataclass
class Task:
    name: str
    train: list[Pair]
    test: list[Pair]


def chatbot_pairs(path: Path, limit: int | None, seed: int) -> list[Pair]:
    with path.open(encoding="utf-8-sig", newline="") as file:
        rows = [(row["Q"].strip(), row["A"].strip()) for row in csv.DictReader(file)]
    rows = [(q, a) for q, a in rows if q and a]
    if limit and limit < len(rows):
        keep = sorted(random.Random(seed).sample(range(len(rows)), limit))
        rows = [rows[i] for i in keep]  # a random subset: the file is sorted by Q
    return [Pair([Turn(role="user", text=q)], a) for q, a in rows]


def context(question: str) -> str:
    """A chatbot_data question as a one-turn user history (also bench/feature_layers.py's)."""
    return context_text([Turn(role="user", text=question)])


def chatbot_task(args) -> Task:
    pairs = chatbot_pairs(args.chatbot, args.limit, args.seed)
    train, test = split_by(pairs, key=lambda p: p.history[0].text, held_out=0.1, seed=args.seed)
    return Task("chatbot", train, test)


def carecall_task(args, chatbot_train: list[Pair]) -> Task:
    dialogues = list(read_jsonl(args.carecall, Dialogue))
    ids = sorted(d.id for d in dialogues)
    random.Random(args.seed).shuffle(ids)
    test_ids = set(ids[: max(1, round(len(ids) * args.carecall_test_share))])
    train, test = [], []
    for example in examples_from_dialogues(marked_in_bounds(d) for d in dialogues):
        if example.history:  # the opening greeting has no context to select by
            pair = Pair(list(example.history), example.response.strip(), args.max_turns)
            (test if example.dialogue_id in test_ids else train).append(pair)
    if args.carecall_train == "carecall+chatbot":
        train = train + chatbot_train
    return Task("carecall", train, test)


def bm25_scores(queries: list[str], pool: list[str]) -> np.ndarray:
    """[queries, pool] BM25 scores of each query against every pool response: the bot's
    own lexical scorer (``serve/lexical.py``; also bench/feature_layers.py's baseline)."""
    return LexicalScorer(pool).scores_many(queries)


def in_top(first: np.ndarray, top: int) -> np.ndarray:
    """[n, K] bool: the ``top`` best of each row by ``first`` (ties broken by position)."""
    order = np.argsort(-first, axis=1, kind="stable")[:, :top]
    mask = np.zeros(first.shape, dtype=bool)
    np.put_along_axis(mask, order, True, axis=1)
    return mask


def reordered(first: np.ndarray, second: np.ndarray, top: int) -> np.ndarray:
    """Scores that rank ``first``'s top ``top`` of each row by ``second``, above the rest
    in ``first``'s order: what the bot's retrieve + rerank does."""
    mask = in_top(first, top)
    span = np.ptp(first, axis=1, keepdims=True) + np.abs(second).max() + 1.0
    return np.where(mask, second + first.max(axis=1, keepdims=True) + 2 * span, first)


def rrf(scores: np.ndarray, k: int = RRF_K) -> np.ndarray:
    """Each row's reciprocal-rank score 1 / (k + rank), rank 1 = best (ties: the later
    column first, so that a tie never favours the gold in column 0)."""
    order = np.argsort(-scores[:, ::-1], axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, scores.shape[1] + 1)[None, :], axis=1)
    return 1.0 / (k + ranks[:, ::-1])


def run_task(task: Task, backbone, args) -> dict:
    """Every model on one task's held-out rows; returns their metrics. The retriever trains
    on a copy of ``backbone`` with its top tuned when ``--tune-layers`` says so, the
    reranker always on the frozen one."""
    pool = unique_candidates(p.response for p in task.test)
    position = {text: number for number, text in enumerate(pool)}
    gold = [position[p.response] for p in task.test]
    ks = tuple(k for k in KS if k <= len(pool))
    evaluator = HitsEvaluator(ks=ks, seed=args.seed)
    print(
        f"\n[{task.name}] train {len(task.train)} pairs, held-out {len(task.test)} "
        f"(pool of {len(pool)} unique responses); Hits@1/K for K in {ks}",
        flush=True,
    )
    contexts = [p.context for p in task.test]
    # every model scores the same K-candidate rows; each scorer records its matrix per K
    seen: dict[str, dict[int, np.ndarray]] = {}

    def recorder(name, score_rows):
        def score(_, rows):
            scores = np.asarray(score_rows(rows), dtype=float)
            seen.setdefault(name, {})[rows.shape[1]] = scores
            return scores

        return score

    results: dict[str, dict] = {"random": {f"hits@1/{k}": 1 / k for k in ks}}
    started = time.perf_counter()
    bm25 = bm25_scores([p.query(args.bm25_turns) for p in task.test], pool)
    results["bm25"] = {
        **evaluator(
            recorder("bm25", lambda rows: np.take_along_axis(bm25, rows, 1)), contexts, pool, gold
        ),
        "seconds": round(time.perf_counter() - started, 2),
    }

    if getattr(backbone, "vectors", None) is not None:  # a sentence encoder: untrained too
        started = time.perf_counter()
        last = backbone.vectors([p.history[-1].text for p in task.test])
        recent = backbone.vectors([p.query(3) for p in task.test])
        pool_vectors = backbone.vectors(pool)
        for name, queries in (("cosine, last turn", last), ("cosine, last 3 turns", recent)):
            cosine = queries @ pool_vectors.T
            results[f"{name} (zero-shot)"] = {
                **evaluator(
                    recorder(name, lambda rows, c=cosine: np.take_along_axis(c, rows, 1)),
                    contexts,
                    pool,
                    gold,
                ),
                "seconds": round(time.perf_counter() - started, 2),
            }
            results[f"{name} + bm25 (fused)"] = {
                f"hits@1/{k}": hits_at(fuse(seen[name][k], seen["bm25"][k], 1.0)) for k in ks
            }

    config = TrainConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        backbone_lr=args.backbone_lr,
        seed=args.seed,
    )
    retriever, history, trained, retriever_rows = fitted(
        task, retriever_backbone(args) or backbone, args.kind, config, contexts, pool, args
    )
    results["retriever"] = {
        **evaluator(recorder("retriever", retriever_rows), contexts, pool, gold),
        "train_seconds": round(trained, 1),
        "steps": history["steps"],
        "last_loss": round(history["last_loss"], 4),
    }

    results["retriever + bm25 (fused)"] = {
        f"hits@1/{k}": hits_at(fuse(seen["retriever"][k], seen["bm25"][k], 1.0)) for k in ks
    }
    for weight in args.lexical_weights:  # for information: the bot's lexical_weight
        results[f"retriever + bm25 (fused, w {weight:g})"] = {
            f"hits@1/{k}": hits_at(fuse(seen["retriever"][k], seen["bm25"][k], weight)) for k in ks
        }
    results["retriever + bm25 (fused, uncapped)"] = {  # the bot's fusion before LEXICAL_CAP
        f"hits@1/{k}": hits_at(fuse(seen["retriever"][k], seen["bm25"][k], 1.0, cap=None))
        for k in ks
    }
    if args.pair:
        pair_rows(task, contexts, pool, gold, evaluator, recorder, seen, results, args)
    results["retriever + bm25 (RRF)"] = {
        f"hits@1/{k}": hits_at(rrf(seen["retriever"][k]) + rrf(seen["bm25"][k])) for k in ks
    }

    started = time.perf_counter()
    train_pool = unique_candidates(p.response for p in task.train)
    mined = None
    if args.hard:
        index = build_candidate_index(retriever, train_pool, tempfile.mkdtemp(), progress=True)
        mined = Miner(
            lambda cs, n: [[t for _, t, _ in hits] for hits in index.search(cs, n)],
            progress=True,
        )
        mined.prepare([p.context for p in task.train], args.hard + 1)
    mining = time.perf_counter() - started
    settings = RerankerSettings(negatives=args.negatives, hard_count=args.hard)
    reranker = Reranker.for_training(
        backbone, settings, TrainConfig(batch_size=args.batch_size), args.cache_dir
    )
    examples = [
        Example(history=p.history, response=p.response, label="positive") for p in task.train
    ]
    rconfig = TrainConfig(
        epochs=args.reranker_epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed
    )
    rhistory = reranker.fit(examples, rconfig, mined, progress=True)
    rtrained = time.perf_counter() - started

    def reranker_rows(rows):
        return reranker.score(contexts, [[pool[j] for j in row] for row in rows], 256)

    alone = evaluator(recorder("reranker", reranker_rows), contexts, pool, gold)
    results["reranker alone (all K)"] = {
        **alone,
        "train_seconds": round(rtrained, 1),
        "mining_seconds": round(mining, 1),
        "hard": args.hard,
        "negatives": args.negatives,
        "steps": rhistory["steps"],
        "last_loss": round(rhistory["last_loss"], 4),
    }
    for name, combine in (
        (f"retrieve + rerank top {args.top}", lambda r, s: s),
        (f"retrieve + fused top {args.top}", lambda r, s: fuse(r, s, 1.0)),
    ):
        results[name] = {
            f"hits@1/{k}": hits_at(
                reordered(
                    seen["retriever"][k],
                    combine(seen["retriever"][k], seen["reranker"][k]),
                    args.top,
                )
            )
            for k in ks
        }
    print(f"{'model':32s}" + "".join(f"{f'hits@1/{k}':>12s}" for k in ks))
    for model, metrics in results.items():
        print(f"{model:32s}" + "".join(f"{metrics[f'hits@1/{k}']:12.3f}" for k in ks))
    return {
        "train": len(task.train),
        "held_out": len(task.test),
        "pool": len(pool),
        "results": results,
    }


def fitted(task, backbone, kind, config, contexts, pool, args):
    """``(retriever, history, training seconds, rows scorer)``: a retriever of ``kind``
    fitted on the task's training pairs, and a function scoring rows of pool indices for
    the held-out ``contexts``."""
    started = time.perf_counter()
    retriever, history = fit_retriever(
        [(p.context, p.response) for p in task.train],
        backbone,
        RetrieverSettings(kind=kind),
        config,
        progress=True,
        cache_dir=args.cache_dir,
    )
    trained = time.perf_counter() - started
    held = retriever.encode_contexts(contexts, progress=True)
    vectors = torch.from_numpy(retriever.encode_candidates(pool, progress=True))

    def rows_of(rows):
        return retriever.score_vectors(held, vectors[torch.from_numpy(rows)])

    return retriever, history, trained, rows_of


def pair_rows(task, contexts, pool, gold, evaluator, recorder, seen, results, args) -> None:
    """A second retriever on ``--pair``'s backbone (its own policy: what ``rolecall train
    retriever --backbone PAIR`` trains) and the two retrievers' standardised scores summed,
    alone and fused with BM25 as the bot fuses: the "pair of backbones" of issue 49."""
    choice = BackboneChoice(args.pair)
    tune = choice.resolved("retriever")[2]
    backbone = BackboneChoice(args.pair, frozen=None if tune else True).load("retriever")
    config = retriever_config(
        choice, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed
    )
    kind = retriever_kind(args.pair, None)
    _, _, trained, rows_of = fitted(task, backbone, kind, config, contexts, pool, args)
    results[f"retriever ({args.pair})"] = {
        **evaluator(recorder("pair", rows_of), contexts, pool, gold),
        "train_seconds": round(trained, 1),
    }
    ks = list(seen["pair"])
    both = {k: standardised(seen["retriever"][k]) + standardised(seen["pair"][k]) for k in ks}
    results["both retrievers (fused)"] = {f"hits@1/{k}": hits_at(both[k]) for k in ks}
    results["both retrievers + bm25 (fused)"] = {
        f"hits@1/{k}": hits_at(fuse(both[k], seen["bm25"][k], 1.0)) for k in ks
    }


def retriever_backbone(args):
    """A fresh backbone with its top ``--tune-layers`` tuned; None when frozen."""
    if not args.tune_layers:
        return None
    return BackboneChoice(args.backbone, layer=args.layer, tune_layers=args.tune_layers).load(
        "retriever"
    )


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="chatbot,carecall")
    parser.add_argument("--backbone", default=EMBEDDED)
    parser.add_argument("--layer", type=int, default=None, help="cut the backbone after N")
    parser.add_argument(
        "--kind", default=None, help="the retriever: poly, bi or residual (default: the CLI's)"
    )
    parser.add_argument("--limit", type=int, default=None, help="use only N chatbot pairs")
    parser.add_argument("--epochs", type=int, default=RETRIEVER_TRAINING.epochs)
    parser.add_argument("--reranker-epochs", type=int, default=RERANKER_TRAINING.epochs)
    parser.add_argument("--batch-size", type=int, default=RETRIEVER_TRAINING.batch_size)
    parser.add_argument("--lr", type=float, default=RETRIEVER_TRAINING.lr)
    parser.add_argument(
        "--tune-layers",
        type=int,
        default=None,
        help="the retriever tunes the backbone's top N (default: rolecall train's policy)",
    )
    parser.add_argument("--backbone-lr", type=float, default=None, help="default: the policy's")
    parser.add_argument("--top", type=int, default=10, help="candidates reranked (bot: k)")
    parser.add_argument("--negatives", type=int, default=7)
    parser.add_argument("--hard", type=int, default=0, help="of them mined from the retriever")
    parser.add_argument("--bm25-turns", type=int, default=1)
    parser.add_argument(
        "--lexical-weights",
        type=lambda text: [float(w) for w in text.split(",") if w],
        default=[],
        help="also the fusion at these BM25 weights, e.g. 0.25,0.5 (the bot's: 1)",
    )
    parser.add_argument("--max-turns", type=int, default=10, help="care-call context turns")
    parser.add_argument("--carecall-test-share", type=float, default=0.3)
    parser.add_argument(
        "--carecall-train", choices=["carecall", "carecall+chatbot"], default="carecall"
    )
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "runs" / "bench-features")
    parser.add_argument(
        "--seeds",
        type=lambda text: [int(s) for s in text.split(",") if s],
        default=[0],
        help="splits (and training seeds) to run, e.g. 0,1,2,3,4; targets on their mean",
    )
    parser.add_argument(
        "--pair",
        default=None,
        help="a second backbone (e.g. e5 beside --backbone sentence): its retriever, and "
        "both retrievers' scores summed, alone and with BM25",
    )
    parser.add_argument("--chatbot", type=Path, default=CHATBOT)
    parser.add_argument("--carecall", type=Path, default=CARECALL)
    return parser.parse_args()


def target(values: list[float], bound: float, relative: bool = True) -> dict:
    """A target on the mean over seeds, with each seed's value."""
    value = statistics.fmean(values)
    return {
        "value": round(value, 4),
        "per_seed": [round(v, 4) for v in values],
        "target": f">= +{bound:.2f}" if relative else f">= {bound}",
        "met": value >= bound,
    }


def seed_targets(out: dict, top: str) -> dict[str, float]:
    """One seed's target values (differences of Hits@1/20)."""
    values = {}
    for name, measured in out.items():
        r = {model: m["hits@1/20"] for model, m in measured["results"].items()}
        if name == "chatbot":
            values["retriever_chatbot"] = r["retriever"]
        values[f"rerank_vs_retriever_{name}"] = r[top] - r["retriever"]
        if name == "carecall":
            values["retriever_vs_bm25_carecall"] = r["retriever"] - r["bm25"]
            values["bot_first_stage_vs_bm25_carecall"] = r["retriever + bm25 (fused)"] - r["bm25"]
        if "both retrievers (fused)" in r:  # --pair: issue 49's targets for a pair
            if name == "chatbot":
                values["pair_retriever_chatbot"] = r["both retrievers (fused)"]
            if name == "carecall":
                values["pair_first_stage_vs_bm25_carecall"] = (
                    r["both retrievers + bm25 (fused)"] - r["bm25"]
                )
    return values


def main() -> None:
    args = arguments()
    torch.set_num_threads(2)
    started = time.perf_counter()
    args.kind = retriever_kind(args.backbone, args.kind)
    policy = BackboneChoice(args.backbone, layer=args.layer, tune_layers=args.tune_layers)
    args.tune_layers = policy.resolved("retriever")[2] or 0  # rolecall train's default
    args.backbone_lr = retriever_config(policy, backbone_lr=args.backbone_lr).backbone_lr
    backbone = BackboneChoice(args.backbone, frozen=True, layer=args.layer).load("retriever")
    tuned = f", the retriever's top {args.tune_layers} tuned" if args.tune_layers else ""
    print(f"backbone: {args.backbone} layer {args.layer or 'all'} (frozen{tuned})", flush=True)
    top = f"retrieve + rerank top {args.top}"
    by_seed, values = {}, {}
    for seed in args.seeds:
        args.seed = seed
        print(f"\n=== seed {seed}", flush=True)
        chatbot = chatbot_task(args)
        tasks = {"chatbot": chatbot, "carecall": carecall_task(args, chatbot.train)}
        out = {name: run_task(tasks[name], backbone, args) for name in args.data.split(",")}
        by_seed[seed] = out
        for name, value in seed_targets(out, top).items():
            values.setdefault(name, []).append(value)
    bounds = {"pair_retriever_chatbot": PAIR_CHATBOT, "retriever_chatbot": TARGET_CHATBOT}
    targets = {
        name: target(v, bounds[name], relative=False)
        if name in bounds
        else target(v, PAIR_BM25 if name.startswith("pair") else TARGET_BM25)
        if "bm25" in name
        else target(v, TARGET_RERANK)
        for name, v in values.items()
    }
    print(
        json.dumps(
            {
                "bench": "retrieval_quality",
                "backbone": args.backbone,
                "layer": args.layer,
                "tune_layers": args.tune_layers,
                "kind": args.kind,
                "settings": {k: str(v) for k, v in vars(args).items()},
                "seconds": round(time.perf_counter() - started, 1),
                "data": by_seed if len(args.seeds) > 1 else by_seed[args.seeds[0]],
                "targets": targets,
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
