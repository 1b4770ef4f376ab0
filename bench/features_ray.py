"""Frozen-backbone feature extraction on Ray against this process (#18 item 5).

The same ``--n`` short Korean texts (the first unique questions of the shared Chatbot_data
corpus, ``neutral/chatbot_data.csv``) are run through the frozen ``--backbone`` twice,
each into its own empty features cache: once here (``Features.precompute``, the baseline)
and once on Ray (``extract_on_ray``: ``--workers`` actors on a local cluster, each loading
the backbone itself). Then the Ray job is run again on its filled cache, which must send
nothing.

Reported: texts/s of each, the ratio ray / local, the cluster's own start (excluded from
the ray time: a cluster outlives a command on a real deployment; the actors' start-up and
model loads are included), and how far the Ray states are from the local ones. On one
machine the actors share its cores with nothing gained, so the ratio measures what Ray
costs, not what it gains; the gain is N machines each running an actor.

Targets: the Ray states equal the local ones (largest difference <= 1% of the largest
magnitude: float16 states from batches padded differently), and a re-run sends 0 texts.
The last line is one JSON object with ``targets``.

Usage: python bench/features_ray.py [--n 500] [--workers 2] [--backbone embedded]
         [--max-length 64] [--batch-size 32] [--data /work/shared/data] [--local-threads N]
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from rolecall.engines.ray import start_ray
from rolecall.train.backbones.features import Features
from rolecall.train.backbones.load import load_backbone
from rolecall.train.features_ray import extract_on_ray


def chatbot_texts(data: Path, n: int) -> list[str]:
    with (data / "neutral" / "chatbot_data.csv").open(encoding="utf-8") as handle:
        questions = (row["Q"].strip() for row in csv.DictReader(handle))
        return list(dict.fromkeys(q for q in questions if q))[:n]


def states(backbone, cache: Path, texts: list[str], max_length: int) -> list[np.ndarray]:
    features = Features(backbone, cache)
    assert features.missing("texts", texts, max_length) == {}
    hidden, mask = features.texts(texts, max_length)
    return [hidden[row][mask[row]].numpy() for row in range(len(texts))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backbone", default="embedded")
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    parser.add_argument(
        "--local-threads",
        type=int,
        default=None,
        help="torch threads of the local run (default: torch's; each Ray actor has 1 CPU)",
    )
    args = parser.parse_args()
    import torch

    if args.local_threads:
        torch.set_num_threads(args.local_threads)

    texts = chatbot_texts(args.data, args.n)
    backbone = load_backbone(args.backbone, frozen=True)
    with tempfile.TemporaryDirectory() as tmp:
        local_cache, ray_cache = Path(tmp) / "local", Path(tmp) / "ray"
        started = time.perf_counter()
        Features(backbone, local_cache, args.batch_size).precompute(
            "texts", texts, args.max_length, progress=False
        )
        local_s = time.perf_counter() - started

        started = time.perf_counter()
        start_ray(None, num_cpus=max(2, args.workers))
        cluster_s = time.perf_counter() - started

        def on_ray() -> tuple[int, float]:
            began = time.perf_counter()
            sent = extract_on_ray(
                Features(backbone, ray_cache, args.batch_size),
                args.backbone,
                {},
                "texts",
                texts,
                args.max_length,
                workers=args.workers,
            )
            return sent, time.perf_counter() - began

        sent, ray_s = on_ray()
        resent, rerun_s = on_ray()
        here = states(backbone, local_cache, texts, args.max_length)
        there = states(backbone, ray_cache, texts, args.max_length)
    scale = max(float(np.abs(a).max()) for a in here)
    worst = max(float(np.abs(a - b).max()) for a, b in zip(here, there, strict=True))
    local_rate, ray_rate = len(texts) / local_s, sent / ray_s
    print(f"{len(texts)} texts, {args.backbone}, max_length {args.max_length}")
    print(f"local ({torch.get_num_threads()} threads): {local_s:.1f} s, {local_rate:.1f} texts/s")
    print(
        f"ray ({args.workers} workers): {ray_s:.1f} s, {ray_rate:.1f} texts/s "
        f"(cluster start {cluster_s:.1f} s, not counted); ratio {ray_rate / local_rate:.3f}"
    )
    print(f"re-run: {resent} sent in {rerun_s:.2f} s")
    print(f"largest state difference {worst:.4g} of largest magnitude {scale:.4g}")
    print(
        json.dumps(
            {
                "texts": len(texts),
                "workers": args.workers,
                "local_threads": torch.get_num_threads(),
                "local_texts_per_s": round(local_rate, 2),
                "ray_texts_per_s": round(ray_rate, 2),
                "ray_over_local": round(ray_rate / local_rate, 3),
                "cluster_start_s": round(cluster_s, 2),
                "rerun_s": round(rerun_s, 2),
                "targets": {
                    "relative_state_difference": {
                        "value": round(worst / scale, 6),
                        "target": "<= 0.01",
                        "met": worst / scale <= 0.01,
                    },
                    "rerun_sent": {"value": resent, "target": "== 0", "met": resent == 0},
                },
            }
        )
    )


if __name__ == "__main__":
    main()
