"""Tokens/s of the embedded model under different llama-cpp-python builds, in one run.

Each build (a wheel file, or ``installed`` for the one in this venv) is unpacked into a
temporary folder and run in its own child process, so that a build that crashes on this
CPU (a native build with AMX did, with SIGSEGV) is reported as crashed, not a dead bench.
Rounds alternate the builds so that machine noise hits all of them. Each round: a fresh
model, one warm-up, then prompt evaluation of a ~220-token Korean prompt and greedy
generation of ``--tokens`` tokens, timed separately.

Usage:
  python bench/llama_build_speed.py                        # the installed build alone
  python bench/llama_build_speed.py --build native=/tmp/native.whl --build avx512=/tmp/a.whl

The installed build is the baseline; each other build's speed is a ratio to it.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
import llama_cpp
from rolecall.llm.embedded import embedded_model_path
prompt = ("다음은 홀로 사시는 어르신께 안부 전화를 드리는 인공지능 상담원과 어르신의 대화입니다. "
          "상담원은 존댓말로 짧고 따뜻하게 말합니다.\n") * 4 + "상담원: 안녕하세요, 어르신."
tokens = int(sys.argv[1])
llm = llama_cpp.Llama(str(embedded_model_path()), n_ctx=2048, verbose=False, seed=0)
llm.create_completion("안녕하세요", max_tokens=4, temperature=0.0)  # warm-up
ids = llm.tokenize(prompt.encode("utf-8"))
llm.reset()
started = time.perf_counter()
llm.eval(ids)
prompt_seconds = time.perf_counter() - started
llm.reset()
started = time.perf_counter()
out = llm.create_completion(prompt, max_tokens=tokens, temperature=0.0, top_k=0,
                            min_p=0.0, repeat_penalty=1.0)
total = time.perf_counter() - started
made = out["usage"]["completion_tokens"]
print(json.dumps({"prompt_tokens": len(ids), "prompt_tps": len(ids) / prompt_seconds,
                  "gen_tokens": made, "gen_tps": made / max(total - prompt_seconds, 1e-9),
                  "system_info": llama_cpp.llama_print_system_info().decode()}))
"""


def unpack(wheel: Path, into: Path) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(into),
            str(wheel),
        ],
        check=True,
    )
    return into


def run_once(path: Path | None, tokens: int) -> dict:
    env = None
    if path is not None:
        import os

        env = {**os.environ, "PYTHONPATH": str(path)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(tokens)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if proc.returncode < 0:
        return {"crashed": signal.Signals(-proc.returncode).name}
    if proc.returncode != 0:
        return {"failed": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--build",
        action="append",
        default=[],
        help="NAME=WHEEL: another build to compare with the installed one",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=96)
    args = parser.parse_args()
    builds: dict[str, Path | None] = {"installed": None}
    with tempfile.TemporaryDirectory() as tmp:
        for item in args.build:
            name, _, wheel = item.partition("=")
            builds[name] = unpack(Path(wheel), Path(tmp) / name)
        results: dict[str, list[dict]] = {name: [] for name in builds}
        for round_ in range(args.rounds):
            order = list(builds) if round_ % 2 == 0 else list(reversed(builds))
            for name in order:
                if results[name] and "crashed" in results[name][-1]:
                    continue  # a crash is deterministic: once is enough
                results[name].append(run_once(builds[name], args.tokens))
    summary = {}
    for name, runs in results.items():
        ok = [r for r in runs if "gen_tps" in r]
        if not ok:
            summary[name] = runs[-1]
            print(f"{name:>10}: {runs[-1]}")
            continue
        summary[name] = {
            "gen_tps": round(statistics.median(r["gen_tps"] for r in ok), 1),
            "prompt_tps": round(statistics.median(r["prompt_tps"] for r in ok), 1),
            "runs": len(ok),
        }
        info = ok[0]["system_info"]
        print(
            f"{name:>10}: generation {summary[name]['gen_tps']} tok/s, prompt "
            f"{summary[name]['prompt_tps']} tok/s ({len(ok)} runs) | {info}"
        )
    base = summary["installed"]
    targets = {
        "installed_build_runs": {
            "value": "gen_tps" in base,
            "target": "== true",
            "met": "gen_tps" in base,
        }
    }
    for name, result in summary.items():
        if name != "installed" and "gen_tps" in result and "gen_tps" in base:
            result["gen_ratio_to_installed"] = round(result["gen_tps"] / base["gen_tps"], 3)
            result["prompt_ratio_to_installed"] = round(
                result["prompt_tps"] / base["prompt_tps"], 3
            )
    print(json.dumps({"builds": summary, "targets": targets}))


if __name__ == "__main__":
    main()
