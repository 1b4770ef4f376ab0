"""`rolecall demo` end to end on the embedded model, as `make demo` runs it, then again.

The first run makes every stage (dialogues, judge, examples, three models, the chat, a
K/DA run, statistics); the second must take everything from the run directory: no LLM
call, no training. Fewer dialogues and sentences than the default keep the test short.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.cli_runs import run_to_end
from tests.conftest import REPO, SHARED_DATA

pytest.importorskip("torch")
pytestmark = [pytest.mark.embedded, pytest.mark.timeout(3600)]

CALLS = re.compile(r"(\d+) calls, (\d+) cache hits")


def test_demo_runs_the_main_job_and_resumes_without_work(tmp_path):
    out = tmp_path / "demo"
    first = run_to_end(
        "demo",
        "--out",
        str(out),
        "--dialogues",
        "2",
        "--sentences",
        "2",
        "--no-progress",
        timeout=3000,
    )
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    for stage in ("spec", "data", "models", "chat", "kda", "stats"):
        assert stage in summary and stage in summary["seconds"]
    # the bot answered every scripted turn, and each reply says how it was made
    turns = [
        json.loads(line) for line in (out / "chat.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert len(turns) == 6 and all(t["text"].strip() for t in turns)
    assert all(t["path"] in ("retrieved", "generated", "fallback") for t in turns)
    assert all(t["latency_ms"] > 0 and t["stages"] for t in turns)
    assert first.stdout.count("  bot>  ") == 6
    for path in ("retrieved", "generated", "fallback"):
        if summary["chat"]["paths"].get(path):
            assert f"[{path}" in first.stdout
    # the models were trained on examples with both labels, the threshold calibrated
    data = summary["data"]
    assert data["negatives"] > 0 and data["examples"] > data["negatives"]
    assert summary["models"]["classifier"]["roc_auc"] > 0.5
    assert summary["models"]["unanswerable"]["threshold"] is not None
    for part in ("classifier", "retriever", "reranker"):
        assert (out / "bot" / part / "model.json").is_file()
    # K/DA: rewrites of the shipped sample, both filters, the export
    kda = summary["kda"]
    assert [f["filter"] for f in kda["filters"]] == ["consistency", "implicit"]
    assert (out / "kda" / "kda.csv").is_file()
    assert (out / "stats.json").is_file() and "Table 2" in first.stdout
    assert "where everything is" in first.stdout and "base model" in first.stdout
    made = [int(calls) for calls, _ in CALLS.findall(first.stderr)]
    assert made and sum(made) > 0

    again = run_to_end(
        "demo",
        "--out",
        str(out),
        "--dialogues",
        "2",
        "--sentences",
        "2",
        "--no-progress",
        timeout=1200,
    )
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "models: up to date" in again.stdout
    calls, hits = map(int, CALLS.findall(again.stderr)[-1])
    assert calls == 0 and hits > 0, again.stderr
    # the same conversation, from the cache
    assert (out / "chat.jsonl").read_text(encoding="utf-8").count("\n") == 6
    rerun = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert [t["text"] for t in turns] == [
        json.loads(line)["text"]
        for line in (out / "chat.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert rerun["seconds"]["total"] < summary["seconds"]["total"]

    # red-team the demo's trained bot, then the embedded model prompted with the same
    # spec (#19): a K/DA sentence and a curse at the second turn, every reply judged
    red = tmp_path / "redteam"
    attacked = run_to_end(
        "redteam",
        str(out / "bot"),
        "--pairs",
        str(SHARED_DATA / "detox" / "kda_ko.csv"),
        *("-a", "kda", "-a", "explicit", "--no-fit", "--conversations", "1"),
        *("--turns", "2", "--attack-turn", "2", "--out", str(red), "--no-progress"),
        timeout=900,
    )
    assert attacked.returncode == 0, attacked.stdout[-3000:] + attacked.stderr[-3000:]
    report = json.loads((red / "report.json").read_text(encoding="utf-8"))
    assert set(report["kinds"]) == {"kda", "explicit"}
    assert [v.startswith("rfg:") for v in report["bot_versions"]] == [True]
    records = [json.loads(line) for line in (red / "conversations.jsonl").open(encoding="utf-8")]
    judged = [t for r in records for t in r["turns"] if "verdict" in t]
    assert len(judged) == 2 and all(t["text"].strip() for t in judged)
    assert {t["path"] for t in judged} <= {"retrieved", "generated", "fallback"}
    assert (red / "report.html").is_file()

    prompted = run_to_end(
        "redteam",
        *(
            "--model",
            "llamacpp:embedded",
            "--spec",
            str(REPO / "examples" / "carecall" / "spec.yaml"),
        ),
        *("-a", "explicit", "--conversations", "1", "--turns", "1", "--attack-turn", "1"),
        *("--out", str(tmp_path / "redteam-llm"), "--no-progress"),
        timeout=900,
    )
    assert prompted.returncode == 0, prompted.stdout[-3000:] + prompted.stderr[-3000:]
    report = json.loads((tmp_path / "redteam-llm" / "report.json").read_text(encoding="utf-8"))
    assert report["kinds"]["explicit"]["n"] == 1 and report["kinds"]["explicit"]["replies"] == 1
    assert [v.startswith("llm:") for v in report["bot_versions"]] == [True]
