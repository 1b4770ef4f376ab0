"""Which layer of the embedded Gemma gives the best frozen features (issue #17 item 1).

One forward pass per text with every hidden state; per layer the token states are put
through the model's final norm (what a backbone cut after that layer gives: checked
against a really cut model on a few texts) and mean-pooled. Two probes per layer, each
next to its classic baseline on the very same split, in the same run:

- **classifier**: BEEP! labeled train (``slang/beep_labeled_train.tsv``, or a seeded
  sample: ``--beep-train``) -> BEEP! dev (``eval/beep_labeled_dev.tsv``), offensive
  (``hate`` offensive or hate) vs none. Standardised pooled features + logistic regression
  (scikit-learn, balanced classes, fixed C) -> macro-F1 on dev; baseline: character n-gram
  TF-IDF + logistic regression (``train/baselines.py``, the ``chars`` view).
- **retriever**: a seeded sample of Chatbot_data Q/A pairs (``--qa-train`` / ``--qa-test``,
  split by question). A linear bi-encoder (one projection for questions, one for
  answers, cosine / temperature) trained with in-batch negatives on the pooled features
  -> Hits@1/20 and 1/100 of the held-out answers (``eval/retrieval.HitsEvaluator``);
  baseline: BM25 on Kiwi morphemes (``bench/retrieval_quality.py``).

Besides each layer: the mean of all layers and of a few contiguous layers. Then the time
per text of the full model against one cut after the best classifier layer.

The pooled per-layer features are kept under ``--cache-dir`` (one npz per text set), so a
second run only trains the probes.

Usage: python bench/feature_layers.py [--beep-train N] [--qa-train 3000] [--qa-test 500]
       [--max-length 128] [--seed 0] [--cache-dir runs/bench-features/layers]
The last line printed is a JSON object with every number and the targets.
"""

from __future__ import annotations

import argparse
import copy
import csv
import hashlib
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rolecall.eval.offensiveness import beep_examples
from rolecall.eval.retrieval import HitsEvaluator
from rolecall.progress import progress_bar
from rolecall.train.backbones.base import (
    EMBEDDED,
    EMBEDDED_LAYERS,
    Backbone,
    keep_layers,
    layer_list,
)
from rolecall.train.backbones.load import load_backbone
from rolecall.train.data import unique_candidates

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ is not a package
from retrieval_quality import bm25_scores, context  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
KS = (20, 100)


# ---- data --------------------------------------------------------------------------------


def beep(path: Path, limit: int | None = None, seed: int = 0) -> tuple[list[str], list[int]]:
    """BEEP! texts and labels (1 offensive), a seeded sample of ``limit`` rows if given."""
    examples = beep_examples(path)
    if limit and limit < len(examples):
        examples = random.Random(seed).sample(examples, limit)
    return [e.response for e in examples], [int(e.label == "negative") for e in examples]


