"""`dialogues run` on a scripted backend: config loading, the four stages, resume, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rolecall.errors import ConfigError
from rolecall.jsonl import read_jsonl
from rolecall.llm import LLM, Cache, load_backend, registry
from rolecall.pipelines.dialogues import load_dialogue_config, run_dialogues
from rolecall.records import Dialogue, Example
from tests.cli_runs import run_cli
from tests.paths import REPO
from tests.pipelines.dialogue_script import ENTRY

PLUGINS = {"ROLECALL_PLUGINS": "tests.fakes,tests.pipelines.dialogue_script_plugin"}


@pytest.fixture(autouse=True)
def scripted_backend(monkeypatch):
    """Registered for this test only (the registry is restored afterwards)."""
    monkeypatch.setitem(registry._REGISTRY, "dialogue-script", ENTRY)


def write_config(tmp_path: Path, **changes) -> Path:
    config = {
        "spec": str(REPO / "examples" / "carecall" / "spec.yaml"),
        "examples": str(REPO / "examples" / "carecall" / "dialogues.jsonl"),
        "out": "run",
        "model": "dialogue-script:x",
        "cache": "cache.sqlite",
        "generate": {"count": 3},
        **changes,
    }
    path = tmp_path / "pipeline.yaml"
    path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")  # JSON is YAML
    return path


def run(path: Path, until: str = "stats"):
    config = load_dialogue_config(path)
    opened: list[LLM] = []

    def load(model):
        opened.append(LLM(load_backend(model), Cache(Path(config.cache))))
        return opened[-1]

    lines: list[str] = []
    results = run_dialogues(config, load, until, progress=False, say=lines.append)
    return results, opened, lines


def test_the_example_config_is_valid_and_its_paths_resolve():
    config = load_dialogue_config(REPO / "examples" / "carecall" / "pipeline.yaml")
    assert Path(config.spec).is_file() and Path(config.examples).is_file()
    assert Path(config.out).is_absolute()


def test_the_whole_run_writes_every_file_and_a_second_run_makes_no_call(tmp_path):
    results, opened, lines = run(write_config(tmp_path))
    out = tmp_path / "run"
    assert [line.split(":")[0] for line in lines] == ["generate", "judge", "export", "stats"]
    assert results["generate"]["accepted"] == 3
    # every dialogue is judged up to its third system turn, the one that says "저도"
    judge = results["judge"]
    assert (judge["dialogues"], judge["judged_turns"], judge["out_of_bounds"]) == (3, 9, 3)
    examples = list(read_jsonl(out / "examples.jsonl", Example))
    assert [e.label for e in examples] == ["positive", "positive", "negative"] * 3
    assert {e.category for e in examples if e.label == "negative"} == {"wrong persona"}
    judged = list(read_jsonl(out / "judged.jsonl", Dialogue))
    flags = [t.out_of_bounds for t in judged[0].turns if t.role == "system"]
    assert flags == [False, False, True, None]  # never judged past the first OOB turn
    carecall = json.loads((out / "judged.carecall.json").read_text(encoding="utf-8"))
    assert len(carecall) == 3
    stats = json.loads((out / "stats.json").read_text(encoding="utf-8"))
    assert stats["generated"]["eojeol"]["dialogues"] == 3
    assert stats["generated"]["eojeol"]["negative_examples"] == 3
    assert stats["examples"]["eojeol"]["dialogues"] == 39  # the shipped example dialogues
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert set(manifest["stages"]) == {"generate", "judge", "export", "stats"}
    judge_calls = manifest["stages"]["judge"]["llm"]["calls"]
    assert judge_calls > 0 and sum(llm.backend.calls for llm in opened) == 3 + judge_calls
    before = {
        name: (out / name).read_bytes()
        for name in ("dialogues.jsonl", "verdicts.jsonl", "judged.jsonl", "examples.jsonl")
    }
    _, opened, _ = run(write_config(tmp_path))
    assert sum(llm.backend.calls for llm in opened) == 0  # all from the cache and the records
    assert {name: (out / name).read_bytes() for name in before} == before


def test_until_stops_early_and_a_changed_setting_is_refused(tmp_path):
    results, _, _ = run(write_config(tmp_path), until="generate")
    assert set(results) == {"generate"} and not (tmp_path / "run" / "judged.jsonl").exists()
    with pytest.raises(ConfigError, match=r"\(generate changed\)"):
        run(write_config(tmp_path, generate={"count": 3, "seed": 9}))
    # concurrency and the cache do not change the records: the run resumes
    results, _, _ = run(write_config(tmp_path, concurrency=2), until="judge")
    assert results["judge"]["dialogues"] == 3
    with pytest.raises(ConfigError, match="unknown stage"):
        run(write_config(tmp_path), until="train")


def test_step_commands_write_the_same_files_as_the_run(tmp_path):
    run(write_config(tmp_path))
    steps = tmp_path / "steps"
    common = ["-m", "dialogue-script:x", "--no-progress", "--cache", str(tmp_path / "c.sqlite")]
    spec = REPO / "examples" / "carecall" / "spec.yaml"
    result = run_cli(
        "dialogues",
        "generate",
        "--spec",
        str(spec),
        "--examples",
        str(REPO / "examples" / "carecall" / "dialogues.jsonl"),
        "-n",
        "3",
        "--out",
        str(steps),
        *common,
        env_extra=PLUGINS,
    )
    assert result.returncode == 0, result.stderr
    result = run_cli(
        "dialogues",
        "judge",
        "--spec",
        str(spec),
        "--dialogues",
        str(steps / "dialogues.jsonl"),
        "--out",
        str(steps),
        *common,
        env_extra=PLUGINS,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1])["negative_examples"] == 3
    # generations are written as they finish (concurrently) and the later files follow
    # that order: the same records, byte for byte, in any order
    for name in ("dialogues.jsonl", "judged.jsonl", "examples.jsonl"):
        made = [
            sorted((run / name).read_text(encoding="utf-8").splitlines())
            for run in (steps, tmp_path / "run")
        ]
        assert made[0] and made[0] == made[1], name


def test_the_run_command_prints_each_stage_and_refuses_an_unknown_one(tmp_path):
    config = write_config(tmp_path)
    result = run_cli("dialogues", "run", str(config), "--no-progress", env_extra=PLUGINS)
    assert result.returncode == 0, result.stderr
    stages = [line.split(":")[0] for line in result.stdout.splitlines()]
    assert stages == ["generate", "judge", "export", "stats"]
    assert "script-x:" in result.stderr  # the model's statistics
    result = run_cli("dialogues", "run", str(config), "--until", "train", env_extra=PLUGINS)
    assert result.returncode == 2 and "unknown stage 'train'" in result.stderr


def test_a_panel_of_an_llm_and_a_trained_judge_from_the_config(tmp_path, monkeypatch):
    from tests.pipelines import fake_judges

    fake_judges.install(monkeypatch)
    (tmp_path / "judge").mkdir()
    path = write_config(
        tmp_path, judge={"model": ["dialogue-script:x", "classifier:judge"], "samples": 1}
    )
    results, opened, lines = run(path, until="judge")
    out = tmp_path / "run"
    votes = list(read_jsonl(out / "verdicts.jsonl"))
    assert {(v["kind"], v["model"]) for v in votes} == {
        ("llm", "dialogue-script:script-x"),
        ("classifier", f"classifier:{tmp_path / 'judge'}"),
    }
    assert {v["score"] for v in votes if v["kind"] == "classifier"} <= {0.25, 0.75}
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [j["kind"] for j in manifest["judges"]["out_of_bounds"]] == ["llm", "classifier"]
    assert results["judge"]["out_of_bounds"] >= 1 and "classifier" in lines[-1]
    before = (out / "verdicts.jsonl").read_bytes()
    _, opened, _ = run(path, until="judge")
    assert sum(llm.backend.calls for llm in opened) == 0
    assert (out / "verdicts.jsonl").read_bytes() == before


def test_a_json_list_of_rolecall_dialogues_reads_as_dialogues(tmp_path):
    from rolecall.errors import InputFileError
    from rolecall.pipelines.dialogues import read_dialogues

    shots = list(read_jsonl(REPO / "examples" / "carecall" / "dialogues.jsonl", Dialogue))
    listed = tmp_path / "dialogues.json"
    listed.write_text(
        json.dumps([d.model_dump(mode="json") for d in shots], ensure_ascii=False),
        encoding="utf-8",
    )
    assert read_dialogues(listed) == shots
    broken = [d.model_dump(mode="json") for d in shots]
    broken[1]["turns"] = "not a list"
    listed.write_text(json.dumps(broken, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(InputFileError, match=r"dialogues\[1\] is not a valid Dialogue"):
        read_dialogues(listed)
