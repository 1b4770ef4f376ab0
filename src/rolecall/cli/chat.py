"""``rolecall chat MODELS_DIR``: talk to a trained bot in the terminal, or run a script;
``rolecall chat --model MODEL --spec SPEC``: the same with an LLM prompted with the role
spec (the web app's ``llm`` bot). Both are a ``ChatBot`` (``serve/reply.py``).

Interactive: each line you type is a user turn; the bot's reply follows with one line of
provenance (the path taken, the retrieval confidence against its threshold, the guard's
verdict, the latency). ``--script FILE`` reads the user turns from a file (one per line,
``-`` for stdin) and prints one JSON object per turn: the reply with every stage's scores,
thresholds and latency, for tests and for logs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from rolecall.cli.bots import open_bot
from rolecall.cli.common import err, load_llm, out
from rolecall.errors import InputFileError
from rolecall.records import Turn


def chat_command(
    models_dir: Optional[Path] = typer.Argument(
        None,
        help="the bot directory: retriever/, reranker/, generator/, classifier/, "
        "bot.json (or give --model and --spec)",
    ),
    model: Optional[str] = typer.Option(
        None,
        "--model",
        "-m",
        help="instead of a bot directory: this LLM prompted with "
        "--spec, e.g. llamacpp:embedded or openai:http://localhost:8000/v1?model=NAME",
    ),
    spec: Optional[Path] = typer.Option(None, help="the role spec (YAML) for --model"),
    temperature: float = typer.Option(0.7, min=0.0, max=2.0, help="--model's sampling temperature"),
    max_tokens: int = typer.Option(64, min=1, help="--model's reply length"),
    script: Optional[Path] = typer.Option(
        None, help="user turns, one per line ('-' = stdin); prints one JSON reply per turn"
    ),
    progress: bool = typer.Option(True, help="progress bars while loading"),
):
    """Chat with a Retrieve-fail-Generate bot or a prompted LLM; every reply shows how it
    was made."""
    from rolecall.textfiles import input_lines

    turns = None if script is None else input_lines(script)  # a bad script: before the load
    if turns == []:
        raise InputFileError(script, "holds no user turn (no non-blank line)", fix="check the path")
    bot = open_bot(
        models_dir,
        model,
        spec,
        temperature,
        max_tokens,
        progress,
        lambda m: load_llm(m, None),
        # a person types: the BM25 index is built meanwhile (ROLECALL_CHAT_EAGER=1: first)
        typing=script is None and not os.environ.get("ROLECALL_CHAT_EAGER"),
    )
    if models_dir is not None and getattr(bot, "user_checks", None) is None:
        err.print(
            f"[yellow]note:[/yellow] {escape(str(models_dir))} has no user_checks/: the bot "
            "does not read the user's turn for a crisis, abuse or an off-role request; "
            f"train them: rolecall train user-checks SPEC --out {escape(str(models_dir))}"
            "/user_checks (docs/safety.md)",
            highlight=False,
        )
    history: list[Turn] = []
    if turns is not None:
        for line in turns:
            history.append(Turn(role="user", text=line))
            reply = bot.reply(history)
            history.append(Turn(role="system", text=reply.text))
            print(json.dumps({"user": line, **reply.to_dict()}, ensure_ascii=False), flush=True)
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
        out.print(f"[dim]     {escape(reply.describe())}[/dim]", highlight=False)
