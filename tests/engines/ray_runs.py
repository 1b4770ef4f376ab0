"""The engine tests' runs and what they read back: the flags that put a command on Ray
(``RAY``); ``kda generate`` on sentences written here (``write_sentences``, ``generate``)
and ``llm batch`` on prompts written here (``write_prompts``, ``batch``); a run's records
(``records``, ``rows``), manifest and counts (``manifest``, ``counts``)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rolecall.cli.app import app
from rolecall.jsonl import read_jsonl
from tests.cli_runs import last_run_stats

RAY = ("--engine", "ray", "--workers", "2")
SUBJECTS = ["회의가", "주식이", "날씨가", "버스가", "점심이", "택배가", "수업이"]
ENDINGS = ["취소되었습니다.", "늦어졌어요.", "좋네요."]


def write_sentences(folder: Path, count: int = 20) -> Path:
    lines = [f"{SUBJECTS[i % 7]} {i}번째로 {ENDINGS[i % 3]}" for i in range(count)]
    path = folder / "neutral.csv"
    path.write_text("Q,A\n" + "".join(f"{line},네\n" for line in lines), encoding="utf-8")
    return path


def records(path: Path, key) -> list[dict]:
    found = list(read_jsonl(path)) if path.exists() else []
    assert len({key(r) for r in found}) == len(found), f"duplicated records in {path}"
    return sorted(found, key=key)


def manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text(encoding="utf-8"))


def generate(sentences: Path, run: Path, *extra: str):
    args = ["kda", "generate", "--sentences", f"{sentences}:Q", "--ns", "0", "--seed", "2"]
    args += ["-m", "fake:x", "--no-progress", "--out", str(run), *extra]
    result = CliRunner().invoke(app, [*args, "--cache", str(run / "cache.sqlite")])
    assert result.exit_code == 0, result.output
    return last_run_stats(run, "generate")


def write_prompts(path: Path, count: int) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(count):
            row = {"id": f"p{i}", "prompt": f"{i}번 인사말: 안녕하세요,"}
            if i % 3 == 0:
                row = {"id": f"p{i}", "messages": [{"role": "user", "content": f"{i}번 질문"}]}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def batch(prompts: Path, run: Path, model: str, *extra: str, cache: Path | None = None):
    args = ["llm", "batch", str(prompts), "-m", model, "-n", "2", "--seed", "3"]
    args += ["--logprobs", "2", "--no-progress", "--out", str(run / "out.jsonl")]
    args += ["--cache", str(cache or run / "cache.sqlite"), *extra]
    return CliRunner().invoke(app, args)


def rows(path: Path) -> list[dict]:
    found = list(read_jsonl(path))
    keys = [(r["id"], r["sample"]) for r in found]
    assert len(keys) == len(set(keys)), "duplicated outputs"
    return sorted(found, key=lambda r: (r["id"], r["sample"]))


def counts(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text(encoding="utf-8"))["counts"]
