"""Progress on stderr: a rich bar on a terminal, plain lines in a log."""

from __future__ import annotations

import io

from rich.console import Console

from rolecall import progress


def _run(monkeypatch, terminal: bool, total: int, steps: int, start: int = 0) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=100)
    monkeypatch.setattr(progress, "_console", console)
    with progress.progress_bar(total, "training detox model", start=start) as advance:
        for _ in range(steps):
            advance()
    return out.getvalue()


def test_a_log_gets_a_line_at_every_tenth_and_at_the_end(monkeypatch):
    lines = _run(monkeypatch, terminal=False, total=40, steps=40).splitlines()
    assert len(lines) == 10
    assert lines[0].startswith("training detox model: 4/40 (10%), 0:00:00 elapsed")
    assert lines[-1].startswith("training detox model: 40/40 (100%)")
    assert lines[-1].endswith("0:00:00 left")


def test_a_slow_log_gets_a_line_every_interval(monkeypatch):
    monkeypatch.setattr(progress, "LINE_SECONDS", 0.0)
    lines = _run(monkeypatch, terminal=False, total=1000, steps=3).splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "training detox model: 1/1000 (0%)",
        "training detox model: 2/1000 (0%)",
        "training detox model: 3/1000 (0%)",
    ]


def test_a_resumed_run_counts_the_steps_done_before(monkeypatch):
    lines = _run(monkeypatch, terminal=False, total=40, steps=10, start=30).splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "training detox model: 32/40 (80%)",
        "training detox model: 36/40 (90%)",
        "training detox model: 40/40 (100%)",
    ]
    assert "3/40" in _run(monkeypatch, terminal=True, total=40, steps=1, start=2)


def test_a_terminal_gets_the_bar(monkeypatch):
    shown = _run(monkeypatch, terminal=True, total=4, steps=4)
    assert "━" in shown and "4/4" in shown and "(100%)" not in shown


def test_a_disabled_bar_writes_nothing(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(progress, "_console", Console(file=out, force_terminal=False))
    with progress.progress_bar(5, "x", enabled=False) as advance:
        advance()
    assert out.getvalue() == ""
