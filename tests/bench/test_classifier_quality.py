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
