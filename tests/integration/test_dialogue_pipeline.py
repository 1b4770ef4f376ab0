"""The role-specified dialogue pipeline on the embedded model and examples/carecall/.

generate -> judge -> export CareCall JSON -> stats, as a user runs it (real subprocesses).
Each LLM stage is also run in a second directory with its own cache, killed with SIGKILL
mid-way and resumed: its outputs must equal the uninterrupted run's and the resumed run
must make exactly the calls the killed one had not finished (none repeated).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rolecall.formats.carecall import read_carecall
from rolecall.jsonl import read_jsonl
from tests.cli_runs import cached_calls, kill_when, last_run_stats, rolecall, run_to_end
from tests.paths import REPO

# minutes of CPU work each: more than pyproject's per-test limit (900 s) on a busy machine
pytestmark = [pytest.mark.embedded, pytest.mark.timeout(3600)]

SPEC = REPO / "examples" / "carecall" / "spec.yaml"
EXAMPLES = REPO / "examples" / "carecall" / "dialogues.jsonl"
GENERATE = [
    "dialogues",
    "generate",
    "--spec",
    str(SPEC),
    "--examples",
    str(EXAMPLES),
    "-n",
    "16",
    "--max-tokens",
    "256",
    "--accept-unfinished",
    "--seed",
    "1",
    "--frequency-penalty",
    "0.5",
    "--presence-penalty",
    "0.3",
    "--no-progress",
]


def judge_args(dialogues: Path) -> list[str]:
    # the embedded model named: with no judge named it would be rules:carecall, no LLM
    return [
        "dialogues",
        "judge",
        "--spec",
        str(SPEC),
        "--dialogues",
        str(dialogues),
        "-m",
        "llamacpp:embedded",
        "--no-progress",
    ]


def keyed(path: Path, *keys: str) -> dict:
    rows = list(read_jsonl(path)) if path.exists() else []
    table = {tuple(r[k] for k in keys): r for r in rows}
    assert len(table) == len(rows), f"duplicated records in {path}"
    return table


def run_stage(args: list[str], out: Path) -> dict:
    result = run_to_end(
        *args, "--out", str(out), "--cache", str(out / "cache.sqlite"), timeout=2400
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def kill_and_resume(
    args: list[str], out: Path, watch: str, kill_at: int, stage: str, reference: Path
) -> None:
    cache = out / "cache.sqlite"
    out.mkdir(parents=True)
    kill_when(rolecall(*args, "--out", str(out), "--cache", str(cache)), out / watch, kill_at)
    finished = cached_calls(cache)
    total = last_run_stats(reference, stage)["calls"]
    assert 0 < finished < total
    run_stage(args, out)
    assert last_run_stats(out, stage)["calls"] == total - finished  # nothing asked twice


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("dialogues")
    generated = run_stage(GENERATE, root / "ref")
    assert generated["generations"] == 16 and generated["accepted"] >= 10, generated
    judged = run_stage(judge_args(root / "ref" / "dialogues.jsonl"), root / "ref")
    assert judged["dialogues"] == generated["accepted"] and judged["judged_turns"] > 0
    return root


def test_generation_killed_and_resumed_gives_the_same_dialogues(pipeline):
    resumed = pipeline / "gen-killed"
    kill_and_resume(GENERATE, resumed, "dialogues.jsonl", 3, "generate", pipeline / "ref")
    for name in ("dialogues.jsonl", "rejected.jsonl"):
        assert keyed(resumed / name, "id") == keyed(pipeline / "ref" / name, "id")


def test_judging_killed_and_resumed_gives_the_same_verdicts_and_examples(pipeline):
    resumed = pipeline / "judge-killed"
    args = judge_args(pipeline / "ref" / "dialogues.jsonl")
    kill_and_resume(args, resumed, "verdicts.jsonl", 4, "judge", pipeline / "ref")
    ref = pipeline / "ref"
    assert keyed(resumed / "verdicts.jsonl", "item_id", "judge") == keyed(
        ref / "verdicts.jsonl", "item_id", "judge"
    )
    for name in ("judged.jsonl", "examples.jsonl"):
        assert (resumed / name).read_text(encoding="utf-8") == (ref / name).read_text(
            encoding="utf-8"
        )


def test_outputs_export_and_count(pipeline, tmp_path):
    ref = pipeline / "ref"
    judged = list(read_jsonl(ref / "judged.jsonl"))
    examples = list(read_jsonl(ref / "examples.jsonl"))
    assert examples and all(e["label"] in ("positive", "negative") for e in examples)
    verdicts = list(read_jsonl(ref / "verdicts.jsonl"))
    assert all(v["parse_status"] == "parsed" and v["raw_output"] for v in verdicts)

    carecall = tmp_path / "generated.json"
    result = run_to_end("dialogues", "export-carecall", str(ref / "judged.jsonl"), str(carecall))
    assert result.returncode == 0, result.stderr
    exported = read_carecall(carecall)
    assert [d.id for d in exported] == [d["id"] for d in judged]
    assert [t.text for t in exported[0].turns] == [t["text"] for t in judged[0]["turns"]]

    result = run_to_end("dialogues", "stats", str(ref / "judged.jsonl"), str(EXAMPLES), "--json")
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    generated_stats = stats["judged.jsonl"]["eojeol"]
    assert generated_stats["dialogues"] == len(judged)
    assert generated_stats["positive_examples"] == sum(e["label"] == "positive" for e in examples)
    assert stats["dialogues.jsonl"]["eojeol"]["dialogues"] == 39
