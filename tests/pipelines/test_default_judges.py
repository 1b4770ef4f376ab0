"""The judges a pipeline uses when none is named (``pipelines/default_judges.py``).

The fake backend stands in for the embedded model: registered as ``llamacpp`` for one
test, ``llamacpp:embedded`` opens it through the real registry, so the choice sees the
embedded model's string and the run makes fake calls. Trained judges train for real on
the tiny shared-data folder of the trained-judge tests, under a private ROLECALL_HOME.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tests.fakes  # noqa: F401  (registers fake:)
from rolecall.errors import ConfigError, InputFileError
from rolecall.jsonl import read_jsonl
from rolecall.judge.out_of_bounds import JUDGE
from rolecall.llm import LLM, Cache, load_backend
from rolecall.llm.registry import BackendEntry
from rolecall.pipelines.default_judges import (
    ensure_trained,
    filter_defaults,
    is_embedded,
    out_of_bounds_default,
    trained_key,
)
from rolecall.records import Category, RoleSpec
from rolecall.train import kda_judges
from tests.cli_runs import run_cli
from tests.fakes import FakeBackend, FakeOptions, use_backend
from tests.paths import REPO
from tests.train.kda_data import write_data_dir

EMBEDDED = "llamacpp:embedded"


def write_config(root: Path, **changes) -> Path:
    """A small detox config in ``root`` (JSON is YAML): 3 sentences, n = 0 and 3."""
    comments = ["회의 또 취소냐 ㅋㅋ 윗분들 땡땡이 오지네", "주식 떡락 개미들 곡소리 ㅋㅋ"]
    (root / "comments.txt").write_text("\n".join(comments) + "\n", encoding="utf-8")
    (root / "neutral.csv").write_text(
        "Q,A\n오늘 회의가 취소되었습니다.,네\n주식이 떨어졌어요.,저런\n날씨가 좋네요.,네\n",
        encoding="utf-8",
    )
    config = {
        "out": "run",
        "model": "fake:x",
        "cache": "cache.sqlite",
        "slang": {"index": "index", "corpora": ["comments.txt"]},
        "sentences": {"path": "neutral.csv:Q"},
        "generate": {"ns": [0, 2]},  # the index holds 2 comments
        "export": {"formats": ["csv"]},
        "geval": {"enabled": False},
        **changes,
    }
    path = root / "config.yaml"
    path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    return path


def opener(cache: str):
    def load(model: str | None) -> LLM:
        return LLM(load_backend(model), Cache(Path(cache)))

    return load


def run(path: Path, until: str = "filter"):
    """``kda run`` of the config at ``path``: (results, the lines it said)."""
    from rolecall.pipelines.kda import load_kda_config, run_kda

    config = load_kda_config(path)
    lines: list[str] = []
    results = run_kda(config, opener(config.cache), until, progress=False, say=lines.append)
    return results, lines


def run_dialogues(root: Path, **changes):
    """``dialogues run`` up to the judge on the shipped spec and examples."""
    from rolecall.pipelines.dialogues import load_dialogue_config
    from rolecall.pipelines.dialogues import run_dialogues as run_them

    config = {
        "spec": str(REPO / "examples" / "carecall" / "spec.yaml"),
        "examples": str(REPO / "examples" / "carecall" / "dialogues.jsonl"),
        "out": "run",
        "cache": "cache.sqlite",
        "generate": {"count": 3},
        **changes,
    }
    path = root / "pipeline.yaml"
    path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    config = load_dialogue_config(path)
    lines: list[str] = []
    results = run_them(config, opener(config.cache), "judge", progress=False, say=lines.append)
    return results, lines


@pytest.fixture(autouse=True)
def fake_embedded(monkeypatch, tmp_path):
    """``llamacpp:`` answers with the fake backend; trained judges go to a private home."""
    use_backend(monkeypatch, "llamacpp", BackendEntry(FakeBackend, FakeOptions, "fake"))
    monkeypatch.setenv("ROLECALL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ROLECALL_MODEL", raising=False)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return write_data_dir(tmp_path_factory.mktemp("shared"))


@pytest.fixture
def trainings(monkeypatch) -> list[str]:
    """The tasks ``train_judge`` was called for (it still trains)."""
    calls: list[str] = []
    real = kda_judges.train_judge

    def counted(task, *args, **kwargs):
        calls.append(task)
        return real(task, *args, **kwargs)

    monkeypatch.setattr(kda_judges, "train_judge", counted)
    return calls


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))


def test_the_embedded_model_is_known_by_its_string(monkeypatch):
    assert is_embedded("llamacpp:embedded") and is_embedded("hf:embedded")
    assert is_embedded("llamacpp:embedded?n_ctx=4096")
    assert not is_embedded("fake:x") and not is_embedded("llamacpp:/models/big.gguf")
    assert is_embedded(None)  # the default model
    monkeypatch.setenv("ROLECALL_MODEL", "fake:x")
    assert not is_embedded(None)


def test_kda_run_on_the_embedded_model_filters_with_trained_judges(tmp_path, data_dir):
    path = write_config(tmp_path, model=EMBEDDED, filter={"judge_data": str(data_dir)})
    results, lines = run(path)
    out = tmp_path / "run"
    found = manifest(out)
    home = tmp_path / "home" / "judges"
    for task in ("consistency", "implicit"):
        [judge] = found["judges"][task]
        assert judge["kind"] == "classifier"
        assert Path(judge["model"].removeprefix("classifier:")).parent == home
        assert found["judge_defaults"][task]["kind"] == "classifier"
        assert "embedded" in found["judge_defaults"][task]["reason"]
        # the data folder, written relative to the run so that the run travels
        assert (out / found["judge_defaults"][task]["data"]).resolve() == data_dir.resolve()
    assert "warnings" not in found
    # the choice is part of the recorded config, so a resumed run gets the same judges
    recorded = found["config"]["kda run"]["judge_defaults"]
    assert recorded == {t: f"classifier {trained_key(t, data_dir)}" for t in recorded}
    votes = list(read_jsonl(out / "verdicts_consistency.jsonl"))
    assert votes and {v["kind"] for v in votes} == {"classifier"}
    assert "llm" not in found["stages"]["filter"]  # no LLM judged
    assert any("training the implicit judge" in line for line in lines)
    assert lines[-1].endswith("(default judges consistency: classifier, implicit: classifier)")
    assert results["filter"]["filters"][0]["in"] == results["generate"]["candidates"]


def test_a_cached_judge_is_trained_once_and_reused(tmp_path, data_dir, trainings):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first = write_config(tmp_path / "a", model=EMBEDDED, filter={"judge_data": str(data_dir)})
    run(first)
    assert sorted(trainings) == ["consistency", "implicit"]
    second = write_config(tmp_path / "b", model=EMBEDDED, filter={"judge_data": str(data_dir)})
    _, lines = run(second)
    run(first)  # resumed: same settings, same judges
    assert sorted(trainings) == ["consistency", "implicit"]
    assert not any("training" in line for line in lines)
    home = tmp_path / "home" / "judges"
    assert sorted(p.name.split("-")[0] for p in home.iterdir()) == ["consistency", "implicit"]
    recipe = json.loads((home / trained_key("implicit", data_dir) / "recipe.json").read_text())
    assert recipe["backbone"] == "tfidf" and "detox/kda_ko.csv" in recipe["data"]


def test_other_data_trains_another_judge(tmp_path, data_dir, trainings):
    other = write_data_dir(tmp_path / "other", sentences=30)
    assert trained_key("implicit", other) != trained_key("implicit", data_dir)
    assert ensure_trained("implicit", data_dir, say=lambda _: None) != ensure_trained(
        "implicit", other, say=lambda _: None
    )
    assert trainings == ["implicit", "implicit"]


def test_a_killed_training_leaves_no_half_judge(tmp_path, data_dir, monkeypatch):
    real = kda_judges.train_judge

    def killed(task, data, out_dir, *args, **kwargs):
        (Path(out_dir) / "model.npz").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(kda_judges, "train_judge", killed)
    with pytest.raises(KeyboardInterrupt):
        ensure_trained("consistency", data_dir, say=lambda _: None)
    home = tmp_path / "home" / "judges"
    assert list(home.iterdir()) == []
    # a folder without model.json (not made by the rename) is never taken for a judge
    stray = home / trained_key("consistency", data_dir)
    stray.mkdir()
    (stray / "model.npz").write_bytes(b"half")
    monkeypatch.setattr(kda_judges, "train_judge", real)
    path = ensure_trained("consistency", data_dir, say=lambda _: None)
    assert path == stray and (path / "model.json").is_file() and list(home.iterdir()) == [path]


def test_named_judges_the_embedded_model_included_are_used_as_named(tmp_path, data_dir, trainings):
    filters = {"models": [EMBEDDED], "judge_data": str(data_dir)}
    run(write_config(tmp_path, model=EMBEDDED, filter=filters))
    found = manifest(tmp_path / "run")
    assert found["judges"]["consistency"] == [{"kind": "llm", "model": "fake:fake-embedded"}]
    assert "judge_defaults" not in found and "judge_defaults" not in found["config"]["kda run"]
    assert trainings == []


def test_one_filter_named_the_other_gets_its_default(tmp_path, data_dir, trainings):
    filters = {"implicit_models": [EMBEDDED], "judge_data": str(data_dir)}
    run(write_config(tmp_path, model=EMBEDDED, filter=filters))
    judges = manifest(tmp_path / "run")["judges"]
    assert judges["consistency"][0]["kind"] == "classifier"
    assert judges["implicit"] == [{"kind": "llm", "model": "fake:fake-embedded"}]
    assert trainings == ["consistency"]


def test_default_judges_llm_keeps_the_llm_judges(tmp_path, data_dir, trainings):
    filters = {"default_judges": "llm", "judge_data": str(data_dir)}
    run(write_config(tmp_path, model=EMBEDDED, filter=filters))
    found = manifest(tmp_path / "run")
    assert {j[0]["kind"] for j in found["judges"].values()} == {"llm"}
    assert found["judge_defaults"]["implicit"] == {
        "kind": "llm",
        "judge": "the run's model",
        "reason": "default_judges: llm",
    }
    assert trainings == []


def test_with_a_real_llm_the_llm_judges_stay_the_default(tmp_path, data_dir, trainings):
    run(write_config(tmp_path, filter={"judge_data": str(data_dir)}))
    found = manifest(tmp_path / "run")
    assert found["judges"]["consistency"] == [{"kind": "llm", "model": "fake:fake-x"}]
    assert "not the embedded one" in found["judge_defaults"]["consistency"]["reason"]
    assert trainings == [] and "warnings" not in found
    # asked for, the trained judges judge whatever the model
    trained = filter_defaults(["implicit"], "trained", "fake:x", str(data_dir))
    assert trained["implicit"].kind == "classifier"


def test_no_judge_data_keeps_the_llm_with_a_warning_said_and_recorded(tmp_path):
    _, lines = run(write_config(tmp_path, model=EMBEDDED))
    found = manifest(tmp_path / "run")
    assert {j[0]["kind"] for j in found["judges"].values()} == {"llm"}
    [warning] = found["warnings"]
    assert "near random" in warning and "filter.judge_data" in warning
    assert lines[0] == f"warning: {warning}"  # before the work, not after it
    with pytest.raises(ConfigError, match="default_judges: trained needs"):
        filter_defaults(["implicit"], "trained", EMBEDDED, None)


def test_a_changed_choice_needs_a_new_run_directory(tmp_path):
    data = write_data_dir(tmp_path / "shared")
    config = write_config(tmp_path, model=EMBEDDED, filter={"judge_data": str(data)})
    run(config, until="generate")
    with pytest.raises(ConfigError, match="filter, judge_defaults changed"):
        run(write_config(tmp_path, model=EMBEDDED))
    config = write_config(tmp_path, model=EMBEDDED, filter={"judge_data": str(data)})
    run(config, until="generate")  # as it started: resumes
    # the same folder holding other data: another judge, refused as well
    with (data / "detox" / "kda_ko.csv").open("a", encoding="utf-8") as handle:
        handle.write("새로운 문장입니다,새로운 문장이네 ㅋㅋ\n")
    with pytest.raises(ConfigError, match="[(]judge_defaults changed[)]"):
        run(config)


def test_judge_data_is_relative_to_the_config_and_a_missing_file_is_named(tmp_path, data_dir):
    from rolecall.pipelines.kda import load_kda_config

    path = write_config(tmp_path, filter={"judge_data": "shared"})
    assert load_kda_config(path).filter.judge_data == str(tmp_path / "shared")
    broken = write_data_dir(tmp_path / "broken")
    (broken / "neutral" / "korsts_train.tsv").unlink()
    with pytest.raises(InputFileError, match="korsts_train.tsv"):
        filter_defaults(["consistency"], "auto", EMBEDDED, str(broken))
    assert filter_defaults(["implicit"], "auto", EMBEDDED, str(broken))  # does not read it


# ---- the dialogue pipeline ------------------------------------------------------------


SPEC_WITHOUT_RULES = RoleSpec(
    name="s",
    outline="안부 전화를 드리는 인공지능 상담원입니다.",
    categories=[Category(name="persona", description="인공지능", error_category="wrong persona")],
)


def test_the_dialogue_judge_defaults_to_the_rule_judge_on_the_embedded_model(tmp_path, monkeypatch):
    from tests.pipelines.dialogue_script import ENTRY

    use_backend(monkeypatch, "llamacpp", ENTRY)  # writes the dialogues
    results, lines = run_dialogues(tmp_path, model=EMBEDDED)
    found = manifest(tmp_path / "run")
    assert found["judges"][JUDGE] == [{"kind": "rules", "model": "rules:carecall"}]
    assert found["judge_defaults"][JUDGE]["reason"].startswith("rule judges: the judge model")
    assert found["config"]["dialogues run"]["judge_defaults"] == {JUDGE: "rules:carecall"}
    assert "llm" not in found["stages"]["judge"] and "(rules mode)" in lines[-1]
    assert results["judge"]["dialogues"] == 3


def test_the_dialogue_judge_choice_can_be_overridden(tmp_path):
    spec = SPEC_WITHOUT_RULES
    assert out_of_bounds_default(["fake:x"], "auto", EMBEDDED, spec) == {}
    assert out_of_bounds_default([], "auto", "fake:x", spec)[JUDGE].kind == "llm"
    assert out_of_bounds_default([], "llm", EMBEDDED, spec)[JUDGE].kind == "llm"
    # the bundle needs the spec's unsupported features: without them the LLM, said loudly
    fallback = out_of_bounds_default([], "auto", EMBEDDED, spec)[JUDGE]
    assert fallback.kind == "llm" and "rules:carecall cannot judge" in fallback.warning
    with pytest.raises(ConfigError, match="unsupported"):
        out_of_bounds_default([], "rules", EMBEDDED, spec)
    from rolecall.spec import load_role_spec

    carecall = load_role_spec(REPO / "examples" / "carecall" / "spec.yaml")
    assert out_of_bounds_default([], "auto", EMBEDDED, carecall)[JUDGE].judge == "rules:carecall"


def test_dialogues_judge_command_judges_by_rules_with_no_model_named(tmp_path):
    out = tmp_path / "judged"
    result = run_cli(
        "dialogues",
        "judge",
        "--spec",
        str(REPO / "examples" / "carecall" / "spec.yaml"),
        "--dialogues",
        str(REPO / "examples" / "carecall" / "dialogues.jsonl"),
        "--out",
        str(out),
        "--no-progress",
    )
    assert result.returncode == 0, result.stderr
    counts = json.loads(result.stdout.splitlines()[-1])
    assert counts["out_of_bounds"] == 0 and counts["judged_turns"] > 200  # all in bounds
    found = manifest(out)
    assert found["judges"][JUDGE] == [{"kind": "rules", "model": "rules:carecall"}]
    assert found["config"]["dialogues judge"]["judges"] == ["rules:carecall"]
    assert "embedded" not in json.dumps(found["models"])  # no model was opened


def test_kda_filter_command_takes_the_default_and_the_data(tmp_path, data_dir):
    sentences = tmp_path / "neutral.csv"
    sentences.write_text("Q,A\n오늘 회의가 취소되었습니다.,네\n주식이 떨어졌어요.,저런\n")
    out, home = tmp_path / "run", {"ROLECALL_HOME": str(tmp_path / "home")}
    common = ["--out", str(out), "--no-progress", "--cache", str(tmp_path / "c.sqlite")]
    args = ["--sentences", f"{sentences}:Q", "--ns", "0", "-m", "fake:x"]
    assert run_cli("kda", "generate", *args, *common).returncode == 0
    bad = run_cli("kda", "filter", "--default-judges", "trained", *common, env_extra=home)
    assert bad.returncode == 2 and "judge_data" in bad.stderr  # trained needs the data
    result = run_cli(
        "detox",
        "filter",
        "--default-judges",
        "trained",
        "--judge-data",
        str(data_dir),
        *common,
        env_extra=home,
    )
    assert result.returncode == 0, result.stderr
    assert "training the consistency judge" in result.stderr
    found = manifest(out)
    assert {j[0]["kind"] for j in found["judges"].values()} == {"classifier"}
    assert found["judge_defaults"]["implicit"]["reason"] == "default_judges: trained"
    assert found["config"]["kda filter"]["default_judges"] == "trained"
