"""``rolecall bot run``'s config and its first stage (pipelines/bot_sources.py): sources
merged, duplicates dropped, counted, split by dialogue; bad sources are clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from rolecall.errors import InputFileError
from rolecall.pipelines.bot_sources import (
    BotRunConfig,
    Source,
    load_bot_config,
    merged_examples,
    partner_of,
    sources_digest,
)
from rolecall.spec import load_role_spec
from tests.paths import REPO

CARECALL = REPO / "examples" / "carecall"
SPEC = load_role_spec(CARECALL / "spec.yaml")


def example(dialogue: str, response: str, label: str = "positive") -> dict:
    return {
        "history": [{"role": "user", "text": f"{dialogue}의 질문"}],
        "response": response,
        "label": label,
        "category": "wrong persona" if label == "negative" else None,
        "dialogue_id": dialogue,
    }


def write(path, rows) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return str(path)


def config(tmp_path, *sources: Source, **given) -> BotRunConfig:
    return BotRunConfig(
        spec=str(CARECALL / "spec.yaml"), out=str(tmp_path / "bot"), sources=list(sources), **given
    )


def test_sources_are_merged_deduplicated_counted_and_split_by_dialogue(tmp_path):
    rows = [example(f"d{i}", f"답 {i}") for i in range(40)] + [example("d0", "틀린 답", "negative")]
    web = write(tmp_path / "web.jsonl", [example("d0", "답 0"), example("w", "새 답")])
    generated = write(tmp_path / "gen.jsonl", rows)
    found = config(
        tmp_path,
        Source(examples=generated, name="generated"),
        Source(examples=web),
        Source(dialogues=str(CARECALL / "dialogues.jsonl")),
    )
    train, held, counts = merged_examples(found, SPEC)
    assert counts["sources"]["web.jsonl"]["duplicates"] == 1  # "답 0" came first from generated
    assert counts["sources"]["generated"]["read"] == 41
    assert counts["sources"]["generated"]["negatives"] == 1
    assert counts["spec_negatives"] > 0 and counts["train"] == len(train)
    by_side = [{e.dialogue_id for e in part} for part in (train, held)]
    assert not by_side[0] & by_side[1] and by_side[1]  # no dialogue on both sides
    assert {e.dialogue_id for e in held} <= {f"d{i}" for i in range(40)} | {"w"} | {
        f"carecall-{i:03d}" for i in range(1, 40)
    }  # the spec's negatives stay in training
    # the same inputs, the same split
    assert merged_examples(found, SPEC)[1] == held


def test_a_source_names_one_file_and_bad_sources_are_clear_errors(tmp_path):
    with pytest.raises(ValidationError, match="exactly one"):
        Source(examples="a.jsonl", dialogues="b.jsonl")
    empty = write(tmp_path / "empty.jsonl", [])
    with pytest.raises(InputFileError, match="holds no examples") as caught:
        merged_examples(config(tmp_path, Source(examples=empty)), SPEC)
    assert str(tmp_path / "empty.jsonl") in str(caught.value)
    missing = config(tmp_path, Source(examples=str(tmp_path / "nope.jsonl")))
    with pytest.raises(InputFileError, match="not found"):
        sources_digest(missing)
    wrong = write(tmp_path / "wrong.jsonl", [{"text": "대화가 아님"}])
    with pytest.raises(InputFileError) as caught:
        merged_examples(config(tmp_path, Source(examples=wrong)), SPEC)
    assert "wrong.jsonl:1" in str(caught.value)


def test_the_config_resolves_paths_against_its_file(tmp_path):
    path = tmp_path / "conf" / "bot.yaml"
    path.parent.mkdir()
    path.write_text(
        "spec: spec.yaml\nout: ../bots/one\nsources:\n  - examples: ex.jsonl\n"
        "user_checks:\n  turns: turns.jsonl\n",
        "utf-8",
    )
    found = load_bot_config(path)
    assert Path(found.out).resolve() == tmp_path / "bots" / "one"
    assert "conf/.." not in found.out  # normalised: printed short
    # a config outside the working directory: absolute paths, not ../../tmp/...
    assert not found.spec.startswith("..") and Path(found.spec).is_absolute()
    assert Path(found.sources[0].examples).resolve() == path.parent / "ex.jsonl"
    assert Path(found.user_checks.turns).resolve() == path.parent / "turns.jsonl"
    assert found.guard == ["tfidf", "sentence"]
    # the second retriever by default: e5 beside the sentence encoder, and back; none asked
    # for, or the first's own backbone: one retriever
    assert partner_of(found) == "e5"
    assert partner_of(found.model_copy(update={"backbone": "e5"})) == "sentence"
    assert partner_of(found.model_copy(update={"backbone": "embedded"})) is None
    assert partner_of(found.model_copy(update={"partner": "none"})) is None
    assert partner_of(found.model_copy(update={"partner": "sentence"})) is None
    path.write_text("spec: s.yaml\nout: o\nsources: []\n", "utf-8")
    with pytest.raises(Exception, match="sources"):
        load_bot_config(path)


def test_a_run_resumes_the_newest_version_with_its_settings_and_else_starts_the_next(tmp_path):
    from rolecall.pipelines.bot_run import COMMAND, version_dir
    from rolecall.rundir import RunDir

    home = tmp_path / "bot"
    settings = {"seed": 0, "sources_digest": "a"}
    assert version_dir(home, settings) == (home / "v1", False)
    RunDir(home / "v1", COMMAND, settings)
    assert version_dir(home, {**settings, "out": "elsewhere"}) == (home / "v1", True)
    assert version_dir(home, {**settings, "sources_digest": "b"}) == (home / "v2", False)
    (home / "v10").mkdir()  # numbered, not sorted as text; no manifest: not resumed
    assert version_dir(home, settings) == (home / "v11", False)


def test_bot_run_refuses_a_home_made_by_another_kind_of_run(tmp_path):
    from rolecall.pipelines.bot_run import run_bot

    home = tmp_path / "dialogues"
    home.mkdir()
    (home / "manifest.json").write_text(
        json.dumps({"command": "dialogues run", "runs": [], "config": {}}), "utf-8"
    )
    config = BotRunConfig(
        spec=str(CARECALL / "spec.yaml"),
        out=str(home),
        sources=[{"dialogues": str(CARECALL / "dialogues.jsonl")}],
    )
    with pytest.raises(InputFileError, match="holds a dialogues run"):
        run_bot(config, say=lambda _: None)
    assert [p.name for p in home.iterdir()] == ["manifest.json"]  # no v1/ made in it
