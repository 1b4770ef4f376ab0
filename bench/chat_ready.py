"""How soon ``rolecall chat BOT`` is ready for a person to type (issue #48 item 10).

Each try is a fresh interactive ``rolecall chat`` on a pseudo-terminal: the time from the
start to its ``you>`` prompt, then, after a typing pause, the time from the first turn's
Enter to the reply. The baseline, in the same run: the same chat with the BM25 index built
before the prompt (``ROLECALL_CHAT_EAGER=1``, what every chat did before), so the
difference is the index's Korean analyser loading while the person types.

Usage: python bench/chat_ready.py [--bot runs/demo/bot] [--tries 3] [--pause 2.0]
Needs the demo's bot (make demo). The last line printed is a JSON object with the targets.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import select
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPT = b"you>"
TURN = "오늘 점심은 된장찌개에 밥 한 공기 먹었어요\n"


def read_until(master: int, marker: bytes, limit: float = 120) -> None:
    seen, deadline = b"", time.monotonic() + limit
    while marker not in seen:
        ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError(f"no {marker!r} within {limit} s: {seen[-500:]!r}")
        seen += os.read(master, 4096)


def one_try(bot: Path, pause: float, eager: bool) -> tuple[float, float]:
    master, slave = pty.openpty()
    env = {**os.environ, **({"ROLECALL_CHAT_EAGER": "1"} if eager else {})}
    command = [str(ROOT / ".venv" / "bin" / "rolecall"), "chat", str(bot), "--no-progress"]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env)
    try:
        read_until(master, PROMPT)
        ready = time.perf_counter() - started
        time.sleep(pause)  # a person typing
        os.write(master, TURN.encode())
        sent = time.perf_counter()
        read_until(master, PROMPT)
        reply = time.perf_counter() - sent
        os.write(master, b"\n")
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
        os.close(slave)
    return ready, reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bot", type=Path, default=ROOT / "runs" / "demo" / "bot")
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--pause", type=float, default=2.0)
    args = parser.parse_args()
    found = {"typing": [], "eager": []}
    for _ in range(args.tries):  # paired: one of each per round
        for name in found:
            found[name].append(one_try(args.bot, args.pause, eager=name == "eager"))
    summary = {
        name: {
            "ready_s": round(statistics.median(r for r, _ in tries), 2),
            "first_reply_s": round(statistics.median(p for _, p in tries), 2),
            "ready_all": [round(r, 2) for r, _ in tries],
        }
        for name, tries in found.items()
    }
    for name, row in summary.items():
        print(f"{name}: ready {row['ready_s']} s (median of {args.tries}), first reply after "
              f"a {args.pause} s pause {row['first_reply_s']} s")  # fmt: skip
    ready, eager = summary["typing"]["ready_s"], summary["eager"]["ready_s"]
    result = {
        "bench": "chat_ready",
        "bot": str(args.bot),
        "pause_s": args.pause,
        **summary,
        "targets": {
            "ready_s": {"value": ready, "target": "<= 5.0", "met": ready <= 5.0},
            "ready_vs_eager": {
                "value": round(ready / eager, 3),
                "target": "<= 1.0",
                "met": ready / eager <= 1.0,
            },
            "first_reply_s": {
                "value": summary["typing"]["first_reply_s"],
                "target": "<= 1.0",
                "met": summary["typing"]["first_reply_s"] <= 1.0,
            },
        },
    }
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
