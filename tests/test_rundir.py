import json
from dataclasses import dataclass, field

import pytest

from rolecall.errors import ChangedSettings, InputFileError
from rolecall.rundir import RunDir, text_hash


def test_manifest_records_models_prompts_counts_and_each_start(tmp_path):
    run = RunDir(tmp_path / "run", "kda run", {"n": [0, 3]})
    run.record_model("generator", "llamacpp:embedded/gemma")
    run.record_prompt("rewrite", "{# form: completion #}\n문장: {{ s }}")
    run.record_stage("generate", {"candidates": 10}, {"calls": 10})
    RunDir(tmp_path / "run", "kda run", {"n": [0, 3]}).record_stage(
        "generate", {"candidates": 10}, {"calls": 0}
    )
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["models"]["generator"] == "llamacpp:embedded/gemma"
    assert manifest["prompts"]["rewrite"] == text_hash("{# form: completion #}\n문장: {{ s }}")
    assert manifest["counts"] == {"candidates": 10}
    assert [r["stages"]["generate"]["llm"]["calls"] for r in manifest["runs"]] == [10, 0]
    assert manifest["config"] == {"kda run": {"n": [0, 3]}}


def test_a_resumed_command_must_keep_its_settings(tmp_path):
    from rolecall.errors import ConfigError

    RunDir(tmp_path, "kda generate", {"ns": (0, 3), "seed": 0, "concurrency": 8})
    (tmp_path / "candidates.jsonl").write_text("{}\n", encoding="utf-8")  # records made
    # the same settings (a tuple saved as a list), another concurrency and cache: resumes
    RunDir(
        tmp_path,
        "kda generate",
        {"ns": [0, 3], "seed": 0, "concurrency": 2, "cache": "/elsewhere"},
    )
    with pytest.raises(ConfigError, match=r"\(ns, seed changed\)") as caught:
        RunDir(tmp_path, "kda generate", {"ns": [0, 5], "seed": 1})
    assert "manifest.json, config.kda generate" in caught.value.fix
    RunDir(tmp_path, "kda filter", {"samples": 3})  # another command: its own settings
    RunDir(tmp_path, "kda export", {"formats": ["csv"]}, check_config=False)
    RunDir(tmp_path, "kda export", {"formats": ["hf"]}, check_config=False)


def test_paths_are_stored_relative_to_the_run_and_resume_from_another_folder(tmp_path, monkeypatch):
    inputs = tmp_path / "project" / "inputs"
    inputs.mkdir(parents=True)
    (inputs / "spec.yaml").write_text("name: x", encoding="utf-8")
    (inputs / "rows.csv").write_text("text\n가\n", encoding="utf-8")
    config = {
        "spec": str(inputs / "spec.yaml"),  # absolute, as a config file's loader gives it
        "sentences": {"path": "inputs/rows.csv:text"},  # typed, with its column
        "model": "embedded",
        "judges": ["rules:carecall", "gguf:models/judge.gguf"],
    }
    monkeypatch.chdir(tmp_path / "project")
    run = RunDir("runs/r1", "kda run", config)
    stored = json.loads(run.file("manifest.json").read_text())["config"]["kda run"]
    assert stored == {
        "spec": "../../inputs/spec.yaml",
        "sentences": {"path": "../../inputs/rows.csv:text"},
        "model": "embedded",
        "judges": ["rules:carecall", "gguf:models/judge.gguf"],
    }
    # the same files typed from another working directory: the same settings, resumed
    monkeypatch.chdir(inputs)
    RunDir("../runs/r1", "kda run", {**config, "sentences": {"path": "rows.csv:text"}})
    # another file is another setting (once the run has made something)
    (tmp_path / "project" / "runs" / "r1" / "candidates.jsonl").write_text("{}\n", "utf-8")
    (inputs / "other.csv").write_text("text\n나\n", encoding="utf-8")
    with pytest.raises(ChangedSettings, match=r"\(sentences changed\)"):
        RunDir("../runs/r1", "kda run", {**config, "sentences": {"path": "other.csv:text"}})


