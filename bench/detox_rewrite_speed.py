"""Greedy detox rewriting on a CPU: llama.cpp (embedded Q4_K_M GGUF + the adapter as a GGUF
LoRA) against transformers (the dequantized snapshot + PEFT), on the same held-out sentences.

Measures sentences per minute of each path (after loading, both with ``--threads``) and how
far the llama.cpp rewrites agree with the transformers ones: the share identical and chrF of
the llama.cpp rewrites against the transformers ones (the Q4 base and the dequantized
snapshot differ slightly, so a few greedy paths split), plus each path's chrF against the
K/DA references.

Usage: python bench/detox_rewrite_speed.py MODEL_DIR [--sentences 36] [--threads 2]
       (MODEL_DIR: from 'rolecall detox train' on the embedded base; the held-out split is
       that of its defaults, test share 0.1 and seed 0)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rolecall.eval.overlap import chrf
from rolecall.formats.kda import read_kda_csv
from rolecall.train.detox_model import DetoxModel, split_pairs
from rolecall.train.gguf_lora import LlamaCppRewriter

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--sentences", type=int, default=36)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    test = split_pairs(read_kda_csv(DATA / "detox" / "kda_ko.csv"), 0.1, args.seed)[1]
    test = test[: args.sentences]
    inputs, references = [p.toxic for p in test], [p.neutral for p in test]

    # llama.cpp first, before torch is loaded: in a process where torch had run, llama.cpp
    # measured slower here (noisy, on a loaded machine); 'detox rewrite --engine llamacpp'
    # never loads torch
    rewriter = LlamaCppRewriter(args.model_dir, n_threads=args.threads)
    started = time.perf_counter()
    fast = list(rewriter.rewrites(inputs, progress=True))
    fast_seconds = time.perf_counter() - started
    del rewriter

    import torch

    torch.set_num_threads(args.threads)
    model = DetoxModel.load(args.model_dir)
    started = time.perf_counter()
    slow = model.rewrite(inputs, progress=True)
    slow_seconds = time.perf_counter() - started

    identical = sum(a == b for a, b in zip(fast, slow, strict=True)) / len(test)
    speedup = slow_seconds / fast_seconds
    results = {
        "sentences": len(test),
        "threads": args.threads,
        "transformers_per_minute": round(60 * len(test) / slow_seconds, 1),
        "llamacpp_per_minute": round(60 * len(test) / fast_seconds, 1),
        "speedup": round(speedup, 2),
        "identical_share": round(identical, 3),
        "chrf_llamacpp_vs_transformers": round(chrf(fast, slow), 2),
        "chrf_transformers": round(chrf(slow, references), 2),
        "chrf_llamacpp": round(chrf(fast, references), 2),
    }
    for source, a, b in list(zip(inputs, slow, fast))[:5]:
        print(f"  {source}\n  transformers -> {a}\n  llama.cpp    -> {b}")
    print(
        json.dumps(
            {
                "bench": "detox_rewrite_speed",
                "results": results,
                "targets": {
                    "speedup": {"value": results["speedup"], "target": ">= 2", "met": speedup >= 2},
                    "identical_share": {
                        "value": results["identical_share"],
                        "target": ">= 0.5",
                        "met": identical >= 0.5,
                    },
                },
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
