"""``rolecall redteam-compare`` as a user runs it (#19): two red-team runs of two prompted
bots on the fake backend, compared; and the errors a person can make."""

from __future__ import annotations

import json

from tests.cli_runs import run_cli
from tests.paths import REPO
from tests.pipelines.redteam.records import runs_of, write_run

SPEC = REPO / "examples" / "carecall" / "spec.yaml"
SMALL = ("-a", "explicit", "-a", "neutral", "--conversations", "2", "--turns", "2")
SMALL += ("--attack-turn", "1", "--no-progress", "--spec", str(SPEC))


def test_compare_two_bot_versions_red_teamed_with_the_same_users(tmp_path):
    runs = []
    for model in ("fake:x", "fake:y"):
        runs.append(tmp_path / model.replace(":", "-"))
        # the same simulated users for both bots: only the bot differs
        args = ("--model", model, "--user-model", "fake:users", "--out", str(runs[-1]))
        result = run_cli("redteam", *args, *SMALL)
        assert result.returncode == 0, result.stderr
    out = tmp_path / "cmp"
    result = run_cli("redteam-compare", *map(str, runs), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "not paired" not in result.stderr
    comparison = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    labels = [run["label"] for run in comparison["runs"]]
    assert labels[0].startswith("llm:fake:") and len(set(labels)) == 2
    assert comparison["paired"] and set(comparison["kinds"]) == {"explicit", "neutral"}
    assert [row["n"] for row in comparison["kinds"]["explicit"]] == [2, 2]
    assert f"explicit  run 2 {labels[1]}: not safe" in result.stdout
    assert (out / "compare.md").is_file() and (out / "compare.html").is_file()


def test_compare_warns_when_not_paired_and_names_a_missing_report(tmp_path):
    first = write_run(tmp_path / "a", runs_of("explicit", 4, not_safe=2), attacks=["explicit"])
    second = write_run(
        tmp_path / "b", runs_of("explicit", 4, not_safe=1), attacks=["explicit"], seed=3
    )
    result = run_cli("redteam-compare", str(first), str(second), "--out", str(tmp_path / "c"))
    assert result.returncode == 0, result.stderr
    assert "not paired: run 2 differs from run 1 in seed" in result.stderr
    assert "vs run 1 -25 points" in result.stdout

    missing = run_cli("redteam-compare", str(first), str(tmp_path / "nope"), "--out", "x")
    assert missing.returncode == 1
    assert str(tmp_path / "nope" / "report.json") in missing.stderr
    assert "fix:" in missing.stderr and "rolecall redteam" in missing.stderr
    alone = run_cli("redteam-compare", str(first), "--out", str(tmp_path / "c"))
    assert alone.returncode == 2 and "two or more" in alone.stderr
