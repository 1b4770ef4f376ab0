"""Offensiveness examples from the real shared corpora."""

from __future__ import annotations

from rolecall.eval.offensiveness import (
    beep_examples,
    curse_examples,
    kda_examples,
    offensiveness_examples,
)
from rolecall.formats.kda import read_kda_csv
from tests.paths import SHARED_DATA


def test_each_corpus_gives_both_labels():
    beep = beep_examples(SHARED_DATA / "slang" / "beep_labeled_train.tsv")
    curse = curse_examples(SHARED_DATA / "slang" / "curse_detection.txt")
    assert len(beep) > 7000 and len(curse) > 5000
    for examples in (beep, curse):
        labels = {e.label for e in examples}
        assert labels == {"positive", "negative"}
        assert all(e.history == [] and e.response for e in examples)
    pairs = read_kda_csv(SHARED_DATA / "detox" / "kda_ko.csv")[:30]
    kda = kda_examples(pairs)
    assert sum(e.label == "negative" for e in kda) == 30  # every implicit sentence
    assert sum(e.label == "positive" for e in kda) == len({p.neutral for p in pairs})


def test_a_capped_mix_is_shuffled_and_repeatable():
    pairs = read_kda_csv(SHARED_DATA / "detox" / "kda_ko.csv")[:100]
    mix = offensiveness_examples(SHARED_DATA, pairs, per_source=50, seed=1)
    assert len(mix) == 150 and mix == offensiveness_examples(SHARED_DATA, pairs, 50, 1)
    assert {e.dialogue_id.split(":")[0] for e in mix} == {"beep", "curse", "kda"}
