"""`kda run` on the fake backend: config loading, stages, resume, changed configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tests.fakes  # noqa: F401  (registers fake:)
from rolecall.errors import ConfigError, InputFileError
from rolecall.jsonl import read_jsonl
from rolecall.llm import LLM, Cache, load_backend
from rolecall.pipelines.kda import load_kda_config, neutral_sentences, run_kda
from rolecall.records import Pair
from tests.paths import REPO

COMMENTS = [
    "회의 또 취소냐 ㅋㅋ 윗분들 땡땡이 오지네",
    "주식 떡락 개미들 곡소리 ㅋㅋ",
    "날씨 좋다고 놀러가는 틀딱들 ㅉㅉ",
    "회의실 예약한 놈 누구냐 ㅡㅡ",
    "주식 물린 개미 또 징징대네",
    "오늘 날씨 실화냐 ㅋㅋㅋㅋ",
]


def write_config(tmp_path: Path, **changes) -> Path:
    (tmp_path / "comments.txt").write_text("\n".join(COMMENTS) + "\n", encoding="utf-8")
    (tmp_path / "neutral.csv").write_text(
        "Q,A\n오늘 회의가 취소되었습니다.,네\n주식이 떨어졌어요.,저런\n\n"
        "오늘 회의가 취소되었습니다.,중복\nhello there,영어\n날씨가 좋네요.,네\n",
        encoding="utf-8",
    )
    config = {
        "out": "run",
        "model": "fake:x",
        "cache": "cache.sqlite",
        "slang": {"index": "index", "corpora": ["comments.txt"]},
        "sentences": {"path": "neutral.csv:Q"},
        "generate": {"ns": [0, 3]},
        "export": {"formats": ["csv"]},
        "geval": {"criteria": ["overall", "consistency"]},
    }
    for key, value in changes.items():
        config[key] = value
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")  # JSON is YAML
    return path


def opener(cache: Path):
    opened = []

    def load(model: str | None) -> LLM:
        opened.append(LLM(load_backend(model), Cache(cache)))
        return opened[-1]

    return load, opened


def run(path: Path, **kwargs):
    config = load_kda_config(path)
    load, opened = opener(Path(config.cache))
    lines: list[str] = []
    results = run_kda(config, load, progress=False, say=lines.append, **kwargs)
    return results, opened, lines


def test_the_example_config_is_valid_and_its_paths_resolve():
    config = load_kda_config(REPO / "examples" / "kda" / "config.yaml")
    assert config.generate.ns == (0, 3, 5, 7, 9)
    assert Path(config.sentences.path.rsplit(":", 1)[0]).name == "chatbot_data.csv"
    assert all(Path(c.rsplit(":", 1)[0]).is_absolute() for c in config.slang.corpora)


def test_a_whole_run_then_a_rerun_that_makes_no_calls(tmp_path):
    path = write_config(tmp_path, export={"formats": ["csv", "parquet", "hf"]})
    results, opened, lines = run(path)
    assert len(opened) == 1  # generator, judge and G-Eval share one model
    out = tmp_path / "run"
    assert results["generate"]["planned"] == 3 * 2  # 3 usable sentences x 2 values of n
    candidates = list(read_jsonl(out / "candidates.jsonl"))
    with_comments = [c for c in candidates if c["provenance"]["n"] == 3]
    assert with_comments and all(c["provenance"]["comment_ids"] for c in with_comments)
    for name in (
        "verdicts_consistency.jsonl",
        "pairs.jsonl",
        "retention.json",
        "kda.csv",
        "DATA_CARD.md",
        "geval.json",
    ):
        assert (out / name).exists(), name
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert list(manifest["stages"]) == ["index", "generate", "filter", "export", "geval"]
    skipped = manifest["neutral_skipped"]
    assert (skipped["duplicate"], skipped["not_korean"], skipped["too_long"]) == (1, 1, 0)
    assert "neutral.csv:Q" in (out / "DATA_CARD.md").read_text(encoding="utf-8")
    from rolecall.formats.parquet import read_parquet

    kept = list(read_jsonl(out / "pairs.jsonl", Pair))
    assert read_parquet(out / "kda.parquet") == kept
    assert (out / "hf_dataset" / "dataset_info.json").exists()
    geval = json.loads((out / "geval.json").read_text(encoding="utf-8"))
    assert geval["pairs"] == results["filter"]["overall"]["kept"]
    votes = list(read_jsonl(out / "geval_votes.jsonl"))  # score mode: one vote per item
    assert len(votes) == len(geval["items"]) and all(
        v["label"] in {"1", "2", "3", "4", "5"} for v in votes
    )
    assert {v["judge"].split("/")[0] for v in votes} == {f"geval_{c}" for c in geval["summary"]}
    assert any(line.startswith("filter: consistency kept") for line in lines)

    before = {
        name: (out / name).read_bytes()
        for name in (
            "candidates.jsonl",
            "pairs.jsonl",
            "kda.csv",
            "geval.json",
            "geval_votes.jsonl",
        )
    }
    _, opened, _ = run(path)
    assert opened[0].stats.calls == 0 and opened[0].stats.cache_hits > 0
    assert {name: (out / name).read_bytes() for name in before} == before
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert len(manifest["runs"]) == 2


def test_until_stops_after_a_stage_and_the_next_run_goes_on(tmp_path):
    path = write_config(tmp_path)
    results, _, _ = run(path, until="generate")
    assert set(results) == {"index", "generate"}
    assert not (tmp_path / "run" / "pairs.jsonl").exists()
    results, _, _ = run(path)
    assert "geval" in results
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    last = manifest["runs"][-1]["stages"]
    assert last["generate"]["llm"]["calls"] == 0  # the rewrites were all on file
    assert last["filter"]["llm"]["calls"] > 0 and last["geval"]["llm"]["calls"] > 0


def test_a_changed_config_is_refused_but_concurrency_may_change(tmp_path):
    run(write_config(tmp_path), until="generate")
    run(write_config(tmp_path, concurrency=2), until="generate")
    with pytest.raises(ConfigError, match="generate"):
        run(write_config(tmp_path, generate={"ns": [0, 5]}), until="generate")


def test_a_panel_of_judge_models_from_the_config(tmp_path):
    path = write_config(tmp_path, filter={"models": ["fake:a", "fake:b"], "samples": 2})
    results, opened, _ = run(path, until="filter")
    assert [llm.model_id for llm in opened] == ["fake:fake-x", "fake:fake-a", "fake:fake-b"]
    votes = list(read_jsonl(tmp_path / "run" / "verdicts_consistency.jsonl"))
    candidates = results["filter"]["filters"][0]["in"]
    assert len(votes) == candidates * 2 * 2  # two models, two samples each
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["models"]["judge 2"] == "fake:fake-b"


def test_failed_calls_stop_the_run_and_keep_the_records(tmp_path):
    from rolecall.errors import BatchFailed

    # one call at a time: the first 3 rewrites are made, then the server dies for good
    path = write_config(tmp_path, model="fake:x?fail_after=3", concurrency=1)
    with pytest.raises(BatchFailed, match="generate"):
        run(path)
    out = tmp_path / "run"
    made = _rows(out / "candidates.jsonl") + _rows(out / "rejected_candidates.jsonl")
    assert len(made) == 3  # every rewrite made before the failure is on file
    failures = list(read_jsonl(out / "generate.failures.jsonl"))
    assert len(failures) == 3 and all("server died" in f["error"] for f in failures)
    assert not (out / "pairs.jsonl").exists()

    # the same command again (a fresh process's first 3 calls work): only the 3 missing
    # rewrites are asked, and the candidates are those of a run that never failed
    results, opened, _ = run(path, until="generate")
    assert opened[0].stats.calls == 3 and results["generate"]["planned"] == 6
    assert list(read_jsonl(out / "generate.failures.jsonl")) == []
    clean = tmp_path / "clean"
    clean.mkdir()
    run(write_config(clean, concurrency=1), until="generate")
    for name in ("candidates.jsonl", "rejected_candidates.jsonl"):
        got = sorted(json.dumps(r, sort_keys=True) for r in _rows(out / name))
        want = sorted(json.dumps(r, sort_keys=True) for r in _rows(clean / "run" / name))
        assert got == want, name


def test_config_errors_name_the_field(tmp_path):
    with pytest.raises(InputFileError, match="generate.ns"):
        load_kda_config(write_config(tmp_path, generate={"ns": [3, 3]}))
    with pytest.raises(InputFileError, match="sentences: Field required"):
        load_kda_config(_without(write_config(tmp_path), "sentences"))
    with pytest.raises(InputFileError, match="colour"):
        load_kda_config(write_config(tmp_path, colour="red"))
    with pytest.raises(InputFileError, match="no slang section"):
        load_kda_config(_without(write_config(tmp_path), "slang"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("out: run\nsentences: [unclosed\n", encoding="utf-8")
    with pytest.raises(InputFileError, match="line"):
        load_kda_config(bad)


def test_an_n_above_what_the_index_holds_is_refused_before_generating(tmp_path):
    with pytest.raises(ConfigError, match="generate.ns asks for 30 .* index holds"):
        run(write_config(tmp_path, generate={"ns": [0, 30]}))
    assert not (tmp_path / "run" / "candidates.jsonl").exists()


def _rows(path: Path) -> list[dict]:
    return list(read_jsonl(path)) if path.exists() else []


def _without(path: Path, key: str) -> Path:
    data = json.loads(path.read_text(encoding="utf-8"))
    del data[key]
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_neutral_sentences_skip_and_count(tmp_path):
    source = tmp_path / "s.txt"
    source.write_text(
        "좋은 아침입니다.\n\n좋은  아침입니다.\nplain English\n" + "가" * 300 + "\n"
        "점심 드셨어요?\n",
        encoding="utf-8",
    )
    rows, skipped = neutral_sentences(str(source), max_chars=200)
    assert [text for _, text in rows] == ["좋은 아침입니다.", "점심 드셨어요?"]
    assert skipped == {"empty": 1, "duplicate": 1, "too_long": 1, "not_korean": 1}
    rows, _ = neutral_sentences(str(source), language="en")
    assert "plain English" in [text for _, text in rows]
    assert len(neutral_sentences(str(source), limit=1)[0]) == 1
    source.write_text("hello\n\n", encoding="utf-8")
    with pytest.raises(InputFileError, match="no usable neutral sentence"):
        neutral_sentences(str(source))


def test_a_rule_judge_joins_the_consistency_panel_from_the_config(tmp_path, monkeypatch):
    from tests.pipelines import fake_judges

    fake_judges.install(monkeypatch)
    path = write_config(tmp_path, filter={"consistency_models": ["fake:x", "rules:laugh"]})
    results, opened, _ = run(path, until="filter")
    out = tmp_path / "run"
    votes = list(read_jsonl(out / "verdicts_consistency.jsonl"))
    candidates = results["filter"]["filters"][0]["in"]
    assert sorted((v["kind"], v["model"]) for v in votes) == sorted(
        [("llm", "fake:fake-x")] * candidates + [("rules", "rules:laugh")] * candidates
    )
    assert all(
        v["rule"] == "no-laugh" for v in votes if v["kind"] == "rules" and v["label"] == "shifted"
    )
    implicit = list(read_jsonl(out / "verdicts_implicit.jsonl"))
    assert {v["kind"] for v in implicit} <= {"llm"}  # the implicit filter keeps the default
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["judges"]["consistency"] == [
        {"kind": "llm", "model": "fake:fake-x"},
        {"kind": "rules", "model": "rules:laugh"},
    ]
    assert manifest["judges"]["implicit"] == [{"kind": "llm", "model": "fake:fake-x"}]
    assert set(results["filter"]) == {"filters", "overall"}  # the report keeps its shape
    before = {p.name: p.read_bytes() for p in out.glob("verdicts_*.jsonl")}
    _, opened, _ = run(path, until="filter")
    assert sum(llm.stats.calls for llm in opened) == 0
    assert {p.name: p.read_bytes() for p in out.glob("verdicts_*.jsonl")} == before


def test_a_config_without_per_filter_judges_keeps_its_settings_fingerprint(tmp_path):
    config = load_kda_config(write_config(tmp_path))
    assert "consistency_models" not in config.model_dump(mode="json")["filter"]
    path = write_config(tmp_path, filter={"implicit_models": ["classifier:judge"]})
    config = load_kda_config(path)
    assert config.filter.implicit_models == [f"classifier:{tmp_path / 'judge'}"]
    assert config.filter.judges_of("consistency") == []
