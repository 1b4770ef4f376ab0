"""bench/active_labeling.py on a small configuration: tiny BEEP! files, the real care-call
turns, one seed, a few steps; every order run, the table and the plot written, and the
last line the JSON object with the two targets of issue #35 item 4. The queue's other
builds (``--queue committee``, ``panel-spread``) on a tiny made-up set, without Kiwi."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import sparse
from sklearn.linear_model import LogisticRegression

from tests.bench import loading

BEEP_HEADER = "comments\tcontain_gender_bias\tbias\thate"
TARGETS = {"beep_queue_over_random_labels", "carecall_queue_over_random_labels"}


def load_bench():
    return loading.load_bench("active_labeling", "bench_active_labeling")


def write_beep(path, rows: int) -> None:
    lines = [BEEP_HEADER]
    for i in range(rows):
        hate = ("offensive", "hate", "none", "none", "none")[i % 5]
        text = f"이 배우 진짜 한심하다 {i}" if hate != "none" else f"이 드라마 재밌게 봤어요 {i}"
        if i % 7 == 0:  # some the lexicon gets wrong, so the panel disagrees
            text = f"한심한 줄 알았는데 재밌게 봤어요 {i}" if hate == "none" else f"배우 별로 {i}"
        lines.append(f"{text}\tFalse\tnone\t{hate}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.slow
def test_every_order_is_measured_and_the_targets_are_the_benchs_own(tmp_path, capsys):
    for part in ("slang", "eval", "lexicon"):
        (tmp_path / "data" / part).mkdir(parents=True)
    write_beep(tmp_path / "data" / "slang" / "beep_labeled_train.tsv", 120)
    write_beep(tmp_path / "data" / "eval" / "beep_labeled_dev.tsv", 30)
    (tmp_path / "data" / "lexicon" / "korean_bad_words.txt").write_text("한심\n시발\n", "utf-8")
    plot = tmp_path / "plots" / "active.png"
    argv = ["--data", str(tmp_path / "data"), "--seeds", "3", "--max-labels", "70"]
    summary = load_bench().main([*argv, "--plot", str(plot)])

    out = capsys.readouterr().out.strip().splitlines()
    assert json.loads(out[-1]) == summary
    assert any(line.startswith("== carecall") for line in out)
    loading.check_targets(summary["targets"], TARGETS)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert summary["random_share"] == 0.2 and summary["judge_views"] == ["chars", "morphemes"]
    assert summary["queue"] == "panel"  # the default build of the queue's order
    for name in ("beep", "carecall"):
        found = summary["sets"][name]
        # label counts: the start, then a step at a time, up to the cap
        assert found["label_counts"] == [[20, 45, 70]] == [found["curve_label_counts"]]
        orders = found["orders"]
        assert set(orders) == {"random", "queue", "uncertainty"}
        # every order starts from the same random labels, so from the same judge
        assert len({o["macro_f1"][0] for o in orders.values()}) == 1
        for order in orders.values():
            assert len(order["macro_f1"]) == 3 and all(0 <= f <= 1 for f in order["macro_f1"])
            (needed,) = order["labels_needed_per_seed"]
            assert needed in (20, 45, 70) and order["labels_needed"] == needed
            # the labels needed are where the curve first reaches 95% of all labels'
            curve, goal = order["macro_f1"], 0.95 * found["all_labels_macro_f1_per_seed"][0]
            reached = [c for c, f in zip((20, 45, 70), curve) if f >= goal]
            assert order["reached"] == bool(reached)
            assert needed == (reached[0] if reached else 70)
        ratio = orders["queue"]["labels_needed"] / orders["random"]["labels_needed"]
        target = summary["targets"][f"{name}_queue_over_random_labels"]
        assert target["value"] == round(ratio, 3)
    assert summary["sets"]["carecall"]["pool"][0] + summary["sets"]["carecall"]["held_out"][0] == (
        244 + 183
    )
    assert summary["sets"]["beep"]["pool"] == [120] and summary["sets"]["beep"]["held_out"] == [30]


def test_the_start_labels_hold_both_classes_and_the_counts_end_at_the_cap():
    bench = load_bench()
    gold = np.array([0] * 3 + [1] * 97)
    for seed in range(20):
        chosen = bench.start_labels(gold, 5, seed)
        assert len(set(chosen)) == 5 and {gold[i] for i in chosen} == {0, 1}
    args = bench.arguments(["--max-labels", "100", "--step", "25", "--start", "20"])
    assert bench.label_counts(1000, args) == [20, 45, 70, 95, 100]
    assert bench.label_counts(60, args) == [20, 45, 60]


def tiny_set(bench, size: int = 60):
    """A made-up set: two clusters of rows (a class each, some near-duplicates), the same
    rows for the judge and the panel's one-view judges, a fixed judge that says the gold."""
    rng = np.random.default_rng(0)
    gold = np.array([i % 2 for i in range(size)])
    dense = rng.random((size, 12)) * 0.3
    dense[np.arange(size), gold * 6 + rng.integers(0, 6, size)] += 1.0
    dense[1] = dense[0]  # a duplicate pair
    rows = sparse.csr_matrix(dense)
    names = ["offensive", "none"]
    regression = LogisticRegression(C=4.0, class_weight="balanced", max_iter=2000)
    pool = {"judge": rows, "chars": rows, "morphemes": rows}
    fixed = [names[g] for g in gold]
    return bench.LabelSet(
        "tiny", "tiny", names, pool, {"judge": rows}, gold, fixed, fixed, regression, 1.0
    )


