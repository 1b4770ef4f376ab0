"""Benchmarks as modules for their tests (bench/ is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.conftest import REPO


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