def qa_split(
    path: Path, train: int, test: int, seed: int = 0
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``train`` and ``test`` Q/A pairs of Chatbot_data, drawn at random with ``seed``; no
    question is on both sides (one pair per question)."""
    with path.open(encoding="utf-8-sig", newline="") as file:
        rows = [(r["Q"].strip(), r["A"].strip()) for r in csv.DictReader(file)]
    first = {}
    for q, a in rows:
        if q and a:
            first.setdefault(q, a)
    questions = sorted(first)
    chosen = random.Random(seed).sample(questions, min(train + test, len(questions)))
    pairs = [(q, first[q]) for q in chosen]
    return pairs[:train], pairs[train : train + test]


# ---- features ----------------------------------------------------------------------------


def final_norm(model: Any) -> Any:
    """The norm a decoder applies after its last layer (Gemma, Llama: ``norm``), or None."""
    norm = getattr(model, "norm", None)
    return norm if isinstance(norm, torch.nn.Module) else None


def layer_states(model: Any, batch: dict[str, Any]) -> list[Any]:
    """Per transformer layer 1..L, the token states a backbone cut after that layer gives:
    the layer's output through the final norm (the last one is already normed)."""
    with torch.no_grad():
        output = model(**batch, output_hidden_states=True)
    hidden = list(output.hidden_states[1:])
    norm = final_norm(model)
    if norm is not None:
        with torch.no_grad():
            hidden = [norm(h) for h in hidden[:-1]] + [hidden[-1]]
    return hidden


def pooled_layers(
    backbone: Backbone,
    texts: Sequence[str],
    max_length: int,
    side: str = "right",
    batch_size: int = 32,
    label: str = "texts",
) -> np.ndarray:
    """[N, L, H] float16: each text's mean-pooled states per layer (batches of similar
    length, so little padding; the order of ``texts`` kept)."""
    lengths = [len(ids) for ids in backbone._ids(texts)]
    order = np.argsort(lengths, kind="stable")
    out: np.ndarray | None = None
    with progress_bar(len(texts), f"layers ({label})") as bar:
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            batch = backbone.batch_texts([texts[i] for i in rows], max_length, side)
            mask = batch["attention_mask"].unsqueeze(-1).float()
            pooled = [
                (h * mask).sum(1) / mask.sum(1).clamp(min=1)
                for h in layer_states(backbone.model, batch)
            ]
            stacked = torch.stack(pooled, 1).numpy().astype(np.float16)
            if out is None:
                out = np.zeros((len(texts), *stacked.shape[1:]), dtype=np.float16)
            out[rows] = stacked
            bar(len(rows))
    return out


def cached_layers(backbone, texts, max_length, side, cache_dir: Path, label: str) -> np.ndarray:
    """``pooled_layers`` kept in ``cache_dir`` under a hash of everything it depends on."""
    key = hashlib.sha256(
        "\x1f".join([backbone.identity, str(max_length), side, *texts]).encode("utf-8")
    ).hexdigest()[:20]
    path = cache_dir / f"{label}-{key}.npz"
    if path.is_file():
        return np.load(path)["pooled"]
    pooled = pooled_layers(backbone, texts, max_length, side, label=label)
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial.npz")
    np.savez(partial, pooled=pooled)
    partial.rename(path)
    return pooled


def layer_sets(layers: int, width: int = 3) -> dict[str, list[int]]:
    """Name -> 0-based layer indices: each layer, the mean of all, contiguous windows."""
    sets = {f"layer {n}": [n - 1] for n in range(1, layers + 1)}
    sets[f"mean 1-{layers}"] = list(range(layers))
    for start in range(1, layers + 1, width):
        end = min(start + width - 1, layers)
        if end > start:
            sets[f"mean {start}-{end}"] = list(range(start - 1, end))
    return sets


def combine(pooled: np.ndarray, indices: list[int]) -> np.ndarray:
    return pooled[:, indices].astype(np.float32).mean(1)


def cut_copy(model: Any, layer: int) -> Any:
    cut = copy.deepcopy(model)
    keep_layers(cut, layer)
    return cut


def cut_matches(backbone: Backbone, texts: Sequence[str], layer: int, max_length: int) -> float:
    """Largest |difference| between layer ``layer`` of the full model (through its final
    norm) and the last states of a copy cut after that layer, over ``texts``."""
    batch = backbone.batch_texts(texts, max_length)
    full = layer_states(backbone.model, batch)[layer - 1]
    with torch.no_grad():
        cut = cut_copy(backbone.model, layer)(**batch).last_hidden_state
    mask = batch["attention_mask"].bool()
    return float((full[mask] - cut[mask]).abs().max())


def seconds_per_text(model: Any, backbone: Backbone, texts, max_length: int, batch_size=32):
    started = time.perf_counter()
    for start in range(0, len(texts), batch_size):
        batch = backbone.batch_texts(texts[start : start + batch_size], max_length)
        with torch.no_grad():
            model(**batch)
    return (time.perf_counter() - started) / len(texts)


# ---- probes ------------------------------------------------------------------------------


def macro_f1(gold: Sequence[int], predicted: Sequence[int]) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(gold, predicted, average="macro"))


