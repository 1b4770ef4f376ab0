"""The K/DA pipeline on the embedded model and the real corpora of ../shared/data.

``rolecall kda run`` as a user runs it: the slang index is built from all three slang
corpora (~47k comments), 6 neutral sentences of chatbot_data.csv are rewritten with n = 0,
3, 5, 7 and 9 retrieved comments, both filters run, and the dataset files and a small
G-Eval are written. A second run directory with its own cache and the first 2 of those
sentences (a candidate's rewrite and verdicts depend on it alone) is killed with SIGKILL
(a real subprocess) during generation and again during filtering, then resumed: its
records must equal the uninterrupted run's for those sentences, and no LLM call may be
made twice. Every stage's kill-and-resume is also proven on the fake backend
(tests/pipelines/test_kill_resume.py).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from rolecall.jsonl import read_jsonl
from rolecall.records import Pair
from tests.cli_runs import cached_calls, keyed, kill_when, last_run_calls, rolecall, run_cli
from tests.paths import SHARED_DATA, SLANG_CORPORA

# minutes of CPU work each: more than pyproject's per-test limit (900 s) on a busy machine
pytestmark = [pytest.mark.embedded, pytest.mark.timeout(3600)]

NS = [0, 3, 5, 7, 9]
SENTENCES = 6
KILLED_SENTENCES = 2


def write_config(root: Path, index: Path, name: str, sentences: int = SENTENCES) -> Path:
    config = {
        "out": name,
        "cache": f"{name}/cache.sqlite",
        "model": "llamacpp:embedded",
        # the session's index of the same corpora: loaded, not built again
        "slang": {"index": str(index), "delimiter": "|", "corpora": SLANG_CORPORA},
        "sentences": {
            "path": f"{SHARED_DATA / 'neutral' / 'chatbot_data.csv'}:Q",
            "limit": sentences,
        },
        "generate": {"ns": NS, "seed": 7},
        "export": {"formats": ["csv", "parquet", "hf"], "name": "integration test"},
        "geval": {"criteria": ["overall", "consistency"], "limit": 4},
    }
    path = root / f"{name}.yaml"
    path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    return path


def kda_run(config: Path) -> list[str]:
    result = run_cli("kda", "run", str(config), "--no-progress")
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def candidate_key(row: dict) -> str:
    return row["provenance"]["candidate_id"]


def verdict_key(row: dict) -> tuple:
    return row["item_id"], row["judge"], row["model"]


@pytest.fixture(scope="module")
def root(tmp_path_factory, slang_index) -> Path:
    root = tmp_path_factory.mktemp("kda")
    lines = kda_run(write_config(root, slang_index[0], "ref"))
    assert any(line.startswith("index: ") for line in lines), lines
    return root


def test_the_index_holds_all_three_corpora(root, slang_index):
    manifest = json.loads((slang_index[0] / "manifest.json").read_text(encoding="utf-8"))
    assert [s["name"] for s in manifest["sources"]] == [
        "beep_unlabeled_comments.txt",
        "beep_labeled_train.tsv",
        "curse_detection.txt",
    ]
    assert all(s["kept"] > 1000 for s in manifest["sources"])
    assert manifest["comments"] > 40_000


def test_every_sentence_gets_a_candidate_per_n_with_its_retrieved_comments(root):
    ref = root / "ref"
    candidates = list(read_jsonl(ref / "candidates.jsonl", Pair))
    rejected = list(read_jsonl(ref / "rejected_candidates.jsonl"))
    assert len(candidates) + len(rejected) == SENTENCES * len(NS)
    assert len(candidates) >= SENTENCES * len(NS) // 2
    for pair in candidates:
        prov = pair.provenance
        assert prov["n"] in NS and len(prov["comment_ids"]) <= prov["n"]
        assert prov["prompt_hash"].startswith("sha256:") and prov["model"]
        assert all(
            i.split(":")[0]
            in {"beep_unlabeled_comments.txt", "beep_labeled_train.tsv", "curse_detection.txt"}
            for i in prov["comment_ids"]
        )
    assert all(p.provenance["comment_ids"] == [] for p in candidates if p.provenance["n"] == 0)
    assert any(len(p.provenance["comment_ids"]) == 9 for p in candidates)


def test_both_filters_ran_in_order_and_the_dataset_files_agree(root):
    ref = root / "ref"
    candidates = list(read_jsonl(ref / "candidates.jsonl", Pair))
    report = json.loads((ref / "retention.json").read_text(encoding="utf-8"))
    consistency, implicit = report["filters"]
    assert consistency["in"] == len(candidates) and implicit["in"] == consistency["kept"]
    assert set(consistency["by_n"]) <= {str(n) for n in NS}
    votes = list(read_jsonl(ref / "verdicts_consistency.jsonl"))
    assert len(votes) == len(candidates)
    assert all(v["raw_output"] and v["parse_status"] == "parsed" for v in votes)
    assert len(list(read_jsonl(ref / "verdicts_implicit.jsonl"))) == consistency["kept"]

    # no judge data in this config: the embedded LLM judges, with the warning recorded
    manifest = json.loads((ref / "manifest.json").read_text(encoding="utf-8"))
    assert {j[0]["kind"] for j in manifest["judges"].values()} == {"llm"}
    assert "near random" in manifest["warnings"][0]

    pairs = list(read_jsonl(ref / "pairs.jsonl", Pair))
    assert len(pairs) == implicit["kept"]  # may be 0: the 270M judge rarely says implicit
    with open(ref / "kda.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows == [["neutral", "implicit"]] + [[p.neutral, p.toxic] for p in pairs]
    from rolecall.formats.parquet import read_parquet

    assert read_parquet(ref / "kda.parquet") == pairs
    assert (ref / "hf_dataset" / "dataset_info.json").exists()
    card = (ref / "DATA_CARD.md").read_text(encoding="utf-8")
    assert "Content warning" in card and "chatbot_data.csv" in card
    geval = json.loads((ref / "geval.json").read_text(encoding="utf-8"))
    assert geval["pairs"] == min(4, len(pairs))
    assert all(item["mode"] == "score" for item in geval["items"])


def test_killed_twice_and_resumed_gives_the_same_records_with_no_call_repeated(root, slang_index):
    config = write_config(root, slang_index[0], "killed", KILLED_SENTENCES)
    killed = root / "killed"
    cache = killed / "cache.sqlite"
    planned = KILLED_SENTENCES * len(NS)
    kill_when(
        rolecall("kda", "run", str(config), "--no-progress"),
        killed / "candidates.jsonl",
        planned // 3,
        limit=1200,
    )
    after_first = cached_calls(cache)
    kill_when(
        rolecall("kda", "run", str(config), "--no-progress"),
        killed / "verdicts_consistency.jsonl",
        planned // 3,
        limit=1200,
    )
    after_second = cached_calls(cache)
    assert 0 < after_first < after_second
    kda_run(config)
    assert last_run_calls(killed) == cached_calls(cache) - after_second  # nothing asked twice

    ref = root / "ref"
    candidates = keyed(killed / "candidates.jsonl", candidate_key)
    rejected = keyed(killed / "rejected_candidates.jsonl", lambda r: r["id"])
    assert len(candidates) + len(rejected) == planned
    sentences = {c["neutral"] for c in candidates.values()}
    assert len(sentences) <= KILLED_SENTENCES
    assert candidates == {
        k: c for k, c in keyed(ref / "candidates.jsonl", candidate_key).items() if k in candidates
    }
    assert rejected.keys() <= keyed(ref / "rejected_candidates.jsonl", lambda r: r["id"]).keys()
    for name in ("verdicts_consistency.jsonl", "verdicts_implicit.jsonl"):
        mine = keyed(killed / name, verdict_key)
        assert mine == {
            k: v for k, v in keyed(ref / name, verdict_key).items() if k[0] in candidates
        }, name
    assert len(keyed(killed / "verdicts_consistency.jsonl", verdict_key)) == len(candidates)
    pairs = [p for p in read_jsonl(ref / "pairs.jsonl", Pair) if p.neutral in sentences]
    assert list(read_jsonl(killed / "pairs.jsonl", Pair)) == pairs
