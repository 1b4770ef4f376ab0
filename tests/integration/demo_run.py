"""One ``rolecall demo`` on the embedded model, as ``make demo`` runs it (a real
subprocess), with what the tests read of it: the run directory, the output, the summary.
tests/integration/conftest.py makes it once per session (``demo_run``)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.cli_runs import run_to_end

# fewer dialogues and sentences than the default keep the run short
DEMO_ARGS = ("--dialogues", "2", "--sentences", "2", "--no-progress")


@dataclass
class DemoRun:
    out: Path
    result: subprocess.CompletedProcess
    summary: dict

    def jsonl(self, name: str) -> list[dict]:
        lines = (self.out / name).read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]


def run_demo(out: Path) -> DemoRun:
    result = run_to_end("demo", "--out", str(out), *DEMO_ARGS, timeout=3000)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return DemoRun(out, result, summary)
