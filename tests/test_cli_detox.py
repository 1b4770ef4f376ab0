"""`rolecall detox train / rewrite` and `rolecall train export` on a tiny saved base."""

from __future__ import annotations

import json
import signal
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from rolecall.formats.kda import write_kda_csv  # noqa: E402
from rolecall.records import Pair  # noqa: E402
from tests.cli_runs import metrics_of, rolecall, run_cli  # noqa: E402
from tests.train.detox_pairs import PAIRS  # noqa: E402


def test_train_rewrite_and_export(tmp_path):
    from tests.tiny_models import tiny_causal_lm

    texts = [p.neutral for p in PAIRS] + [p.toxic for p in PAIRS] + ["원문: 중립:"]
    model, tokenizer = tiny_causal_lm(texts)
    model.save_pretrained(tmp_path / "base")
    tokenizer.save_pretrained(tmp_path / "base")
    pairs = PAIRS * 3 + [Pair(neutral="내일 봬요", toxic="내일 보든가 말든가")]
    write_kda_csv(tmp_path / "pairs.csv", pairs)
    metrics = metrics_of(
        run_cli(
            "detox",
            "train",
            str(tmp_path / "pairs.csv"),
            "--out",
            str(tmp_path / "detox"),
            "--base",
            str(tmp_path / "base"),
            "--epochs",
            "4",
            "--lr",
            "1e-2",
            "--test-share",
            "0.3",
            "--eval-limit",
            "2",
            "--no-progress",
        )
    )
    assert metrics["test_pairs"] > 0 and 0 <= metrics["chrf"] <= 100
    assert metrics["rewritten"] == min(2, metrics["test_pairs"])
    assert metrics["last_loss"] < metrics["first_loss"]
    source = tmp_path / "input.txt"
    source.write_text(f"{PAIRS[0].toxic}\n\n{PAIRS[1].toxic}\n", encoding="utf-8")
    result = run_cli("detox", "rewrite", str(tmp_path / "detox"), str(source), "--jsonl")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["input"] for r in rows] == [PAIRS[0].toxic, PAIRS[1].toxic]
    assert all(isinstance(r["output"], str) for r in rows)
    assert "rewriting" in result.stderr and "2/2" in result.stderr  # the progress bar
    # llama.cpp applies adapters to the embedded GGUF only; an unknown engine is refused
    refused = (("llamacpp", "embedded base"), ("vllm", "'vllm' is not one of 'transformers'"))
    for engine, message in refused:
        result = run_cli(
            "detox", "rewrite", str(tmp_path / "detox"), str(source), "--engine", engine
        )
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr

    result = run_cli(
        "detox", "rewrite", str(tmp_path / "detox"), str(tmp_path / "pairs.csv"), "--limit", "2"
    )
    assert result.returncode == 0, result.stderr
    (tmp_path / "rewrites.jsonl").write_text(result.stdout, encoding="utf-8")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["input"], r["reference"]) for r in rows] == [(p.toxic, p.neutral) for p in PAIRS[:2]]
    scored = metrics_of(run_cli("detox", "score", str(tmp_path / "rewrites.jsonl")))
    assert scored["rewrites"] == 2 and {"chrf", "bleu", "chrf_copy_input"} <= set(scored)
    assert "offensive_rate_input" not in scored  # no judge given

    exported = metrics_of(
        run_cli("train", "export", str(tmp_path / "detox"), str(tmp_path / "merged"))
    )
    assert exported["kind"] == "detox" and exported["export"] == "merged"
    assert (tmp_path / "merged" / "config.json").is_file()
    exported = metrics_of(
        run_cli("train", "export", str(tmp_path / "detox"), str(tmp_path / "adapter"), "--adapter")
    )
    adapter = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text("utf-8"))
    assert adapter["base_model_name_or_path"] == str((tmp_path / "base").resolve())


