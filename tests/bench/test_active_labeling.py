"""bench/active_labeling.py on a small configuration: tiny BEEP! files, the real care-call
turns, one seed, a few steps; every order run, the table and the plot written, and the
last line the JSON object with the two targets of issue #35 item 4."""

from __future__ import annotations

import json

import numpy as np
import pytest

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