def logistic_probe(train_x, train_y, test_x, c: float = 1.0, seed: int = 0) -> np.ndarray:
    """Standardised features -> logistic regression (balanced); predictions for test_x."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(
        StandardScaler(),
        LogisticRegression(C=c, max_iter=2000, class_weight="balanced", random_state=seed),
    )
    model.fit(train_x, train_y)
    return model.predict(test_x)


def tfidf_f1(train_texts, train_y, test_texts, test_y, seed: int = 0) -> float:
    from rolecall.train.baselines import TfidfModel, TfidfSettings

    model = TfidfModel(TfidfSettings(labels=["none", "offensive"], seed=seed))
    names = ["none", "offensive"]
    model.fit(list(train_texts), [names[y] for y in train_y])
    predicted = model.predict_proba(list(test_texts)).argmax(1)
    return macro_f1(test_y, predicted)


def bi_encoder(
    q_train: np.ndarray,
    a_train: np.ndarray,
    dim: int = 256,
    epochs: int = 10,
    batch_size: int = 128,
    lr: float = 1e-3,
    temperature: float = 0.05,
    seed: int = 0,
):
    """A linear bi-encoder over pooled features trained with in-batch negatives; returns
    ``score(q [n, H], a [m, H]) -> [n, m]``."""
    torch.manual_seed(seed)
    mean_q, std_q = q_train.mean(0), q_train.std(0) + 1e-6
    mean_a, std_a = a_train.mean(0), a_train.std(0) + 1e-6
    project_q = torch.nn.Linear(q_train.shape[1], dim)
    project_a = torch.nn.Linear(a_train.shape[1], dim)
    parameters = [*project_q.parameters(), *project_a.parameters()]
    optimiser = torch.optim.AdamW(parameters, lr=lr, weight_decay=0.01)

    def embed(project, x, mean, std):
        x = torch.from_numpy(((x - mean) / std).astype(np.float32))
        return torch.nn.functional.normalize(project(x), dim=-1)

    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for rows in torch.randperm(len(q_train), generator=generator).split(batch_size):
            q = embed(project_q, q_train[rows.numpy()], mean_q, std_q)
            a = embed(project_a, a_train[rows.numpy()], mean_a, std_a)
            logits = q @ a.T / temperature
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(rows)))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()

    def score(q: np.ndarray, a: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return (
                embed(project_q, q, mean_q, std_q) @ embed(project_a, a, mean_a, std_a).T
            ).numpy()

    return score


def hits(evaluator, matrix: np.ndarray, queries: int, pool: list[str], gold: list[int]) -> dict:
    """Hits@1/K of a full [queries, pool] score matrix on the evaluator's samples."""
    return evaluator(
        lambda _, index: np.take_along_axis(matrix, index, axis=1), range(queries), pool, gold
    )


def targets_line(classifier: dict, retriever: dict, speed_up: float) -> dict:
    """The JSON targets: best layer vs TF-IDF + 0.05, vs BM25 + 0.10, cut speed-up."""

    def target(value: float, goal: str) -> dict:
        op, number = goal.split()
        met = value >= float(number) if op == ">=" else value <= float(number)
        return {"value": round(value, 4), "target": goal, "met": bool(met)}

    return {
        "classifier_best_layer_vs_tfidf": target(
            classifier["best_f1"] - classifier["tfidf_f1"], ">= 0.05"
        ),
        "retriever_best_layer_vs_bm25": target(
            retriever["best_hits"] - retriever["bm25_hits"], ">= 0.10"
        ),
        "cut_speed_up": target(speed_up, ">= 1.2"),
    }