def test_bad_input_is_a_clear_error(tmp_path):
    result = run_cli("detox", "rewrite", str(tmp_path / "nowhere"), "-")
    assert result.returncode == 1 and "no such model directory" in result.stderr
    (tmp_path / "model.json").write_text(json.dumps({"kind": "reranker"}), encoding="utf-8")
    result = run_cli("train", "export", str(tmp_path), str(tmp_path / "out"))
    assert result.returncode == 1 and "only generator and detox" in result.stderr
    empty = tmp_path / "empty.csv"
    empty.write_text("neutral,implicit\n", encoding="utf-8")
    result = run_cli(
        "detox", "train", str(empty), "--out", str(tmp_path / "m"), "--base", str(tmp_path)
    )
    assert result.returncode == 1 and "has no pairs" in result.stderr
    assert "Traceback" not in result.stderr


def test_train_without_the_rewrite_evaluation(tmp_path):
    from tests.tiny_models import tiny_causal_lm

    model, tokenizer = tiny_causal_lm([p.neutral for p in PAIRS] + [p.toxic for p in PAIRS])
    model.save_pretrained(tmp_path / "base")
    tokenizer.save_pretrained(tmp_path / "base")
    write_kda_csv(tmp_path / "pairs.csv", PAIRS * 2)
    args = ["detox", "train", str(tmp_path / "pairs.csv"), "--out", str(tmp_path / "detox")]
    args += ["--base", str(tmp_path / "base"), "--test-share", "0.5", "--eval-limit", "0"]
    args += ["--copy-bias", "0.5", "--min-length-ratio", "0.25"]
    metrics = metrics_of(run_cli(*args, "--max-steps", "1", "--no-progress"))
    assert metrics["test_pairs"] > 0 and metrics["train_pairs"] > 0
    assert "rewritten" not in metrics and "chrf" not in metrics
    saved = json.loads((tmp_path / "detox" / "model.json").read_text("utf-8"))["settings"]
    assert (saved["copy_bias"], saved["min_length_ratio"]) == (0.5, 0.25)

    # the command line overrides the saved decoding: a huge copy bias copies tokens
    source = tmp_path / "input.txt"
    source.write_text(PAIRS[0].toxic + "\n", encoding="utf-8")
    result = run_cli("detox", "rewrite", str(tmp_path / "detox"), str(source), "--copy-bias", "1e4")
    assert result.returncode == 0, result.stderr
    out = result.stdout.strip()
    assert out and set(out.replace(" ", "")) <= set(PAIRS[0].toxic.replace(" ", "")), out


