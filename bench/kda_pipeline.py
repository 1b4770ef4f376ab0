"""How fast the K/DA pipeline makes pairs on the embedded model, and what it costs beyond the LLM.

One ``rolecall kda run`` (in-process, the same ``run_kda`` the CLI calls) over the first
N neutral sentences of ../shared/data/neutral/chatbot_data.csv, with a fresh LLM cache so
every call is really made: generate (every n), both filters, export (CSV + Parquet), and a
small G-Eval. The slang index over the full slang corpus is built first, timed on its own
(it is built once and reused by every later run), then loaded by the pipeline.

The baseline, measured in the same run: the time the backend itself spent answering
(``Backend.complete``, timed around each call). Everything else (retrieval, prompt
rendering, the cache, the record files, the manifest, the exports, the asyncio layer) is
the pipeline's own cost. Printed:

- pairs per minute (kept pairs / wall time) and candidates per minute;
- wall / backend ratio, and the share of wall time outside the LLM (target < 10%);
- last, one JSON line with every number and the target.

Usage: python bench/kda_pipeline.py [--sentences 10] [--ns 0,3,5,7,9] [--index DIR]
"""

from __future__ import annotations

import argparse
import functools
import json
import tempfile
import threading
import time
from pathlib import Path

from rolecall.generate.kda import KdaConfig
from rolecall.llm import LLM, Cache, load_backend
from rolecall.pipelines.kda import (
    ExportSection,
    GevalSection,
    KdaRunConfig,
    SentencesSection,
    SlangSection,
    index_stage,
    run_kda,
)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CORPORA = [
    str(DATA / "slang" / "beep_unlabeled_comments.txt"),
    f"{DATA / 'slang' / 'beep_labeled_train.tsv'}:comments",
    f"{DATA / 'slang' / 'curse_detection.txt'}:1",
]


class BackendClock:
    """Wraps ``backend.complete`` of every model opened and sums the seconds inside it."""

    def __init__(self):
        self.seconds = 0.0
        self.calls = 0
        self._lock = threading.Lock()

    def wrap(self, backend) -> None:
        inner = backend.complete

        @functools.wraps(inner)
        def timed(request, sample_index=0):
            started = time.perf_counter()
            try:
                return inner(request, sample_index)
            finally:
                with self._lock:
                    self.seconds += time.perf_counter() - started
                    self.calls += 1

        backend.complete = timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=10)
    parser.add_argument("--ns", default="0,3,5,7,9")
    parser.add_argument("--model", default="llamacpp:embedded")
    parser.add_argument("--index", type=Path, help="slang index dir (built if missing)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-detox-"))
    slang = SlangSection(index=str(args.index or work / "index"), corpora=CORPORA, delimiter="|")
    started = time.perf_counter()
    index = index_stage(slang, progress=False)
    print(
        f"slang index: {len(index):,} comments, ready in "
        f"{time.perf_counter() - started:.1f} s (built once, reused by every run)"
    )

    clock = BackendClock()
    backend = load_backend(args.model)  # loaded before the clock starts, like a warm server
    clock.wrap(backend)

    def load(model: str | None) -> LLM:
        assert model in (None, args.model), model
        return LLM(backend, Cache(work / "cache.sqlite"))

    config = KdaRunConfig(
        out=str(work / "run"),
        model=args.model,
        slang=slang,
        sentences=SentencesSection(
            path=f"{DATA / 'neutral' / 'chatbot_data.csv'}:Q", limit=args.sentences
        ),
        generate=KdaConfig(ns=[int(n) for n in args.ns.split(",")]),
        export=ExportSection(formats=["csv", "parquet"]),
        geval=GevalSection(criteria=["overall"], limit=5),
    )
    started = time.perf_counter()
    results = run_kda(config, load, progress=False, say=lambda line: None)
    wall = time.perf_counter() - started

    candidates = results["generate"]["candidates"]
    pairs = results["filter"]["overall"]["kept"]
    outside = wall - clock.seconds
    print(
        f"{args.sentences} sentences x n in {args.ns}: {candidates} candidates, {pairs} "
        f"pairs, {clock.calls} backend calls, wall {wall:.1f} s, backend {clock.seconds:.1f} s"
    )
    print(
        f"pairs per minute: {pairs / wall * 60:.2f}; candidates per minute: "
        f"{candidates / wall * 60:.2f}"
    )
    print(
        f"wall / backend: {wall / clock.seconds:.3f}; share of wall time outside the LLM: "
        f"{outside / wall:.1%} (target < 10%)"
    )
    print(f"outputs: {work / 'run'}")
    share = outside / wall
    print(
        json.dumps(
            {
                "bench": "kda_pipeline",
                "sentences": args.sentences,
                "ns": args.ns,
                "candidates": candidates,
                "pairs": pairs,
                "backend_calls": clock.calls,
                "wall_seconds": round(wall, 1),
                "backend_seconds": round(clock.seconds, 1),
                "pairs_per_minute": round(pairs / wall * 60, 2),
                "candidates_per_minute": round(candidates / wall * 60, 2),
                "targets": {
                    "outside_llm_share": {
                        "value": round(share, 4),
                        "target": "< 0.10",
                        "met": share < 0.10,
                    }
                },
            }
        )
    )


if __name__ == "__main__":
    main()
