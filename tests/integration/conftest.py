"""The expensive real runs of the integration tests, made once per session and read by many
tests: ``demo_run``, whose run directory the demo, dialogue-models and red-team tests read
(tests/integration/demo_run.py)."""

from __future__ import annotations

import pytest

from tests.integration.demo_run import DemoRun, run_demo


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> DemoRun:
    return run_demo(tmp_path_factory.mktemp("demo") / "demo")
