"""``rolecall chat MODELS_DIR``: talk to a trained bot in the terminal, or run a script.

Interactive: each line you type is a user turn; the bot's reply follows with one line of
provenance (the path taken, the retrieval confidence against its threshold, the guard's
verdict, the latency). ``--script FILE`` reads the user turns from a file (one per line,
``-`` for stdin) and prints one JSON object per turn: the reply with every stage's scores,
thresholds and latency, for tests and for logs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from rolecall.cli.common import out
from rolecall.records import Turn


def summary(reply) -> str:
    """One line of provenance for a human."""
    parts = [reply.path]
    for stage in reply.stages:
        if stage["stage"] == "retrieve" and stage["confidence"] is not None:
            parts.append(f"confidence {stage['confidence']} vs {stage['threshold']}")
        if stage["stage"] == "guard":
            parts.append(f"P(out of bounds) {stage['p_out_of_bounds']}"
                         + (" flagged" if stage["flagged"] else ""))
    parts.append(f"{reply.latency_ms:.0f} ms")
    return " · ".join(parts)


def chat_command(
        models_dir: Path = typer.Argument(..., help="the bot directory: retriever/, "
                                          "reranker/, generator/, classifier/, bot.json"),
        script: Optional[Path] = typer.Option(None, help="user turns, one per line ('-' = "
                                              "stdin); prints one JSON reply per turn"),
        progress: bool = typer.Option(True, help="progress bars while loading")):
    """Chat with a Retrieve-fail-Generate bot; every reply shows how it was made."""
    from rolecall.serve.bot import Bot
    from rolecall.textfiles import input_lines

    bot = Bot.load(models_dir, progress=progress)
    history: list[Turn] = []
    if script is not None:
        for line in input_lines(script):
            history.append(Turn(role="user", text=line))
            reply = bot.reply(history)
            history.append(Turn(role="system", text=reply.text))
            print(json.dumps({"user": line, **reply.to_dict()}, ensure_ascii=False),
                  flush=True)
        return
    out.print("[dim]type a message; an empty line or Ctrl-D ends the chat[/dim]")
    while True:
        try:
            line = input("you> ").strip()
        except (EOFError, KeyboardInterrupt):
            break
        if not line:
            break
        history.append(Turn(role="user", text=line))
        reply = bot.reply(history)
        history.append(Turn(role="system", text=reply.text))
        out.print(f"bot> {escape(reply.text)}", highlight=False)
        out.print(f"[dim]     {escape(summary(reply))}[/dim]", highlight=False)
