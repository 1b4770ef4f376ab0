"""Running ``rolecall`` as a user does: in this process (``run_cli``), or in a real
subprocess where a process matters (``rolecall``, ``run_to_end``: SIGKILL, signals, start-up).

``run_cli`` calls the command's own entry point (``rolecall.cli.app.run``) under click's
test runner: the same exit codes, stdout and stderr as the installed command, without a
fresh interpreter and a torch import per call (about 3 s each). A subprocess child sees the
fake backends (``ROLECALL_PLUGINS=tests.fakes``); ``kill_when`` sends SIGKILL once an output
file has enough lines, for the resume tests; ``cached_calls`` and ``last_run_stats``,
``last_run_calls`` and ``keyed`` read back what a run left in its cache, manifest and files.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest

from rolecall.jsonl import read_jsonl
from tests.paths import REPO


def rolecall(*args: str, env_extra: dict | None = None, **popen) -> subprocess.Popen:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ROLECALL_PLUGINS": "tests.fakes",
        **(env_extra or {}),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "rolecall.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def run_to_end(
    *args: str, timeout: float = 600, env_extra: dict | None = None
) -> subprocess.CompletedProcess:
    process = rolecall(*args, env_extra=env_extra)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except BaseException:  # a timeout here or pytest-timeout's: never leave a run behind
        process.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


def run_cli(
    *args: str, env_extra: dict | None = None, input: str | None = None
) -> subprocess.CompletedProcess:
    """``rolecall ARGS`` in this process; what a subprocess would give: an exception that
    is a bug (no ``RolecallError``) is exit code 1 with its traceback on stderr."""
    from click.testing import CliRunner

    from rolecall.cli.app import run

    runner = CliRunner()
    with runner.isolation(input=input, env=env_extra) as (stdout, stderr, _):
        try:
            run(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
        except Exception:  # noqa: BLE001  a bug: as the interpreter would show it
            traceback.print_exc(file=sys.stderr)
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        return subprocess.CompletedProcess(
            args,
            code,
            stdout.getvalue().decode("utf-8", "replace"),
            stderr.getvalue().decode("utf-8", "replace"),
        )


def lines(path: Path) -> int:
    return path.read_text(encoding="utf-8").count("\n") if path.exists() else 0


def cached_calls(cache: Path) -> int:
    with sqlite3.connect(cache) as db:
        return db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]


def kill_when(
    process: subprocess.Popen, out: Path | tuple[Path, ...], at_least: int, limit: float = 300
) -> None:
    """SIGKILL ``process`` once ``out`` (or the files of ``out`` together) has ``at_least``
    lines."""
    paths = out if isinstance(out, tuple) else (out,)
    deadline = time.monotonic() + limit
    while sum(lines(path) for path in paths) < at_least:
        if process.poll() is not None:
            pytest.fail(f"the run ended before it could be killed: {process.stderr.read()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("the run made no progress")
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def last_run_stats(run_dir: Path, stage: str = "llm batch") -> dict:
    """The LLM statistics of the latest start of ``stage`` in a run directory."""
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    runs = [r for r in manifest["runs"] if stage in r.get("stages", {})]
    return runs[-1]["stages"][stage]["llm"]


def last_run_calls(run_dir: Path) -> int:
    """The LLM calls the latest start of a run made, all its stages together."""
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    stages = manifest["runs"][-1]["stages"]
    return sum(stage.get("llm", {}).get("calls", 0) for stage in stages.values())


def keyed(path: Path, key) -> dict:
    """The records of a JSONL output by ``key(record)`` (none if the file is absent); a key
    met twice fails the test: a resumed run wrote a record again."""
    rows = list(read_jsonl(path)) if path.exists() else []
    table = {key(r): r for r in rows}
    assert len(table) == len(rows), f"duplicated records in {path}"
    return table


def metrics_of(result: subprocess.CompletedProcess) -> dict:
    """The JSON object a successful command printed last; for a training command, which
    prints its numbers for a person, the ``metrics.json`` its last line names."""
    assert result.returncode == 0, result.stderr
    last = result.stdout.splitlines()[-1]
    if last.strip().startswith("every number: "):
        return json.loads(Path(last.strip().removeprefix("every number: ")).read_text())
    return json.loads(last)
