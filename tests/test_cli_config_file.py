"""``--config FILE`` on the training commands (#51 item 4): a YAML file of the command's
own options, read from the file's folder; the command line wins; a wrong key or value is
refused with the file named and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from rolecall.jsonl import write_jsonl
from rolecall.judge.written_out_of_bounds import gold_examples
from tests.cli_runs import metrics_of, run_cli

pytest.importorskip("sklearn")

CARECALL = Path(__file__).resolve().parents[1] / "examples" / "carecall"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("config")
    write_jsonl(root / "data" / "examples.jsonl", gold_examples(CARECALL))
    (root / "classifier.yaml").write_text(
        "examples: data/examples.jsonl\nbackbone: tfidf\ntest-share: 0.2\n", encoding="utf-8"
    )
    return root


def test_the_file_gives_the_options_and_the_command_line_wins(folder):
    config = str(folder / "classifier.yaml")
    from_file = run_cli("train", "classifier", "--out", str(folder / "a"), "--config", config)
    metrics = metrics_of(from_file)  # examples from the file's folder, TF-IDF, a fifth held out
    assert metrics["backbone"] == "tfidf"
    both = metrics_of(
        run_cli(
            "train",
            "classifier",
            "--out",
            str(folder / "b"),
            "--config",
            config,
            "--test-share",
            "0.4",
        )  # fmt: skip
    )
    assert both["test_examples"] > 1.5 * metrics["test_examples"]  # 0.4 won over 0.2
    assert both["train_examples"] + both["test_examples"] == (
        metrics["train_examples"] + metrics["test_examples"]
    )


@pytest.mark.parametrize(
    "text, code, message, fix",
    [
        ("epoch: 2\n", 1, "'epoch' is not an option of 'rolecall train classifier'", "epochs?"),
        ("class_weights: sometimes\n", 2, "'sometimes' is not one of 'none', 'balanced'", None),
        ("- epochs\n", 1, "a command config must be a YAML mapping", "option names"),
    ],
)
def test_a_wrong_key_or_value_is_refused_with_the_file_named(folder, text, code, message, fix):
    bad = folder / "bad.yaml"
    bad.write_text(text, encoding="utf-8")
    result = run_cli(
        "train", "classifier", "x.jsonl", "--out", str(folder / "c"), "--config", str(bad)
    )
    flat = " ".join(result.stderr.split())
    assert result.returncode == code and message in flat and "Traceback" not in result.stderr
    assert fix is None or fix in flat
    assert not (folder / "c").exists()