# ---- the run -----------------------------------------------------------------------------


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default=EMBEDDED)
    parser.add_argument("--beep-train", type=int, default=None, help="sample N train rows")
    parser.add_argument("--qa-train", type=int, default=3000)
    parser.add_argument("--qa-test", type=int, default=500)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=10, help="of the bi-encoder")
    parser.add_argument("--c", type=float, default=1.0, help="the probe's inverse regularisation")
    parser.add_argument("--timing-texts", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument(
        "--cache-dir", type=Path, default=ROOT / "runs" / "bench-features" / "layers"
    )
    return parser.parse_args()


def main() -> None:
    args = arguments()
    torch.set_num_threads(2)
    whole = EMBEDDED_LAYERS if args.backbone == EMBEDDED else None  # not the default cut
    backbone = load_backbone(args.backbone, frozen=True, layer=whole)
    layers = len(layer_list(backbone.model)[2])
    train_texts, train_y = beep(
        args.data_dir / "slang" / "beep_labeled_train.tsv", args.beep_train, args.seed
    )
    dev_texts, dev_y = beep(args.data_dir / "eval" / "beep_labeled_dev.tsv")
    qa_train, qa_test = qa_split(
        args.data_dir / "neutral" / "chatbot_data.csv", args.qa_train, args.qa_test, args.seed
    )
    print(
        f"BEEP! train {len(train_texts)} -> dev {len(dev_texts)}; Chatbot_data Q/A train "
        f"{len(qa_train)}, held out {len(qa_test)}; {layers} layers",
        flush=True,
    )
    check = [context(q) for q, _ in qa_test[:4]] + dev_texts[:4]
    differences = {n: cut_matches(backbone, check, n, args.max_length) for n in (1, layers // 2)}
    print(f"cut model vs full model's layer + final norm, max |diff|: {differences}", flush=True)

    def features(texts, side, label):
        return cached_layers(backbone, texts, args.max_length, side, args.cache_dir, label)

    beep_train = features(train_texts, "right", "beep-train")
    beep_dev = features(dev_texts, "right", "beep-dev")
    q_train = features([context(q) for q, _ in qa_train], "left", "qa-q-train")
    a_train = features([a for _, a in qa_train], "right", "qa-a-train")
    q_test = features([context(q) for q, _ in qa_test], "left", "qa-q-test")
    pool = unique_candidates(a for _, a in qa_test)
    a_pool = features(pool, "right", "qa-pool")
    position = {answer: n for n, answer in enumerate(pool)}
    gold = [position[a] for _, a in qa_test]
    ks = tuple(k for k in KS if k <= len(pool))
    evaluator = HitsEvaluator(ks=ks, seed=args.seed)

    started = time.perf_counter()
    tfidf = tfidf_f1(train_texts, train_y, dev_texts, dev_y, args.seed)
    tfidf_seconds = time.perf_counter() - started
    bm25 = hits(evaluator, bm25_scores([q for q, _ in qa_test], pool), len(qa_test), pool, gold)
    print(f"baselines: TF-IDF + LR macro-F1 {tfidf:.3f}; BM25 {bm25}", flush=True)

    rows: dict[str, dict] = {}
    for name, indices in layer_sets(layers).items():
        predicted = logistic_probe(
            combine(beep_train, indices), train_y, combine(beep_dev, indices), args.c, args.seed
        )
        score = bi_encoder(
            combine(q_train, indices), combine(a_train, indices), epochs=args.epochs, seed=args.seed
        )
        matrix = score(combine(q_test, indices), combine(a_pool, indices))
        rows[name] = {"macro_f1": round(macro_f1(dev_y, predicted), 4)} | {
            k: round(v, 4) for k, v in hits(evaluator, matrix, len(qa_test), pool, gold).items()
        }
        print(f"{name:12s} {json.dumps(rows[name])}", flush=True)

    primary = f"hits@1/{ks[0]}"
    single = {name: row for name, row in rows.items() if name.startswith("layer ")}
    best_f1_name = max(rows, key=lambda n: rows[n]["macro_f1"])
    best_hits_name = max(rows, key=lambda n: rows[n][primary])
    best_layer_f1 = max(single, key=lambda n: single[n]["macro_f1"])
    best_layer_hits = max(single, key=lambda n: single[n][primary])
    cut_at = int(best_layer_f1.split()[1])

    timing = (dev_texts * (1 + args.timing_texts // max(1, len(dev_texts))))[: args.timing_texts]
    full_seconds = seconds_per_text(backbone.model, backbone, timing, args.max_length)
    cut = cut_copy(backbone.model, cut_at)
    cut_seconds = seconds_per_text(cut, backbone, timing, args.max_length)
    speed_up = full_seconds / cut_seconds

    print(f"\n{'features':12s}{'macro-F1':>10s}" + "".join(f"{f'hits@1/{k}':>12s}" for k in ks))
    print(f"{'baseline':12s}{tfidf:10.3f}" + "".join(f"{bm25[f'hits@1/{k}']:12.3f}" for k in ks))
    for name, row in rows.items():
        print(
            f"{name:12s}{row['macro_f1']:10.3f}"
            + "".join(f"{row[f'hits@1/{k}']:12.3f}" for k in ks)
        )
    print(
        f"extraction: full {1000 * full_seconds:.1f} ms/text, cut after layer {cut_at} "
        f"{1000 * cut_seconds:.1f} ms/text ({speed_up:.2f}x)"
    )
    classifier = {
        "tfidf_f1": round(tfidf, 4),
        "tfidf_seconds": round(tfidf_seconds, 1),
        "best_f1": rows[best_f1_name]["macro_f1"],
        "best": best_f1_name,
        "best_single_layer": best_layer_f1,
        "last_layer_f1": rows[f"layer {layers}"]["macro_f1"],
    }
    retriever = {
        "bm25_hits": round(bm25[primary], 4),
        "bm25": {k: round(v, 4) for k, v in bm25.items()},
        "best_hits": rows[best_hits_name][primary],
        "best": best_hits_name,
        "best_single_layer": best_layer_hits,
        "last_layer_hits": rows[f"layer {layers}"][primary],
    }
    print(
        json.dumps(
            {
                "bench": "feature_layers",
                "beep_train": len(train_texts),
                "beep_dev": len(dev_texts),
                "qa_train": len(qa_train),
                "qa_test": len(qa_test),
                "pool": len(pool),
                "max_length": args.max_length,
                "seed": args.seed,
                "cut_check_max_abs_diff": differences,
                "classifier": classifier,
                "retriever": retriever,
                "extraction_ms_per_text": {
                    "full": round(1000 * full_seconds, 2),
                    f"cut_{cut_at}": round(1000 * cut_seconds, 2),
                },
                "rows": rows,
                "targets": targets_line(classifier, retriever, speed_up),
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
