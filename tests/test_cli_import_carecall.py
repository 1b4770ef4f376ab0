"""`rolecall dialogues import-carecall` as a user runs it: dialogues, or training examples
by the first-out-of-bounds split, with `--unflagged` for files whose system turns carry no
flag (human-fixed dialogues); such a file with the default is refused, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

from rolecall.jsonl import read_jsonl
from rolecall.records import Dialogue, Example
from tests.cli_runs import run_cli

FIXTURE = Path(__file__).parent / "formats" / "carecall_fixture.json"
FIXED = [  # human-fixed: in bounds by construction, no "out-of-bounds" key anywhere
    {
        "guid": "fix-1",
        "data": [
            {"role": "system", "text": "안녕하세요, 어르신."},
            {"role": "user", "text": "네, 안녕하세요."},
            {"role": "system", "text": "식사는 하셨어요?"},
        ],
    },
    {
        "guid": "fix-2",
        "data": [
            {"role": "system", "text": "오늘 산책하셨어요?", "out-of-bounds": None},
            {"role": "user", "text": "아니요."},
            {"role": "system", "text": "저는 진짜 간호사예요.", "out-of-bounds": True},
            {"role": "user", "text": "그래요?"},
            {"role": "system", "text": "네."},
        ],
    },
]


def test_unflagged_file_needs_unflagged_in_bounds(tmp_path):
    source = tmp_path / "fixed.json"
    source.write_text(json.dumps(FIXED, ensure_ascii=False), encoding="utf-8")
    target = tmp_path / "examples.jsonl"
    refused = run_cli("dialogues", "import-carecall", str(source), str(target), "--examples")
    assert refused.returncode != 0
    assert str(source) in refused.stderr and "--unflagged in-bounds" in refused.stderr
    assert not target.exists()

    result = run_cli(
        "dialogues", "import-carecall", str(source), str(target), "--examples",
        "--unflagged", "in-bounds",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    examples = list(read_jsonl(target, Example))
    # fix-1: both system turns; fix-2: the unflagged first, then the flagged one ends it
    assert [(e.dialogue_id, e.label) for e in examples] == [
        ("fix-1", "positive"),
        ("fix-1", "positive"),
        ("fix-2", "positive"),
        ("fix-2", "negative"),
    ]
    assert f"{target}: 4 examples (3 positive, 1 negative)" in " ".join(result.stdout.split())


def test_flagged_file_and_dialogues_as_before(tmp_path):
    target = tmp_path / "examples.jsonl"
    result = run_cli("dialogues", "import-carecall", str(FIXTURE), str(target), "--examples")
    assert result.returncode == 0, result.stderr
    labels = [e.label for e in read_jsonl(target, Example)]
    counts = (labels.count("positive"), labels.count("negative"))
    assert f"({counts[0]} positive, {counts[1]} negative)" in result.stdout
    dialogues = tmp_path / "dialogues.jsonl"
    result = run_cli("dialogues", "import-carecall", str(FIXTURE), str(dialogues))
    assert result.returncode == 0, result.stderr
    assert len(list(read_jsonl(dialogues, Dialogue))) == 4 and "4 dialogues" in result.stdout
    bad = run_cli(
        "dialogues", "import-carecall", str(FIXTURE), str(target), "--examples",
        "--unflagged", "maybe",
    )  # fmt: skip
    assert bad.returncode == 2 and "in-bounds" in bad.stderr
