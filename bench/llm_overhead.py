"""What rolecall's LLM layer costs, and what its concurrency buys. One run, ratios printed.

1. In-process: N prompts through ``LLM`` (cache on disk, capability checks, retries,
   stats) on the ``llamacpp:embedded`` backend vs the same N calls made directly on the
   same ``llama_cpp.Llama`` instance with the same sampling parameters. Rounds alternate the
   order of the two so that machine noise hits both. Target: ratio <= 1.05.
2. Concurrency against an OpenAI-compatible server on loopback: the same N prompts through
   the ``openai:`` backend with concurrency 1 vs 8, (a) against ``python -m
   llama_cpp.server`` serving the embedded model, (b) against a stand-in server that
   answers after a fixed delay, like a remote API dominated by network latency.

Usage: python bench/llm_overhead.py [--n 24] [--rounds 3] [--max-tokens 16]
Prompts are questions from ../shared/data/neutral/chatbot_data.csv.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for tests.llm.flaky_server (the stand-in server)

from rolecall.llm import LLM, Cache, Request, SamplingParams, load_backend  # noqa: E402
from rolecall.llm.embedded import embedded_model_path  # noqa: E402
from tests.local_server import LocalServer  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "neutral" / "chatbot_data.csv"


def prompts(n: int, offset: int = 0) -> list[str]:
    with DATA.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [f"질문: {row['Q']}\n답변:" for row in rows[offset : offset + n]]


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def in_process(n: int, rounds: int, max_tokens: int, block: int = 4) -> None:
    backend = load_backend("llamacpp:embedded")
    llama = backend._llm
    params = SamplingParams(temperature=0.7, top_p=0.9, max_tokens=max_tokens, seed=1)
    totals = {"direct": 0.0, "layer": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        llm = LLM(backend, Cache(Path(tmp) / "cache.sqlite"))  # a real on-disk cache
        texts = prompts(n * rounds)  # every prompt new: every layer call is a cache miss

        def direct(chunk):
            for text in chunk:
                llama.reset()  # the layer resets too (prefix_cache=false, its default)
                llama.create_completion(
                    text,
                    max_tokens=max_tokens,
                    temperature=0.7,
                    top_p=0.9,
                    top_k=0,
                    min_p=0.0,
                    repeat_penalty=1.0,
                    seed=1,
                )

        def layer(chunk):
            llm.generate([Request(prompt=t, params=params) for t in chunk])

        # Small alternating blocks: the shared machine's drift hits both sides alike.
        for b, start in enumerate(range(0, len(texts), block)):
            chunk = texts[start : start + block]
            pair = [("direct", direct), ("layer", layer)]
            for name, fn in pair if b % 2 == 0 else pair[::-1]:
                totals[name] += timed(lambda: fn(chunk))
        assert llm.stats.calls == len(texts) and llm.stats.failures == 0
    d, lay, count = totals["direct"], totals["layer"], len(texts)
    print(
        f"in-process llamacpp:embedded, {count} prompts, {max_tokens} new tokens each, "
        f"alternating blocks of {block}"
    )
    print(f"  direct Llama.create_completion  {d:.2f}s  ({d / count * 1000:.0f} ms/prompt)")
    print(f"  rolecall LLM layer              {lay:.2f}s  ({lay / count * 1000:.0f} ms/prompt)")
    print(f"  ratio layer/direct = {lay / d:.3f}  (target <= 1.05)")


def concurrency(url: str, n: int, max_tokens: int, label: str) -> None:
    params = SamplingParams(temperature=0.7, top_p=0.9, max_tokens=max_tokens, seed=1)
    times = {}
    for workers in (1, 8):
        backend = load_backend(f"openai:{url}?timeout=120&max_concurrency=16")
        llm = LLM(backend, Cache(":memory:"), concurrency=workers)
        texts = prompts(n, offset=1000 + workers)  # distinct prompts: no cache hits
        times[workers] = timed(
            lambda: llm.generate([Request(prompt=t, params=params) for t in texts])
        )
        assert llm.stats.failures == 0, llm.stats.failed_items[:3]
    print(
        f"{label}: {n} prompts  concurrency 1: {times[1]:.2f}s  concurrency 8: "
        f"{times[8]:.2f}s  speed-up x{times[1] / times[8]:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument(
        "--delay", type=float, default=0.2, help="answer delay of the stand-in remote server (s)"
    )
    args = parser.parse_args()
    in_process(args.n, args.rounds, args.max_tokens)
    with tempfile.TemporaryDirectory() as tmp:
        with LocalServer(embedded_model_path(), Path(tmp) / "server.log") as server:
            concurrency(server.url, args.n, args.max_tokens, "llama_cpp.server (loopback)")
    from tests.llm.flaky_server import FakeOpenAIServer

    with FakeOpenAIServer(delay=args.delay) as slow:
        concurrency(
            slow.url,
            args.n,
            args.max_tokens,
            f"stand-in remote API, {args.delay * 1000:.0f} ms per answer",
        )


if __name__ == "__main__":
    main()
