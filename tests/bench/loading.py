"""Benchmarks as modules for their tests (bench/ is not a package), and the check of a
bench's house JSON line: every target's ``met`` is its value held against its target."""

from __future__ import annotations

import importlib.util
import operator
import sys
from types import ModuleType

from tests.paths import REPO


def load_bench(name: str, module: str | None = None) -> ModuleType:
    """``bench/NAME.py`` imported once as ``module`` (default ``NAME``); registered in
    ``sys.modules`` before it runs, since dataclasses look their module up."""
    module = module or name
    if module not in sys.modules:
        spec = importlib.util.spec_from_file_location(module, REPO / "bench" / f"{name}.py")
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[module] = loaded
        spec.loader.exec_module(loaded)
    return sys.modules[module]


_COMPARE = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
}


def check_targets(targets: dict, names: set[str]) -> None:
    """One entry per name; each ``{"value", "target": "OP NUMBER", "met"}`` with ``met``
    exactly ``value OP NUMBER`` (False for a value that was not measured, None)."""
    assert set(targets) == names, sorted(set(targets) ^ names)
    for name, goal in targets.items():
        op, number = goal["target"].split()
        value = goal["value"]
        assert isinstance(goal["met"], bool), name
        if value is None:
            assert goal["met"] is False, name
            continue
        assert isinstance(value, (int, float)) and not isinstance(value, bool), name
        assert goal["met"] == _COMPARE[op](value, float(number)), (name, goal)
