"""bench/feedback_loop.py on one seed: the three parts of the dialogues, the feedback made
of version 1's flagged replies, the matched operating point, and the targets' JSON."""

from __future__ import annotations

import numpy as np

from rolecall.judge.written_out_of_bounds import gold_examples
from tests.bench import loading


def bench():
    return loading.load_bench("feedback_loop", "bench_feedback_loop")


def test_one_seed_splits_by_dialogue_and_matches_the_fallback_count():
    module = bench()
    items = gold_examples(module.EXAMPLES)
    parts = module.split(items, 0)
    names = [{e.dialogue_id for e in part} for part in parts]
    assert not (names[0] & names[1] or names[0] & names[2] or names[1] & names[2])
    assert sum(len(part) for part in parts) == len(items)
    bot = module.Bot(sorted({e.response for e in items}), {e.response for e in items
                                                         if e.label == "negative"})  # fmt: skip
    run = module.run_seed(bot, items, 0)
    assert run["feedback_examples"] == 2 * run["flagged_in_feedback"]  # negative + gold
    falls = {name: sum(v) for name, v in run["fallbacks"].items()}
    assert falls["v2 at v1's fallbacks"] == falls["control at v1's fallbacks"] == falls["v1"]
    for name, errors in run["errors"].items():  # an error is a served, not a replaced, reply
        assert not np.any(np.array(errors) * np.array(run["fallbacks"][name]))


def test_the_targets_line_is_the_houses(capsys, monkeypatch):
    import json
    import sys

    monkeypatch.setattr(sys, "argv", ["feedback_loop.py", "--seeds", "0"])
    bench().main()
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    names = {"v2_vs_v1", "v2_vs_control", "matched_v2_vs_v1", "matched_v2_vs_control"}
    loading.check_targets(result["targets"], names)
    assert result["eval_contexts"] == result["runs"][0]["eval_contexts"] > 0
