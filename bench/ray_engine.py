"""The ray engine against the local engine: the same ``llm batch`` on the same server (#18).

An OpenAI-compatible stand-in server on loopback (``tests/llm/flaky_server.py``'s
``FakeOpenAIServer``, answering after ``--delay`` seconds, as a remote vLLM or API would)
gets the same ``--n`` prompts twice through ``llm batch``'s ``run_batch``: once on the
local engine (one client, ``--concurrency`` calls at once) and once on the ray engine
(``--workers`` actors on a local cluster, the same total concurrency split between them).
Each run has its own empty cache, so every prompt is a real call.

Reported: wall seconds of each, the throughput ratio ray / local (= local seconds / ray
seconds) and the seconds Ray adds per record ((ray - local) / n; actor start-up included,
the cluster's own start excluded: a cluster outlives a command on a real deployment);
then the two parts of that overhead: the seconds until ray's first record (the actors'
start-up plus one batch, a fixed cost) and the ratio after it (the steady pace). The
default ``--n`` (20,000 records, 125 s of calls at the ideal pace) is a small real job:
the fixed start-up weighs on a few thousand records (2,000: ratio ~0.8 on 2 cores) and
not on the 1M candidates of the paper's scale.

Target (#18 item 6): ray / local throughput >= 0.9 at the same total concurrency. The last
line is one JSON object with ``targets``.

With ``--model M`` (a real server's model string, e.g. a vLLM server or a pool of them)
the same two runs go to that server instead, on ``--prompts FILE`` (``llm batch`` input;
default: short generated prompts) with ``--max-tokens``: its calls per second on each
engine are the per-server numbers a cluster plan starts from (docs/scale-out.md).

Usage: python bench/ray_engine.py [--n 20000] [--delay 0.1] [--concurrency 16] [--workers 2]
                                  [--ray-address HOST:PORT]
       python bench/ray_engine.py --model M [--prompts FILE] [--n 2000] [--max-tokens 80]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.llm.flaky_server, the stand-in server

from rolecall.engines import llm_settings, open_engine  # noqa: E402
from rolecall.engines.ray import start_ray  # noqa: E402
from rolecall.llm import SamplingParams  # noqa: E402
from rolecall.llm.batch import BatchInput, read_batch_input, run_batch  # noqa: E402
from tests.llm.flaky_server import FakeOpenAIServer  # noqa: E402

TARGET = 0.9


def write_prompts(path: Path, n: int) -> Path:
    rows = [{"id": f"p{i}", "prompt": f"안부 인사 {i}번째"} for i in range(n)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


class FirstRecordClock:
    """An engine that notes when its first output record arrives: what precedes it is
    start-up (the actors' processes, their imports and clients), not throughput."""

    def __init__(self, engine):
        self.engine, self.first = engine, None
        self.name, self.stats = engine.name, engine.stats

    @property
    def model_id(self):
        return self.engine.model_id

    def map(self, work, records, params):
        for record in self.engine.map(work, records, params):
            if self.first is None:
                self.first = time.perf_counter()
            yield record

    def run(self, work, records, params, on_row):
        def noted(record):
            if self.first is None:
                self.first = time.perf_counter()
            on_row(record)

        self.engine.run(work, records, params, noted)


def timed_batch(
    model: str, prompts: Path, out: Path, args, engine_name: str
) -> tuple[float, float | None]:
    """Wall seconds of one ``llm batch`` run, and (on an engine) the seconds until its
    first output record."""
    batch = read_batch_input(prompts, SamplingParams(max_tokens=args.max_tokens, temperature=0.0))
    batch = BatchInput(batch.ids[: args.n], batch.requests[: args.n])
    cache = out.with_suffix(".sqlite")
    settings = llm_settings(model, cache, args.concurrency)
    engine = open_engine(engine_name, settings, address=args.ray_address, workers=args.workers)
    clock = FirstRecordClock(engine) if engine.name != "local" else None
    started = time.perf_counter()
    stats = run_batch(clock or engine, batch, out)
    seconds = time.perf_counter() - started
    # a retried call (a slow answer on a loaded machine) is a call, not a new prompt
    assert stats.failures == 0 and stats.calls - stats.retries == args.n, stats.summary()
    return seconds, (clock.first - started if clock and clock.first else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="prompts")
    parser.add_argument("--delay", type=float, default=0.1, help="server answer delay (s)")
    parser.add_argument("--concurrency", type=int, default=16, help="total, both engines")
    parser.add_argument("--workers", type=int, default=2, help="Ray actors")
    parser.add_argument("--model", help="a real server's model string (default: a stand-in)")
    parser.add_argument("--prompts", type=Path, help="llm batch input (with --model)")
    parser.add_argument("--max-tokens", type=int, default=8, help="tokens an answer")
    parser.add_argument(
        "--ray-address", help="join this running Ray cluster (default: start a local one)"
    )
    args = parser.parse_args()

    start_ray(args.ray_address, num_cpus=max(2, args.workers))  # once, outside the timings
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        folder = Path(tmp)
        if args.model:
            model, server = args.model, None
        else:
            server = stack.enter_context(FakeOpenAIServer(delay=args.delay))
            model = f"openai:{server.url}?model=m&max_concurrency={args.concurrency}"
        prompts = args.prompts or write_prompts(folder / "prompts.jsonl", args.n)
        args.n = min(args.n, len(read_batch_input(prompts, SamplingParams()).ids))
        local, _ = timed_batch(model, prompts, folder / "local.jsonl", args, "local")
        on_ray, first = timed_batch(model, prompts, folder / "ray.jsonl", args, "ray")
        assert server is None or server.calls >= 2 * args.n, server.calls
    ratio = local / on_ray
    overhead_ms = (on_ray - local) / args.n * 1000
    delay = local / args.n * args.concurrency if args.model else args.delay
    # after its first record (one batch done) the actors are up: the rest is the ray
    # engine's steady pace, against local's after its own first answer (one delay)
    steady = (local - delay) / (on_ray - first) if first else None
    served = f"model {model}" if args.model else f"{delay * 1000:.0f} ms per answer"
    print(
        f"{args.n} prompts, {served}, concurrency {args.concurrency}: local {local:.2f}s "
        f"({args.n / local:.2f} calls/s), ray ({args.workers} actors) {on_ray:.2f}s "
        f"({args.n / on_ray:.2f} calls/s); ray/local throughput {ratio:.3f}, "
        f"{overhead_ms:+.2f} ms per record; ray's first record after {first:.2f}s "
        f"(start-up), then throughput {steady:.3f} of local's"
    )
    print(
        json.dumps(
            {
                "targets": {
                    "ray_over_local_throughput": {
                        "value": round(ratio, 4),
                        "target": f">= {TARGET}",
                        "met": ratio >= TARGET,
                    }
                },
                "n": args.n,
                "model": args.model,
                "delay_s": None if args.model else args.delay,
                "local_calls_per_s": round(args.n / local, 3),
                "ray_calls_per_s": round(args.n / on_ray, 3),
                "concurrency": args.concurrency,
                "workers": args.workers,
                "local_s": round(local, 3),
                "ray_s": round(on_ray, 3),
                "ray_overhead_ms_per_record": round(overhead_ms, 3),
                "ray_first_record_s": round(first, 3) if first else None,
                "ray_over_local_after_start_up": round(steady, 4) if steady else None,
            }
        )
    )


if __name__ == "__main__":
    main()
