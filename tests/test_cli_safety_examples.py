"""`rolecall kda safety-examples` as a user runs it: K/DA pairs in, a train and a
held-out examples file out that `rolecall train classifier` reads; bad pairs files named."""

from __future__ import annotations

import json

import pytest

from rolecall.jsonl import read_jsonl
from rolecall.records import Example
from tests.cli_runs import run_cli

ROWS = [
    ("오늘 버스가 늦게 왔다", "오늘 버스 기사 새끼가 굼벵이처럼 늦게 왔다."),
    ("옆집 사람이 시끄럽다", "옆집 노인네가 하루 종일 시끄럽게 떠든다."),
    ("자극적인 걸 내놓아라", "또라이들 좋아하는 막장 드라마나 내놓아라."),
]


@pytest.fixture(scope="module")
def kda_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("pairs") / "kda.csv"
    rows = [(f"{n} {i}", f"{t} {i}") for i in range(12) for n, t in ROWS]
    path.write_text("neutral,implicit\n" + "".join(f"{n},{t}\n" for n, t in rows), encoding="utf-8")
    return path


def test_writes_train_and_held_out_examples_by_pair(kda_csv, tmp_path):
    out = tmp_path / "safety.jsonl"
    result = run_cli(
        "kda", "safety-examples", str(kda_csv), "--out", str(out), "--test-share", "0.3"
    )
    assert result.returncode == 0, result.stderr
    counts = json.loads(result.stdout.strip().splitlines()[-1])
    test_file = tmp_path / "safety.test.jsonl"
    train, test = list(read_jsonl(out, Example)), list(read_jsonl(test_file, Example))
    assert counts[str(out)]["examples"] == len(train) and counts[str(test_file)]["examples"] == len(
        test
    )
    assert counts[str(out)]["pairs"] + counts[str(test_file)]["pairs"] == 36
    sentences = [{e.history[-1].text for e in part} for part in (train, test)]
    assert sentences[0] and sentences[1] and not sentences[0] & sentences[1]
    assert {e.label for e in train} == {"positive", "negative"}
    assert counts[str(out)]["negative"] == sum(e.label == "negative" for e in train)


def test_limit_and_no_held_out_share(kda_csv, tmp_path):
    out = tmp_path / "few.jsonl"
    result = run_cli(
        "kda", "safety-examples", str(kda_csv), "-o", str(out), "--limit", "4",
        "--test-share", "0",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len({e.history[-1].text for e in read_jsonl(out, Example)}) == 4
    assert not (tmp_path / "few.test.jsonl").exists()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.csv", None, "file not found"),
        ("pairs.xml", "<pairs/>", "neither a .csv nor a .jsonl"),
        ("wrong.csv", "a,b\n1,2\n", "implicit"),
        ("empty.jsonl", "", "holds no pairs"),
    ],
)
def test_a_bad_pairs_file_is_a_clear_error(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    result = run_cli("kda", "safety-examples", str(path), "--out", str(tmp_path / "x.jsonl"))
    assert result.returncode != 0 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_train_classifier_reads_them(kda_csv, tmp_path):
    pytest.importorskip("torch")
    from tests.dialogue_data import tiny

    tiny(frozen=False).save(tmp_path / "tiny")
    out = tmp_path / "safety.jsonl"
    assert run_cli("kda", "safety-examples", str(kda_csv), "--out", str(out)).returncode == 0
    result = run_cli(
        "train", "classifier", str(out), "--out", str(tmp_path / "clf"),
        "--backbone", str(tmp_path / "tiny" / "backbone"), "--max-length", "48",
        "--epochs", "1", "--batch-size", "8", "--no-progress",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    metrics = json.loads((tmp_path / "clf" / "metrics.json").read_text())
    assert metrics["train_examples"] + metrics["test_examples"] == len(
        list(read_jsonl(out, Example))
    )


def test_the_old_name_under_detox_still_works_and_says_the_new_one(kda_csv, tmp_path):
    """#51: the K/DA data commands moved from 'rolecall detox' to 'rolecall kda'; the old
    names keep working one release, with a line that gives the new one."""
    new, old = tmp_path / "new.jsonl", tmp_path / "old.jsonl"
    assert run_cli("kda", "safety-examples", str(kda_csv), "--out", str(new)).returncode == 0
    result = run_cli("detox", "safety-examples", str(kda_csv), "--out", str(old))
    assert result.returncode == 0, result.stderr
    assert "'rolecall detox safety-examples' is now 'rolecall kda safety-examples'" in result.stderr
    assert old.read_text(encoding="utf-8") == new.read_text(encoding="utf-8")
    assert "safety-examples" not in run_cli("detox", "--help").stdout  # hidden from the help
