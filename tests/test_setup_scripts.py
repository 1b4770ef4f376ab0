"""The set-up scripts on a machine already set up (#48 item 1): ``make demo`` runs only
``scripts/setup.sh``, which then installs nothing and prints nothing, and never apt."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_make_demo_needs_no_browser_and_a_second_set_up_installs_nothing(tmp_path):
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo: setup$", makefile, re.M), "make demo must not need the browser"
    if not (REPO / ".venv" / ".rolecall-setup").is_file():
        pytest.skip("this .venv was not made by scripts/setup.sh")
    # every installer the script could call records that it was called
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    calls = tmp_path / "calls.log"
    for name in ("apt-get", "apt", "sudo"):
        tool = fake_bin / name
        tool.write_text(f'#!/bin/sh\necho "{name} $*" >> {calls}\n', encoding="utf-8")
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake_bin}:{os.environ['PATH']}"}
    before = (REPO / ".venv" / ".rolecall-setup").stat().st_mtime
    done = subprocess.run(
        ["bash", "scripts/setup.sh"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == "", (done.stdout, done.stderr)
    assert not calls.exists(), calls.read_text(encoding="utf-8")
    assert (REPO / ".venv" / ".rolecall-setup").stat().st_mtime == before  # nothing redone
