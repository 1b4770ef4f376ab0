"""The label-scoring core every judge shares: mode resolution and the label softmax."""

from __future__ import annotations

import math

import pytest

from rolecall.errors import ConfigError
from rolecall.judge.labels import log_softmax, resolve_mode, softmax
from tests.fakes import FakeBackend, FakeOptions


def backend(**capabilities: bool) -> FakeBackend:
    fake = FakeBackend("modes", FakeOptions())
    for name, value in capabilities.items():
        setattr(fake, f"supports_{name}", value)
    return fake


def test_softmax_over_label_scores():
    probs = softmax({1: math.log(0.2), 2: math.log(0.6)})
    assert probs == pytest.approx({1: 0.25, 2: 0.75})
    words = softmax({"유지": -1.0, "변화": -1.0})
    assert words == pytest.approx({"유지": 0.5, "변화": 0.5})
    # no overflow on very unlikely words: shifted by the largest score first
    assert softmax({"a": -2000.0, "b": -2001.0})["a"] == pytest.approx(1 / (1 + math.e**-1))
    assert sum(
        math.exp(v) for v in log_softmax({"a": 3.0, "b": 1.0, "c": -4.0}).values()
    ) == pytest.approx(1.0)


def test_auto_takes_the_first_mode_the_backend_can_do():
    choices = ("score", "logprobs", "sample")
    assert resolve_mode("auto", choices, backend(), "G-Eval") == "score"
    assert resolve_mode("auto", choices, backend(loglikelihood=False), "G-Eval") == "logprobs"
    assert (
        resolve_mode("auto", choices, backend(loglikelihood=False, logprobs=False), "G-Eval")
        == "sample"
    )
    assert (
        resolve_mode("auto", ("score", "generate"), backend(loglikelihood=False), "judge")
        == "generate"
    )


def test_a_named_mode_is_kept_and_an_unknown_one_is_a_clear_error():
    assert resolve_mode("generate", ("score", "generate"), backend(), "judge") == "generate"
    with pytest.raises(ConfigError, match="unknown implicit filter mode 'logprobs'") as error:
        resolve_mode("logprobs", ("score", "generate"), backend(), "implicit filter")
    assert "auto or one of: score, generate" in error.value.fix
