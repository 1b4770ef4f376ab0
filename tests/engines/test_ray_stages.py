"""The generation stages on the ray engine write what the local engine writes (#18).

``kda generate --engine ray``, ``kda run`` with ``engine: ray`` in its config and
``dialogues generate --engine ray``, on
the fake backend and the session's local Ray cluster (``conftest.ray_cluster``): the same
candidates (compared sorted by id), the same manifest counts, a resumed run that asks only
for what is missing, and a rerun with no call at all. The engine is no part of the run's
config: a directory started on one engine is resumed on the other.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rolecall.cli.app import app
from rolecall.jsonl import read_jsonl
from tests.cli_runs import last_run_stats
from tests.engines.ray_runs import RAY, generate, manifest, records, write_sentences
from tests.paths import REPO

COMMENTS = [
    "회의 또 취소냐 ㅋㅋ 윗분들 땡땡이 오지네",
    "주식 떡락 개미들 곡소리 ㅋㅋ",
    "날씨 좋다고 놀러가는 틀딱들 ㅉㅉ",
    "택배 또 늦냐 기사님 잠수 타셨네",
    "점심 메뉴 실화냐 ㅋㅋㅋㅋ",
]


def candidates(run: Path) -> list[dict]:
    return records(run / "candidates.jsonl", lambda r: r["provenance"]["candidate_id"])


def test_kda_generate_on_ray_writes_the_local_candidates(ray_cluster, tmp_path):
    sentences = write_sentences(tmp_path)
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    local_stats = generate(sentences, local)

    # a run stopped after 8 sentences, then resumed: only the 12 missing rewrites are asked
    assert generate(sentences, on_ray, *RAY, "--limit", "8")["calls"] == 8
    ray_stats = generate(sentences, on_ray, *RAY)
    assert ray_stats["calls"] == 12 and local_stats["calls"] == 20

    assert len(candidates(local)) == 20
    assert candidates(on_ray) == candidates(local)
    assert records(on_ray / "rejected_candidates.jsonl", lambda r: r["id"]) == records(
        local / "rejected_candidates.jsonl", lambda r: r["id"]
    )
    assert manifest(on_ray)["counts"] == manifest(local)["counts"]
    assert manifest(on_ray)["models"] == manifest(local)["models"] == {"generator": "fake:fake-x"}
    assert manifest(on_ray)["prompts"] == manifest(local)["prompts"]
    assert manifest(on_ray)["config"] == manifest(local)["config"]  # the engine is not in it

    # run again, on either engine: every candidate is written, nothing is asked again
    assert generate(sentences, on_ray, *RAY)["calls"] == 0
    assert generate(sentences, local, *RAY)["calls"] == 0
    assert candidates(on_ray) == candidates(local)


def test_failed_rewrites_on_ray_stop_the_stage_as_locally(ray_cluster, tmp_path):
    sentences = write_sentences(tmp_path, 5)
    failed = []
    for run, extra in ((tmp_path / "local", ()), (tmp_path / "ray", RAY)):
        args = ["kda", "generate", "--sentences", f"{sentences}:Q", "--ns", "0", "-m"]
        args += ["fake:x?permanent=true", "--no-progress", "--out", str(run), *extra]
        result = CliRunner().invoke(app, [*args, "--cache", str(run / "cache.sqlite")])
        assert result.exit_code != 0 and "5 LLM calls failed" in str(result.exception)
        assert candidates(run) == []
        assert manifest(run)["counts"]["failed"] == 5
        failed.append(list(read_jsonl(run / "generate.failures.jsonl")))
    assert [f["model"] for f in failed[1]] == [f["model"] for f in failed[0]] == ["fake:fake-x"] * 5


def write_config(folder: Path, run: str, **top) -> Path:
    (folder / "comments.txt").write_text("\n".join(COMMENTS) + "\n", encoding="utf-8")
    write_sentences(folder, 12)
    config = {
        "out": run,
        "model": "fake:x",  # generator and default judge: the filters' LLM judges
        "cache": f"{run}.sqlite",
        "slang": {"index": "index", "corpora": ["comments.txt"]},
        "sentences": {"path": "neutral.csv:Q"},
        "generate": {"ns": [0, 3]},
        "export": {"formats": ["csv"]},
        "geval": {"enabled": False},
        **top,
    }
    path = folder / f"{run}.yaml"
    path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")  # JSON is YAML
    return path


def kda_run(config: Path) -> dict:
    result = CliRunner().invoke(app, ["kda", "run", str(config), "--no-progress"])
    assert result.exit_code == 0, result.output
    return last_run_stats(config.parent / json.loads(config.read_text())["out"], "generate")


def test_kda_run_with_engine_ray_in_the_config(ray_cluster, tmp_path):
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    assert kda_run(write_config(tmp_path, "local"))["calls"] == 24  # 12 sentences x 2 n
    config = write_config(tmp_path, "ray", engine="ray", workers=2)
    assert kda_run(config)["calls"] == 24

    assert candidates(on_ray) == candidates(local)
    with_comments = [c for c in candidates(on_ray) if c["provenance"]["n"] == 3]
    assert with_comments and all(c["provenance"]["comment_ids"] for c in with_comments)
    assert records(on_ray / "pairs.jsonl", lambda r: r["provenance"]["candidate_id"]) == records(
        local / "pairs.jsonl", lambda r: r["provenance"]["candidate_id"]
    )
    assert (on_ray / "retention.json").read_bytes() == (local / "retention.json").read_bytes()
    csv = [(run / "kda.csv").read_text(encoding="utf-8").splitlines() for run in (on_ray, local)]
    assert sorted(csv[0]) == sorted(csv[1])
    assert manifest(on_ray)["counts"] == manifest(local)["counts"]
    assert manifest(on_ray)["models"] == manifest(local)["models"]
    settings = [manifest(run)["config"]["kda run"] for run in (on_ray, local)]
    assert settings[0] == settings[1]  # out, cache and the engine are not part of it
    assert not {"engine", "workers", "ray_address"} & set(settings[0])

    # again on ray: nothing is asked; then on the local engine: the same run, not refused
    assert kda_run(config)["calls"] == 0
    assert kda_run(write_config(tmp_path, "ray"))["calls"] == 0
    assert len(manifest(on_ray)["runs"]) == 3


def dialogues(run: Path, *extra: str):
    carecall = REPO / "examples" / "carecall"
    args = ["dialogues", "generate", "--spec", str(carecall / "spec.yaml"), "--examples"]
    args += [str(carecall / "dialogues.jsonl"), "-m", "fake:x", "--seed", "4", "--no-progress"]
    args += ["--out", str(run), "--cache", str(run / "cache.sqlite"), *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return last_run_stats(run, "generate")


def test_dialogues_generate_on_ray_writes_the_local_dialogues(ray_cluster, tmp_path):
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    assert dialogues(local, "-n", "20")["calls"] == 20
    assert dialogues(on_ray, "-n", "20", *RAY)["calls"] == 20

    for name in ("dialogues.jsonl", "rejected.jsonl"):
        found = [records(run / name, lambda r: r["id"]) for run in (on_ray, local)]
        assert found[0] == found[1], name
    # the fake model writes no speaker tags: every generation is a rejected one, with why
    assert len(records(on_ray / "rejected.jsonl", lambda r: r["id"])) == 20
    assert manifest(on_ray)["counts"] == manifest(local)["counts"]
    assert manifest(on_ray)["models"] == manifest(local)["models"] == {"generator": "fake:fake-x"}
    assert manifest(on_ray)["config"] == manifest(local)["config"]

    assert dialogues(on_ray, "-n", "20", *RAY)["calls"] == 0
