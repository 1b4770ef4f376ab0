"""Every LLM stage of both pipelines killed with SIGKILL mid-way and resumed, on the fake
backends: a real ``rolecall ... run`` subprocess is killed once its stage's output file
has a few records, the same command then finishes in this process, and the run directory
must equal an uninterrupted run's, with no finished call asked again (the cache's count
equals the reference's, and the resumed run asks exactly the calls that were not cached).

Cheap (seconds) where the real model takes minutes: tests/integration/ keeps one real-model
kill-and-resume per pipeline.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rolecall.llm import registry
from tests.cli_runs import cached_calls, keyed, kill_when, last_run_calls, rolecall, run_cli
from tests.paths import REPO
from tests.pipelines.dialogue_script import ENTRY

FAKES = {"ROLECALL_PLUGINS": "tests.fakes,tests.pipelines.dialogue_script_plugin"}


@pytest.fixture(autouse=True)
def scripted_backend(monkeypatch):
    """The scripted dialogue backend in this process too (the registry is restored after)."""
    monkeypatch.setitem(registry._REGISTRY, "dialogue-script", ENTRY)


SENTENCES = [f"오늘 {i}번 회의가 취소되었습니다." for i in range(1, 9)]
COMMENTS = ["회의 또 취소냐 ㅋㅋ 윗분들 땡땡이 오지네", "주식 떡락 개미들 곡소리 ㅋㅋ"]


def kill_in_each_stage(
    pipeline: str, config: Path, run: Path, watches: list[str], reference: Path
) -> None:
    """Kill ``rolecall PIPELINE run CONFIG`` once each watched file has a few records (a
    new process for each: the earlier stages come back from the run directory), then run it
    to the end in this process."""
    args = (pipeline, "run", str(config), "--no-progress")
    total = cached_calls(reference / "cache.sqlite")
    cached = 0
    for watch in watches:
        kill_when(rolecall(*args, env_extra=FAKES), run / watch, 3, limit=120)
        before, cached = cached, cached_calls(run / "cache.sqlite")
        assert before < cached < total, (watch, before, cached, total)  # work was kept
    resumed = run_cli(*args, env_extra=FAKES)
    assert resumed.returncode == 0, resumed.stderr
    assert last_run_calls(run) == total - cached  # only what was not finished
    assert cached_calls(run / "cache.sqlite") == total


def write_kda(root: Path, name: str, model: str) -> Path:
    (root / "comments.txt").write_text("\n".join(COMMENTS) + "\n", encoding="utf-8")
    (root / "neutral.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    config = {
        "out": name,
        "model": model,
        "cache": f"{name}/cache.sqlite",
        "concurrency": 1,
        "slang": {"index": "index", "corpora": ["comments.txt"]},
        "sentences": {"path": "neutral.txt"},
        "generate": {"ns": [0, 2]},
        "export": {"formats": ["csv"]},
        "geval": {"criteria": ["overall", "consistency"], "limit": 4},
    }
    path = root / f"kda-{name}.yaml"
    path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def kda_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("kda")
    result = run_cli("kda", "run", str(write_kda(root, "ref", "fake:x")), "--no-progress")
    assert result.returncode == 0, result.stderr
    return root


@pytest.mark.slow
def test_a_kda_run_killed_in_each_stage_resumes_to_the_same_dataset(tmp_path):
    reference = run_cli("kda", "run", str(write_kda(tmp_path, "ref", "fake:x")), "--no-progress")
    assert reference.returncode == 0, reference.stderr
    ref, run = tmp_path / "ref", tmp_path / "killed"
    watches = [
        "candidates.jsonl",
        "verdicts_consistency.jsonl",
        "verdicts_implicit.jsonl",
        "geval_votes.jsonl",
    ]
    kill_in_each_stage(
        "detox", write_kda(tmp_path, "killed", "fake:x?delay=0.02"), run, watches, ref
    )
    candidate = lambda r: r["provenance"]["candidate_id"]  # noqa: E731
    assert keyed(run / "candidates.jsonl", candidate) == keyed(ref / "candidates.jsonl", candidate)
    vote = lambda r: (r["item_id"], r["judge"], r["model"])  # noqa: E731
    for verdicts in ("verdicts_consistency.jsonl", "verdicts_implicit.jsonl", "geval_votes.jsonl"):
        assert keyed(run / verdicts, vote) == keyed(ref / verdicts, vote), verdicts
    for same in ("pairs.jsonl", "kda.csv", "retention.json", "geval.json"):
        assert (run / same).read_bytes() == (ref / same).read_bytes(), same


def write_dialogues(root: Path, name: str, model: str) -> Path:
    config = {
        "spec": str(REPO / "examples" / "carecall" / "spec.yaml"),
        "examples": str(REPO / "examples" / "carecall" / "dialogues.jsonl"),
        "out": name,
        "model": model,
        "cache": f"{name}/cache.sqlite",
        "concurrency": 1,
        "generate": {"count": 12},
    }
    path = root / f"dialogues-{name}.yaml"
    path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    return path


def test_a_dialogues_run_killed_in_each_stage_resumes_to_the_same_examples(tmp_path):
    config = write_dialogues(tmp_path, "ref", "dialogue-script:x")
    reference = run_cli("dialogues", "run", str(config), "--no-progress", env_extra=FAKES)
    assert reference.returncode == 0, reference.stderr
    ref, run = tmp_path / "ref", tmp_path / "killed"
    config = write_dialogues(tmp_path, "killed", "dialogue-script:x?delay=0.05")
    kill_in_each_stage("dialogues", config, run, ["dialogues.jsonl", "verdicts.jsonl"], ref)
    dialogue = lambda r: r["id"]  # noqa: E731
    assert keyed(run / "dialogues.jsonl", dialogue) == keyed(ref / "dialogues.jsonl", dialogue)
    vote = lambda r: (r["item_id"], r["judge"])  # noqa: E731
    assert keyed(run / "verdicts.jsonl", vote) == keyed(ref / "verdicts.jsonl", vote)
    for same in ("judged.jsonl", "examples.jsonl"):
        assert (run / same).read_bytes() == (ref / same).read_bytes(), same
