import json

from rolecall.rundir import RunDir, text_hash


def test_manifest_records_models_prompts_counts_and_each_start(tmp_path):
    run = RunDir(tmp_path / "run", "detox run", {"n": [0, 3]})
    run.record_model("generator", "llamacpp:embedded/gemma")
    run.record_prompt("rewrite", "{# form: completion #}\n문장: {{ s }}")
    run.record_stage("generate", {"candidates": 10}, {"calls": 10})
    RunDir(tmp_path / "run", "detox run", {"n": [0, 3]}).record_stage(
        "generate", {"candidates": 10}, {"calls": 0})
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["models"]["generator"] == "llamacpp:embedded/gemma"
    assert manifest["prompts"]["rewrite"] == text_hash("{# form: completion #}\n문장: {{ s }}")
    assert manifest["counts"] == {"candidates": 10}
    assert [r["stages"]["generate"]["llm"]["calls"] for r in manifest["runs"]] == [10, 0]
    assert manifest["config"] == {"detox run": {"n": [0, 3]}}
