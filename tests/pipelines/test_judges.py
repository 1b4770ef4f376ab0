"""Judge strings: classifier:PATH, rules:NAME and model strings become panel members."""

from __future__ import annotations

import sys

import pytest

import tests.fakes  # noqa: F401  (registers fake:)
from rolecall.errors import BadModelString, ConfigError, InputFileError
from rolecall.judge.out_of_bounds import make_panel
from rolecall.llm import LLM, load_backend
from rolecall.pipelines.judges import (
    describe,
    parse_judge,
    record_judges,
    relative_to,
    resolve_judges,
)
from rolecall.records import Category, RoleSpec
from rolecall.rundir import RunDir
from tests.pipelines import fake_judges

SPEC = RoleSpec(
    name="s",
    outline="안부 전화를 드리는 인공지능 상담원입니다.",
    categories=[Category(name="persona", description="인공지능", error_category="wrong persona")],
)


def opener():
    opened: list[str | None] = []

    def open_llm(model):
        opened.append(model)
        return LLM(load_backend(model or "fake:default"))

    return open_llm, opened


def test_judge_strings_name_their_kind():
    assert parse_judge("classifier:runs/judge") == ("classifier", "runs/judge")
    assert parse_judge("rules:carecall") == ("rules", "carecall")
    assert parse_judge("fake:x") == ("llm", "fake:x")
    assert parse_judge("openai:http://h:8000/v1?model=m") == (
        "llm",
        "openai:http://h:8000/v1?model=m",
    )
    assert parse_judge(None) == ("llm", None)
    with pytest.raises(ConfigError, match="names no classifier judge") as caught:
        parse_judge("classifier: ")
    assert "classifier:" in caught.value.fix


def test_relative_classifier_paths_follow_the_config_file(tmp_path):
    assert relative_to(tmp_path, "classifier:judge") == f"classifier:{tmp_path / 'judge'}"
    assert relative_to(tmp_path, "classifier:/abs/judge") == "classifier:/abs/judge"
    assert relative_to(tmp_path, "rules:carecall") == "rules:carecall"
    assert relative_to(tmp_path, "fake:x") == "fake:x" and relative_to(tmp_path, None) is None


def test_each_kind_resolves_through_its_loader(tmp_path, monkeypatch):
    calls = fake_judges.install(monkeypatch)
    open_llm, opened = opener()
    strings = ["fake:a", f"classifier:{tmp_path}", "fake:a", None]
    members = resolve_judges(strings, "out_of_bounds", open_llm, SPEC)
    assert opened == ["fake:a", None]  # each distinct string once; None is the default model
    assert [describe(m) for m in members] == [
        {"kind": "llm", "model": "fake:fake-a"},
        {"kind": "classifier", "model": f"classifier:{tmp_path}"},
        {"kind": "llm", "model": "fake:fake-default"},
    ]
    assert calls["trained"] == [(tmp_path, "out_of_bounds", SPEC)]
    rules = resolve_judges(["rules:laugh"], "consistency", open_llm)
    assert [describe(m) for m in rules] == [{"kind": "rules", "model": "rules:laugh"}]
    assert calls["rules"] == [("laugh", "consistency", None)]
    # the LLMs get their judge on the panel; the classifier sits as it is
    panel = make_panel(SPEC, members)
    assert [type(m).__name__ for m in panel] == ["tuple", "SelfClassifier", "tuple"]


def test_bad_judge_strings_say_how_to_fix_them(tmp_path, monkeypatch):
    fake_judges.install(monkeypatch)
    open_llm, _ = opener()
    with pytest.raises(BadModelString, match="unknown backend 'classifer'") as caught:
        resolve_judges(["classifer:x"], "implicit", open_llm)
    assert "classifier:PATH" in caught.value.fix and "rules:NAME" in caught.value.fix
    with pytest.raises(InputFileError, match="no trained judge here") as caught:
        resolve_judges([f"classifier:{tmp_path / 'missing'}"], "implicit", open_llm)
    assert caught.value.fix
    with pytest.raises(ConfigError, match="not implicit"):  # a task the judge cannot do
        resolve_judges([f"classifier:{tmp_path}"], "implicit", open_llm)
    with pytest.raises(ConfigError, match="no rule judge 'nope'"):
        resolve_judges(["rules:nope"], "consistency", open_llm)
    with pytest.raises(ConfigError, match="unknown judging task"):
        resolve_judges(["fake:a"], "toxicity", open_llm)


def test_a_loader_that_answers_another_task_is_caught(tmp_path, monkeypatch):
    fake_judges.install(monkeypatch)
    sys.modules["rolecall.train.judges"].load_trained_judge = lambda path, task, spec: (
        fake_judges.SelfClassifier(path)
    )
    with pytest.raises(ConfigError, match="of out_of_bounds, not of implicit"):
        resolve_judges([f"classifier:{tmp_path}"], "implicit", opener()[0])


def test_missing_judge_modules_are_a_clear_error(tmp_path, monkeypatch):
    # before the trained and rule judges exist (or without their dependencies)
    monkeypatch.setitem(sys.modules, "rolecall.train.judges", None)
    monkeypatch.setitem(sys.modules, "rolecall.judge.rules", None)
    with pytest.raises(ConfigError, match="trained judges are not available") as caught:
        resolve_judges([f"classifier:{tmp_path}"], "implicit", opener()[0])
    assert caught.value.fix
    with pytest.raises(ConfigError, match="rule judges are not available"):
        resolve_judges(["rules:carecall"], "out_of_bounds", opener()[0], SPEC)


def test_the_manifest_records_each_judges_kind_and_model(tmp_path, monkeypatch):
    fake_judges.install(monkeypatch)
    open_llm, _ = opener()
    members = resolve_judges(["fake:a", f"classifier:{tmp_path}"], "out_of_bounds", open_llm, SPEC)
    run = RunDir(tmp_path / "run", "test")
    llms = record_judges(run, [make_panel(SPEC, members)])
    assert [llm.model_id for llm in llms] == ["fake:fake-a"]
    assert run.manifest["models"] == {"judge": "fake:fake-a"}
    assert run.manifest["judges"] == {
        "out_of_bounds": [
            {"kind": "llm", "model": "fake:fake-a"},
            {"kind": "classifier", "model": f"classifier:{tmp_path}"},
        ]
    }
    assert list(run.manifest["prompts"]) == ["judge_out_of_bounds"]
