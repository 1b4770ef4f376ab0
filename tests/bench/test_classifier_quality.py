"""bench/classifier_quality.py's pure helpers: the target and the examples every model
trains on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.loading import load_bench

pytest.importorskip("torch")
pytest.importorskip("sklearn")

bench = load_bench("classifier_quality")
DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def test_the_target_is_met_from_five_points_up():
    assert bench.target(0.05) == {"value": 0.05, "target": ">= 0.05", "met": True}
    assert bench.target(0.0499)["met"] is False and bench.target(-0.1)["value"] == -0.1


@pytest.mark.skipif(not (DATA / "slang").is_dir(), reason="the shared corpora are not here")
def test_the_examples_are_a_seeded_beep_sample_or_the_readme_mixture():
    beep = bench.training_examples(DATA, "beep", 50, 1000, 0)
    assert len(beep) == 50 and beep == bench.training_examples(DATA, "beep", 50, 1000, 0)
    assert {e.label for e in beep} == {"positive", "negative"}
    mixed = bench.training_examples(DATA, "mixed", None, 20, 0)
    assert len(mixed) == 60  # 20 from each of the three corpora
    with pytest.raises(SystemExit, match="beep or mixed"):
        bench.training_examples(DATA, "other", None, 20, 0)


def test_one_seed_gives_every_row_as_numbers_per_domain(monkeypatch):
    """``one_seed`` with every row asked for (the default with its TF-IDF half, the head
    alone, a frozen layer, both bundled encoders' heads and views), each head on a tiny
    backbone and a tiny examples file so that it runs in seconds: one dict of numbers per
    row."""
    import argparse

    from tests.dialogue_data import make_examples, tiny

    class TinyChoice:  # BackboneChoice's interface, any backbone a tiny frozen one
        def __init__(self, source, frozen=None, layer=None, tune_layers=None):
            self.layer = layer

        def resolved(self, model):
            return self.layer, True, None

        def load(self, model):
            return tiny(frozen=True)

    examples = make_examples(24)
    monkeypatch.setattr(bench, "BackboneChoice", TinyChoice)
    monkeypatch.setattr(bench, "training_examples", lambda *args: examples)
    args = argparse.Namespace(
        data_dir=DATA, examples="beep", limit=None, per_source=10, curse=0,
        frozen_layers="1", sentence=True, encoders="e5", skip_gemma=False, epochs=1,
        cache_dir=None,
    )  # fmt: skip
    rows, size = bench.one_seed(args, 0, make_examples(16))
    assert size == len(examples)
    assert set(rows) == {
        "tfidf",
        bench.DEFAULT,
        bench.HEAD_ALONE,
        "classifier, frozen layer 1",
        "classifier, sentence encoder",
        "tfidf + sentence view",
        "classifier, e5",
        "tfidf + e5 view",
        bench.BOTH,
    }
    for name, row in rows.items():
        assert isinstance(row, dict) and {"beep_dev_macro_f1", "texts_per_second"} <= set(row)
        assert all(isinstance(v, float) for v in row.values()), name


def test_the_encoders_come_from_both_options_and_an_unknown_one_is_refused():
    import argparse

    args = argparse.Namespace(encoders="e5, sentence", sentence=False)
    assert bench.encoders_of(args) == ["sentence", "e5"]
    with pytest.raises(SystemExit, match="--encoders takes sentence, e5, not use"):
        bench.encoders_of(argparse.Namespace(encoders="use", sentence=False))