def test_each_queue_build_serves_unlabelled_items_and_spreading_keeps_the_random_ones():
    bench = load_bench()
    found = tiny_set(bench)
    labelled = bench.start_labels(found.pool_gold, 10, 0)
    judge = bench.refit(found, "judge", labelled)
    batches = {}
    for queue in bench.QUEUES:
        served = bench.next_labels(found, "queue", judge, labelled, 25, 5, queue)
        again = bench.next_labels(found, "queue", judge, labelled, 25, 5, queue)
        assert served == again, queue  # the same seed, the same batch
        assert len(set(served)) == 25 and not set(served) & set(labelled), queue
        batches[queue] = served
    # every fifth place is a random item: the spread panel keeps the panel's there
    randoms = range(4, 25, 5)
    assert [batches["panel-spread"][i] for i in randoms] == [batches["panel"][i] for i in randoms]
    # the committee: bootstrap copies of the judge, each of both classes, from the seed
    members = bench.bootstrap_judges(found, labelled, seed=3)
    assert len(members) == bench.COMMITTEE_SIZE
    weights = [m.weights for m in members]
    assert not all(np.allclose(weights[0], w) for w in weights[1:])
    assert all(
        np.allclose(m.weights, n.weights)
        for m, n in zip(members, bench.bootstrap_judges(found, labelled, seed=3))
    )


def test_a_spread_batch_skips_near_duplicates_and_keeps_the_random_places():
    bench = load_bench()
    rows = sparse.csr_matrix(
        [[1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    )
    queue = [(0, "ranked"), (1, "ranked"), (2, "ranked"), (3, "ranked"), (4, "ranked")]
    # 1 is 0 again (cosine 1): skipped; 3 has cosine 0.71 to 0 and to 2
    assert bench.spread_batch(queue, rows, 3, threshold=0.4) == [
        (0, "ranked"),
        (2, "ranked"),
        (4, "ranked"),
    ]
    assert bench.spread_batch(queue, rows, 3, threshold=0.8) == [
        (0, "ranked"),
        (2, "ranked"),
        (3, "ranked"),
    ]
    # a random entry keeps its place and item; where every item left is too close, the
    # best ranked is taken
    mixed = [(0, "ranked"), (1, "random"), (3, "ranked"), (2, "ranked")]
    assert bench.spread_batch(mixed, rows[:4], 4, threshold=0.4) == [
        (0, "ranked"),
        (1, "random"),
        (2, "ranked"),
        (3, "ranked"),
    ]
    assert bench.spread_batch(queue, rows, 5, threshold=1.0) == queue  # nothing too close
    args = bench.arguments([])
    assert args.queue == "panel" and args.seeds == list(range(10)) and args.max_labels == 3000
