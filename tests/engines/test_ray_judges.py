"""The judging stages on the ray engine write what the local engine writes (#18).

``kda filter --engine ray``, ``dialogues judge --engine ray``, ``eval geval --engine
ray`` and the judge stages of ``kda run`` / ``dialogues run`` with ``engine: ray``, on
the fake backend (score mode: log-likelihoods cross the process line) and the session's
local Ray cluster (``conftest.ray_cluster``). Only the LLM calls run on Ray: the driver
parses, votes and writes the verdict files, so the same verdicts (compared sorted), the
same ``retention.json`` / ``judged.jsonl``, and a rerun on either engine asks nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from rolecall.cli.app import app
from tests.cli_runs import last_run_stats
from tests.engines.ray_runs import RAY, generate, manifest, records, write_sentences
from tests.paths import REPO

CARECALL = REPO / "examples" / "carecall"
JUDGED = 8  # of the 39 example dialogues: enough turns to spread over both actors
SYSTEM_TURNS = 3  # each cut after its third system turn: the judge works turn by turn, one
# Ray job a turn, and a job's start-up, not the number of items, is what costs here


def first_dialogues(path: Path) -> Path:
    """The first ``JUDGED`` example dialogues, each cut after ``SYSTEM_TURNS`` system
    turns, written to ``path``."""
    lines = (CARECALL / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    cut = []
    for line in lines[:JUDGED]:
        dialogue = json.loads(line)
        system = [i for i, t in enumerate(dialogue["turns"]) if t["role"] == "system"]
        dialogue["turns"] = dialogue["turns"][: system[SYSTEM_TURNS - 1] + 1]
        cut.append(json.dumps(dialogue, ensure_ascii=False))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(cut) + "\n", encoding="utf-8")
    return path


def votes(path: Path) -> list[dict]:
    return records(path, lambda r: (r["item_id"], r["judge"], r.get("model") or ""))


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def kda_filter(run: Path, *extra: str) -> dict:
    args = ["kda", "filter", "--out", str(run), "-m", "fake:x", "--calibrate"]
    invoke(*args, "--no-progress", "--cache", str(run / "cache.sqlite"), *extra)
    return last_run_stats(run, "filter")


def test_kda_filter_on_ray_writes_the_local_verdicts(ray_cluster, tmp_path):
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    generate(write_sentences(tmp_path, 12), local)
    shutil.copytree(local, on_ray)  # the same candidates (and their cached rewrites)

    local_stats = kda_filter(local)
    ray_stats = kda_filter(on_ray, *RAY)
    assert ray_stats["calls"] == local_stats["calls"] > 0
    assert ray_stats["failures"] == 0

    for name in ("verdicts_consistency.jsonl", "verdicts_implicit.jsonl"):
        assert votes(on_ray / name) == votes(local / name), name
    assert (on_ray / "retention.json").read_bytes() == (local / "retention.json").read_bytes()
    pair_key = lambda r: r["provenance"]["candidate_id"]  # noqa: E731
    assert records(on_ray / "pairs.jsonl", pair_key) == records(local / "pairs.jsonl", pair_key)
    for key in ("counts", "models", "judges", "prompts", "config"):
        assert manifest(on_ray)[key] == manifest(local)[key], key

    # again, on either engine: every vote is cached, nothing is asked
    assert kda_filter(on_ray, *RAY)["calls"] == 0
    assert kda_filter(local, *RAY)["calls"] == 0
    assert votes(on_ray / "verdicts_implicit.jsonl") == votes(local / "verdicts_implicit.jsonl")


def dialogues_judge(run: Path, *extra: str) -> dict:
    args = ["dialogues", "judge", "--spec", str(CARECALL / "spec.yaml"), "--dialogues"]
    args += [str(first_dialogues(run.parent / "dialogues.jsonl")), "-m", "fake:x"]
    args += ["--samples", "2"]
    invoke(*args, "--out", str(run), "--no-progress", "--cache", str(run / "c.sqlite"), *extra)
    return last_run_stats(run, "judge")


def test_dialogues_judge_on_ray_writes_the_local_verdicts(ray_cluster, tmp_path):
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    local_stats = dialogues_judge(local)
    assert dialogues_judge(on_ray, *RAY)["calls"] == local_stats["calls"] > 0

    assert votes(on_ray / "verdicts.jsonl") == votes(local / "verdicts.jsonl")
    for name in ("judged.jsonl", "examples.jsonl"):
        found = [(run / name).read_text(encoding="utf-8") for run in (on_ray, local)]
        assert sorted(found[0].splitlines()) == sorted(found[1].splitlines()), name
    for key in ("counts", "models", "judges", "config"):
        assert manifest(on_ray)[key] == manifest(local)[key], key

    assert dialogues_judge(on_ray, *RAY)["calls"] == 0
    assert dialogues_judge(local)["calls"] == 0  # the ray run's cache serves the local engine


def scores(output: str) -> dict:
    """The JSON object of ``--json`` (the statistics line follows it)."""
    return json.loads(next(line for line in output.splitlines() if line.startswith("{")))


def test_eval_geval_on_ray_prints_the_local_scores(ray_cluster, tmp_path):
    pairs = tmp_path / "pairs.csv"
    lines = [f"{s} {i}번째로 왔어요.,{s} {i}번째 왔냐 ㅋㅋ" for i, s in enumerate("가나다라마")]
    pairs.write_text("neutral,implicit\n" + "\n".join(lines) + "\n", encoding="utf-8")
    args = ["eval", "geval", str(pairs), "-m", "fake:x", "--json", "--no-progress"]
    args += ["--cache", str(tmp_path / "c.sqlite")]
    local, on_ray = (scores(invoke(*args, *extra)) for extra in ((), RAY))
    assert on_ray == local
    assert local[str(pairs)]["summary"]["overall"]["scored"] == 5


def dialogues_run(folder: Path, run: str, **top) -> Path:
    config = {
        "spec": str(CARECALL / "spec.yaml"),
        "examples": str(CARECALL / "dialogues.jsonl"),
        "out": run,
        "model": "fake:x",
        "cache": f"{run}.sqlite",
        "generate": {"count": 6, "accept_unfinished": True},
        "judge": {"model": "fake:x", "samples": 2},
        **top,
    }
    path = folder / f"{run}.yaml"
    path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    # subtle: the fake model writes no speaker tags, so every generation is rejected; the
    # example dialogues stand in for finished ones, giving the judge stage turns to judge
    first_dialogues(folder / run / "dialogues.jsonl")
    invoke("dialogues", "run", str(path), "--no-progress")
    return folder / run


def test_dialogues_run_with_engine_ray_in_the_config(ray_cluster, tmp_path):
    local = dialogues_run(tmp_path, "local")
    on_ray = dialogues_run(tmp_path, "ray", engine="ray", workers=2)
    for stage in ("generate", "judge"):
        assert last_run_stats(on_ray, stage)["calls"] == last_run_stats(local, stage)["calls"] > 0
    for name in ("dialogues.jsonl", "rejected.jsonl", "judged.jsonl"):
        key = lambda r: r["id"]  # noqa: E731
        assert records(on_ray / name, key) == records(local / name, key), name
    assert votes(on_ray / "verdicts.jsonl") == votes(local / "verdicts.jsonl")
    assert manifest(on_ray)["counts"] == manifest(local)["counts"]
    settings = [manifest(run)["config"]["dialogues run"] for run in (on_ray, local)]
    assert settings[0] == settings[1]
    assert not {"engine", "workers", "ray_address"} & set(settings[0])

    dialogues_run(tmp_path, "ray", engine="ray", workers=2)
    assert last_run_stats(on_ray, "judge")["calls"] == 0
    assert last_run_stats(on_ray, "generate")["calls"] == 0