def test_a_manifest_written_with_typed_or_absolute_paths_still_resumes(tmp_path, monkeypatch):
    (tmp_path / "spec.yaml").write_text("name: x", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for typed in ("spec.yaml", str(tmp_path / "spec.yaml")):
        run = tmp_path / f"run-{len(typed)}"
        run.mkdir()
        manifest = {"command": "dialogues run", "runs": [], "config": {}}
        manifest["config"]["dialogues run"] = {"spec": typed}  # as rolecall stored it before
        (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        RunDir(run, "dialogues run", {"spec": "spec.yaml"})


def test_a_run_made_before_the_kda_commands_were_named_so_resumes_under_the_new_name(tmp_path):
    """#51: 'detox generate' (as older manifests name it) is a kda run, its settings kept."""
    from rolecall.errors import ConfigError

    RunDir(tmp_path, "detox generate", {"ns": [0, 3], "seed": 0})
    (tmp_path / "candidates.jsonl").write_text("{}\n", encoding="utf-8")
    RunDir(tmp_path, "kda generate", {"ns": [0, 3], "seed": 0})  # the same kind, resumed
    with pytest.raises(ConfigError, match=r"\(seed changed\)"):
        RunDir(tmp_path, "kda generate", {"ns": [0, 3], "seed": 1})
    with pytest.raises(InputFileError, match="holds a kda run"):
        RunDir(tmp_path, "dialogues run", {})


def test_a_directory_of_another_kind_of_run_is_refused_and_kept(tmp_path):
    RunDir(tmp_path / "d", "dialogues run", {"seed": 0})
    before = (tmp_path / "d" / "manifest.json").read_text()
    with pytest.raises(InputFileError, match="holds a dialogues run") as caught:
        RunDir(tmp_path / "d", "kda filter", {})
    assert "--out" in caught.value.fix
    assert (tmp_path / "d" / "manifest.json").read_text() == before
    RunDir(tmp_path / "d", "dialogues judge", {})  # the same kind: a later stage of it
    RunDir(tmp_path / "d", "llm batch", {})  # a batch of calls may be kept beside any run


@pytest.mark.parametrize("where", ["file", "file/below"])
def test_a_run_directory_that_is_a_file_is_a_clear_error(tmp_path, where):
    (tmp_path / "file").write_text("keep me", encoding="utf-8")
    with pytest.raises(InputFileError, match="is a file") as caught:
        RunDir(tmp_path / where, "dialogues run", {})
    assert "new directory" in caught.value.fix
    assert (tmp_path / "file").read_text(encoding="utf-8") == "keep me"  # nothing lost


def test_a_broken_manifest_is_a_clear_error(tmp_path):
    from rolecall.errors import InputFileError

    (tmp_path / "manifest.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InputFileError, match="not a rolecall run manifest"):
        RunDir(tmp_path, "kda run")


@dataclass
class _Stats:
    calls: int = 0
    failed_items: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"calls": self.calls, "failed_items": list(self.failed_items)}


@dataclass
class _Model:
    model_id: str
    stats: _Stats = field(default_factory=_Stats)


def test_finish_stage_records_the_calls_since_the_start_and_raises_on_failures(tmp_path):
    from rolecall.errors import BatchFailed

    run = RunDir(tmp_path, "kda filter")
    judge_a, judge_b = _Model("a", _Stats(calls=5)), _Model("b")
    before = [judge_a.stats.as_dict(), judge_b.stats.as_dict()]
    judge_a.stats.calls, judge_b.stats.calls = 8, 4
    run.finish_stage("filter", {"pairs": 2}, [judge_a, judge_b], before)
    assert run.manifest["stages"]["filter"]["llm"] == {"calls": 3 + 4}
    assert (tmp_path / "filter.failures.jsonl").read_text(encoding="utf-8") == ""
    judge_b.stats.failed_items.append({"request": 1, "attempts": 5, "error": "HTTP 503"})
    with pytest.raises(BatchFailed, match="1 LLM calls failed.*HTTP 503"):
        run.finish_stage("filter", {"pairs": 2}, [judge_a, judge_b], before)
    failures = [
        json.loads(line)
        for line in (tmp_path / "filter.failures.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert failures == [{"model": "b", "request": 1, "attempts": 5, "error": "HTTP 503"}]
    assert run.manifest["stages"]["filter"]["counts"] == {"pairs": 2}  # recorded first


def test_an_absolute_path_a_stage_records_is_written_relative_to_the_run(tmp_path):
    (tmp_path / "data").mkdir()
    run = RunDir(tmp_path / "runs" / "r", "kda run", {})
    run.manifest["judge_defaults"] = {"implicit": {"data": str(tmp_path / "data")}}
    run.manifest["slang_index"] = {"path": "/no/such/index"}  # not there: kept as given
    run.save()
    saved = json.loads(run.file("manifest.json").read_text())
    assert saved["judge_defaults"]["implicit"]["data"] == "../../data"
    assert saved["slang_index"]["path"] == "/no/such/index"
    assert run.manifest["judge_defaults"]["implicit"]["data"] == str(tmp_path / "data")


def test_a_run_that_made_nothing_may_start_again_with_other_settings(tmp_path):
    RunDir(tmp_path / "r", "dialogues generate", {"examples": "empty.jsonl"})  # then failed
    RunDir(tmp_path / "r", "dialogues generate", {"examples": "real.jsonl"})  # taken
    saved = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert saved["config"]["dialogues generate"] == {"examples": "real.jsonl"}
    (tmp_path / "r" / "dialogues.jsonl").write_text("{}\n", encoding="utf-8")
    with pytest.raises(ChangedSettings):
        RunDir(tmp_path / "r", "dialogues generate", {"examples": "other.jsonl"})


def test_a_run_directory_that_cannot_be_made_is_a_clear_error():
    with pytest.raises(InputFileError, match="cannot be made") as caught:
        RunDir("/proc/rolecall-run", "dialogues run", {})
    assert "can write" in caught.value.fix
