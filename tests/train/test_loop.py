"""The training loop and model directories, on a toy head over a tiny backbone."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rolecall.errors import InputFileError  # noqa: E402
from rolecall.train.loop import TrainConfig, fit, read_model, save_model  # noqa: E402
from tests.train.toy import TEXTS, setup  # noqa: E402


def test_fit_trains_head_and_backbone_and_the_loss_falls():
    backbone, head, loss_of = setup()
    before_head = head.weight.detach().clone()
    before_backbone = next(backbone.parameters()).detach().clone()
    history = fit(
        head,
        backbone,
        TEXTS,
        loss_of,
        TrainConfig(epochs=15, batch_size=4, lr=1e-2, backbone_lr=1e-3),
        progress=False,
    )
    assert history["steps"] == 60 and history["last_loss"] < history["first_loss"] * 0.5
    assert not torch.equal(head.weight, before_head)
    assert not torch.equal(next(backbone.parameters()), before_backbone)


def test_max_steps_and_the_saved_model_reads_back(tmp_path):
    backbone, head, loss_of = setup()
    history = fit(
        head, backbone, TEXTS, loss_of, TrainConfig(max_steps=3, batch_size=4), progress=False
    )
    assert history["steps"] == 3
    save_model(tmp_path / "m", "toy", {"classes": 2}, head, backbone, {"f1": 0.5})
    settings, state, again = read_model(tmp_path / "m", "toy")
    assert settings == {"classes": 2} and torch.equal(state["weight"], head.weight)
    with torch.no_grad():
        assert torch.allclose(again.encode(["오늘"], 8)[0], backbone.encode(["오늘"], 8)[0])
    with pytest.raises(InputFileError, match="holds a toy model, not a retriever"):
        read_model(tmp_path / "m", "retriever")
    (tmp_path / "m" / "head.pt").write_bytes(b"not a torch file")
    with pytest.raises(InputFileError, match="cannot be read"):
        read_model(tmp_path / "m", "toy")
    with pytest.raises(InputFileError, match="not a trained rolecall model"):
        read_model(tmp_path, "toy")


def test_min_steps_gives_a_small_set_whole_extra_passes():
    backbone, head, loss_of = setup()
    config = TrainConfig(epochs=1, min_steps=10, batch_size=4)  # 4 steps a pass
    history = fit(head, backbone, TEXTS, loss_of, config, progress=False)
    assert history["steps"] == 12 and len(history["epoch_losses"]) == 3
    config = TrainConfig(epochs=2, min_steps=3, batch_size=4)  # enough steps already
    assert fit(head, backbone, TEXTS, loss_of, config, progress=False)["steps"] == 8


def test_the_classifier_trains_one_pass_or_400_steps_and_frozen_three_passes():
    from rolecall.train.settings import classifier_training

    tuned, frozen = classifier_training(False), classifier_training(True)
    assert (tuned.epochs, tuned.min_steps) == (1, 400)
    assert (frozen.epochs, frozen.min_steps) == (3, None)
    given = classifier_training(False, epochs=2, seed=3)
    assert (given.epochs, given.min_steps, given.seed) == (2, None, 3)


def test_the_retriever_kind_follows_the_backbone_unless_given():
    from rolecall.train.settings import retriever_kind

    assert retriever_kind("sentence") == retriever_kind("e5") == "residual"
    assert retriever_kind("embedded") == retriever_kind("/models/klue-roberta") == "poly"
    assert retriever_kind("sentence", "poly") == "poly"