def test_offensiveness_judge_from_corpora_scores_rewrites(tmp_path):
    from rolecall.eval.offensiveness import offensive_rate
    from rolecall.train.classifier import Classifier
    from tests.dialogue_data import tiny

    data = tmp_path / "data"
    (data / "slang").mkdir(parents=True)
    (data / "detox").mkdir()
    (data / "slang" / "beep_labeled_train.tsv").write_text(
        "comments\tcontain_gender_bias\tbias\thate\n"
        "좋은 영상 감사합니다\tFalse\tnone\tnone\n"
        "이런 쓰레기 같은 놈\tFalse\tnone\toffensive\n",
        encoding="utf-8",
    )
    (data / "slang" / "curse_detection.txt").write_text(
        "오늘 날씨 좋다|0\n꺼져 이 바보야|1\n", encoding="utf-8"
    )
    write_kda_csv(data / "detox" / "kda_ko.csv", PAIRS)
    made = metrics_of(
        run_cli(
            "detox",
            "offensiveness-data",
            str(data),
            "--out",
            str(tmp_path / "offensive.jsonl"),
            "--kda-holdout",
            "0",
        )
    )
    assert made["examples"] == 4 + len(PAIRS) + len({p.neutral for p in PAIRS})
    assert made["offensive"] == 2 + len(PAIRS)
    tiny(frozen=False).save(tmp_path / "tiny")
    metrics_of(
        run_cli(
            "train",
            "classifier",
            str(tmp_path / "offensive.jsonl"),
            "--out",
            str(tmp_path / "judge"),
            "--backbone",
            str(tmp_path / "tiny" / "backbone"),
            "--test-share",
            "0",
            "--epochs",
            "2",
            "--no-progress",
        )
    )
    rewrites = tmp_path / "rewrites.jsonl"
    rewrites.write_text(
        "".join(
            json.dumps({"input": p.toxic, "output": p.neutral}, ensure_ascii=False) + "\n"
            for p in PAIRS
        ),
        encoding="utf-8",
    )
    scored = metrics_of(
        run_cli("detox", "score", str(rewrites), "--judge", str(tmp_path / "judge"))
    )
    judge = Classifier.load(tmp_path / "judge")
    assert scored["offensive_rate_input"] == round(
        offensive_rate(judge, [p.toxic for p in PAIRS]), 3
    )
    assert scored["offensive_rate_output"] == round(
        offensive_rate(judge, [p.neutral for p in PAIRS]), 3
    )
    assert "chrf" not in scored  # no references in the file

    (data / "slang" / "beep_labeled_train.tsv").write_text("text\tlabel\n", encoding="utf-8")
    result = run_cli("detox", "offensiveness-data", str(data), "--out", str(tmp_path / "o.jsonl"))
    assert result.returncode == 1 and "not BEEP!'s" in result.stderr
    rewrites.write_text('{"input": "a"}\n', encoding="utf-8")
    result = run_cli("detox", "score", str(rewrites))
    assert result.returncode == 1 and "line 1" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_killed_training_goes_on_from_its_checkpoint(tmp_path):
    """SIGKILL mid-run, then the same command: it goes on from the last checkpoint and
    ends with the adapters of an uninterrupted run; the checkpoint is gone once saved."""
    from safetensors.torch import load_file

    from tests.tiny_models import tiny_causal_lm

    pairs = [
        Pair(neutral=f"{p.neutral} {i}", toxic=f"{p.toxic} {i}") for i in range(80) for p in PAIRS
    ]
    model, tokenizer = tiny_causal_lm([p.neutral for p in pairs] + [p.toxic for p in pairs])
    model.save_pretrained(tmp_path / "base")
    tokenizer.save_pretrained(tmp_path / "base")
    write_kda_csv(tmp_path / "pairs.csv", pairs)

    def train(out: str, *more: str) -> list[str]:
        args = ["detox", "train", str(tmp_path / "pairs.csv"), "--out", str(tmp_path / out)]
        args += ["--base", str(tmp_path / "base"), "--eval-limit", "0", "--epochs", "3"]
        return [*args, "--no-progress", *more]

    whole = metrics_of(run_cli(*train("whole")))
    checkpoint = tmp_path / "killed" / ".checkpoint" / "latest"
    process = rolecall(*train("killed", "--checkpoint-every", "0"))
    while not checkpoint.is_file():
        assert process.poll() is None, (
            f"the run ended before it could be killed: {process.stderr.read()}"
        )
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    killed_at = int(checkpoint.read_text().removeprefix("step-"))
    assert 0 < killed_at < whole["steps"] and not (tmp_path / "killed" / "model.json").exists()

    changed = run_cli(*train("killed", "--lr", "1e-3"))
    assert changed.returncode == 1 and "another training run (config differ)" in changed.stderr
    assert "Traceback" not in changed.stderr

    again = run_cli(*train("killed"))
    assert f"going on from the checkpoint at step {killed_at} of {whole['steps']}" in again.stderr
    resumed = metrics_of(again)
    assert (resumed["steps"], resumed["last_loss"]) == (whole["steps"], whole["last_loss"])
    got = load_file(tmp_path / "killed" / "adapter" / "adapter_model.safetensors")
    want = load_file(tmp_path / "whole" / "adapter" / "adapter_model.safetensors")
    assert got.keys() == want.keys()
    assert all(torch.allclose(got[k], want[k], atol=1e-6) for k in want)
    assert not (tmp_path / "killed" / ".checkpoint").exists()
