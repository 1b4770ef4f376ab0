"""`rolecall bot run` on the real sentence encoder (issue 47), beside the demo's bot (which
the demo builds with it): a run stopped after a stage and run again finishes with the same
parts as the demo's one-go run of the same sources; a bad source is a clear error."""

from __future__ import annotations

import json

import pytest

from rolecall.pipelines.bot_run import EARLIER, run_bot
from rolecall.pipelines.bot_sources import Source, load_bot_config
from tests.cli_runs import run_cli
from tests.paths import REPO

pytest.importorskip("torch")
pytestmark = [pytest.mark.embedded, pytest.mark.timeout(1800)]

CARECALL = REPO / "examples" / "carecall"


def demo_config(demo_run, out):
    """The demo's bot config, the checks left out and only the TF-IDF guard."""
    config = load_bot_config(CARECALL / "bot.yaml")
    generated = Source(
        examples=str(demo_run.out / "dialogues" / "examples.jsonl"), name="generated dialogues"
    )
    return config.model_copy(
        update={
            "out": str(out),
            "sources": [generated, *(s for s in config.sources if s.dialogues)],
            "features": str(demo_run.out / "features"),
            "guard": ["tfidf"],
            "user_checks": config.user_checks.model_copy(update={"turns": None}),
        }
    )


def test_a_bot_run_stopped_after_a_stage_finishes_with_the_demos_parts(demo_run, tmp_path):
    config, lines = demo_config(demo_run, tmp_path / "bot"), []
    first = run_bot(config, until="reranker", progress=False, say=lines.append)
    assert list(first) == ["examples", "guard", "retriever", "reranker", "dir"]
    bot_dir = tmp_path / "bot" / "v1"  # the first version
    assert first["dir"] == str(bot_dir) and not (bot_dir / "bot.json").exists()
    lines.clear()
    found = run_bot(config, progress=False, say=lines.append)
    assert found["dir"] == str(bot_dir) and f"version: {bot_dir} (resumed)" in lines
    assert sum(line.endswith(EARLIER) for line in lines) == 4  # not trained again
    demo = demo_run.summary["models"]
    assert found["examples"] == demo["examples"]  # the same merge and split
    assert found["guard"]["candidates"]["tfidf"] == demo["guard"]["candidates"]["tfidf"]

    def numbers(part: dict) -> dict:
        return {k: v for k, v in part.items() if not k.endswith("seconds")}

    for stage in ("retriever", "reranker"):
        assert numbers(found[stage]) == numbers(demo[stage]), stage
    # calibrated from MC dropout and cosines: the same to float noise (this process and the
    # demo's differ in threads)
    mine, theirs = found["unanswerable"], demo["unanswerable"]
    assert mine["method"] == theirs["method"] and mine["items"] == theirs["items"]
    assert mine["roc_auc_by_method"] == pytest.approx(theirs["roc_auc_by_method"], abs=2e-3)
    assert mine["threshold"] == pytest.approx(theirs["threshold"], rel=1e-3)
    assert found["checks"] == {"trained": False}
    bot = json.loads((bot_dir / "bot.json").read_text(encoding="utf-8"))
    assert bot["spec"] == "spec.yaml" and not bot["user_checks"]  # a copy: the bot moves
    assert (bot_dir / "spec.yaml").read_bytes() == (CARECALL / "spec.yaml").read_bytes()
    pool = ("retriever", "candidates", "candidates.jsonl")
    served = bot_dir.joinpath(*pool).read_bytes()
    assert served == demo_run.out.joinpath("bot", *pool).read_bytes()
    # the second retriever (e5 beside the sentence encoder) indexes the same pool
    assert bot_dir.joinpath("partner_retriever", *pool[1:]).read_bytes() == served
    assert any(k.startswith("e5_") for k in found["retriever"])


def test_a_bad_source_is_a_clear_error_and_a_changed_one_a_new_version(demo_run, tmp_path):
    config = tmp_path / "bot.yaml"
    config.write_text(
        f"spec: {CARECALL / 'spec.yaml'}\nout: {tmp_path / 'bot'}\n"
        "sources:\n  - examples: missing.jsonl\n",
        encoding="utf-8",
    )
    failed = run_cli("bot", "run", str(config), "--no-progress")
    assert failed.returncode != 0 and "Traceback" not in failed.stdout + failed.stderr
    assert "missing.jsonl" in failed.stderr and "file not found" in failed.stderr
    # a changed source makes a new version; the old one is kept
    examples = tmp_path / "ex.jsonl"
    examples.write_text(
        (demo_run.out / "bot" / "examples.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
    )
    config.write_text(
        f"spec: {CARECALL / 'spec.yaml'}\nout: {tmp_path / 'bot'}\n"
        f"features: {demo_run.out / 'features'}\nguard: [tfidf]\n"
        "sources:\n  - examples: ex.jsonl\n",
        encoding="utf-8",
    )
    done = run_cli("bot", "run", str(config), "--until", "examples", "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    first = (tmp_path / "bot" / "v1" / "examples.jsonl").read_bytes()
    lines = examples.read_text(encoding="utf-8").splitlines()
    examples.write_text("\n".join(lines[1:]) + "\n", "utf-8")  # one example fewer
    changed = run_cli("bot", "run", str(config), "--until", "examples", "--no-progress")
    assert changed.returncode == 0, changed.stdout + changed.stderr
    assert "v2 (new)" in changed.stdout
    assert (tmp_path / "bot" / "v1" / "examples.jsonl").read_bytes() == first  # kept
    assert (tmp_path / "bot" / "v2" / "examples.jsonl").read_bytes() != first
    # without versions, the one bot directory is never overwritten by other examples
    text = config.read_text(encoding="utf-8").replace(str(tmp_path / "bot"), str(tmp_path / "one"))
    config.write_text(text + "versions: false\n", encoding="utf-8")
    done = run_cli("bot", "run", str(config), "--until", "examples", "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    examples.write_text(
        (demo_run.out / "bot" / "examples.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
    )
    refused = run_cli("bot", "run", str(config), "--until", "examples", "--no-progress")
    assert refused.returncode != 0 and "sources_digest changed" in refused.stderr
    assert "new output directory" in refused.stderr
