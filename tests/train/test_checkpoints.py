"""Checkpoints: a killed ``fit`` goes on from its last checkpoint to the very result of an
uninterrupted run; a checkpoint of another run or a broken one is refused with the fix."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rolecall.errors import InputFileError  # noqa: E402
from rolecall.train.checkpoints import Checkpoints  # noqa: E402
from rolecall.train.loop import TrainConfig, fit  # noqa: E402
from tests.train.toy import TEXTS  # noqa: E402
from tests.train.toy import setup as toy_setup  # noqa: E402

CONFIG = TrainConfig(epochs=3, batch_size=4, lr=1e-2, backbone_lr=1e-3)  # 4 steps a pass


def setup():
    """The toy head and tiny backbone, the head's initial weights the same every time."""
    torch.manual_seed(0)
    return toy_setup()


class Killed(Exception):
    pass


def killed_at(loss_of, step: int):
    """``loss_of`` that dies when asked for its ``step``-th batch (1-based)."""
    calls = 0

    def dying(batch):
        nonlocal calls
        calls += 1
        if calls == step:
            raise Killed
        return loss_of(batch)

    return dying


def trained_weights(head, backbone) -> list:
    return [p.detach().clone() for p in [*head.parameters(), *backbone.parameters()]]


@pytest.mark.parametrize("kill", [5, 7])  # just after a pass ended; within a pass
def test_a_killed_run_goes_on_to_the_uninterrupted_result(tmp_path, kill):
    backbone, head, loss_of = setup()
    backbone.train(True)  # dropout on: the resumed run must draw the same masks
    whole = fit(head, backbone, TEXTS, loss_of, CONFIG, progress=False)
    expected = trained_weights(head, backbone)

    checkpoints = Checkpoints(tmp_path / "ckpt", every_seconds=0)
    backbone, head, loss_of = setup()
    with pytest.raises(Killed):
        fit(head, backbone, TEXTS, killed_at(loss_of, kill), CONFIG, False, "t", checkpoints)
    assert (tmp_path / "ckpt" / "latest").read_text() == f"step-{kill - 1}"
    assert [p.name for p in (tmp_path / "ckpt").glob("step-*")] == [f"step-{kill - 1}"]

    backbone, head, loss_of = setup()  # a new process: fresh weights, same checkpoint
    calls = []
    counted = lambda batch: calls.append(len(batch)) or loss_of(batch)  # noqa: E731
    again = fit(head, backbone, TEXTS, counted, CONFIG, False, "t", checkpoints)
    assert len(calls) == 12 - (kill - 1)  # only the steps left
    assert again["losses"] == whole["losses"] and again["epoch_losses"] == whole["epoch_losses"]
    for got, want in zip(trained_weights(head, backbone), expected, strict=True):
        assert torch.equal(got, want)


def test_a_checkpoint_of_another_run_or_a_broken_one_is_refused(tmp_path):
    checkpoints = Checkpoints(tmp_path / "ckpt", every_seconds=0, identity={"lora_r": 8})
    backbone, head, loss_of = setup()
    with pytest.raises(Killed):
        fit(head, backbone, TEXTS, killed_at(loss_of, 3), CONFIG, False, "t", checkpoints)

    backbone, head, loss_of = setup()
    other = CONFIG.model_copy(update={"lr": 5e-3})
    with pytest.raises(InputFileError, match=r"another training run \(config differ\)") as error:
        fit(head, backbone, TEXTS, loss_of, other, False, "t", checkpoints)
    assert "delete" in error.value.fix
    with pytest.raises(InputFileError, match="items differ"):
        fit(head, backbone, TEXTS[:8], loss_of, CONFIG, False, "t", checkpoints)
    changed = Checkpoints(tmp_path / "ckpt", every_seconds=0, identity={"lora_r": 4})
    with pytest.raises(InputFileError, match="identity differ"):
        fit(head, backbone, TEXTS, loss_of, CONFIG, False, "t", changed)

    (tmp_path / "ckpt" / "step-2" / "state.pt").write_bytes(b"cut short")
    with pytest.raises(InputFileError, match="not a readable training checkpoint") as error:
        fit(head, backbone, TEXTS, loss_of, CONFIG, False, "t", checkpoints)
    assert "to train from the start" in error.value.fix
    checkpoints.clear()  # what the fix says: the run then starts over
    assert fit(head, backbone, TEXTS, loss_of, CONFIG, False, "t", checkpoints)["steps"] == 12


def test_checkpoints_wait_their_interval_and_the_last_step_is_always_written(tmp_path):
    checkpoints = Checkpoints(tmp_path / "ckpt", every_seconds=3600)
    backbone, head, loss_of = setup()
    fit(head, backbone, TEXTS, loss_of, CONFIG, False, "t", checkpoints)
    assert (tmp_path / "ckpt" / "latest").read_text() == "step-12"
    backbone, head, loss_of = setup()
    calls = []
    counted = lambda batch: calls.append(1) or loss_of(batch)  # noqa: E731
    history = fit(head, backbone, TEXTS, counted, CONFIG, False, "t", checkpoints)
    assert calls == [] and history["steps"] == 12  # finished: nothing left to train
