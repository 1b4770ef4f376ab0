"""The bot a command talks to: a trained bot directory or an LLM prompted with a role spec.

``rolecall chat`` and ``rolecall redteam`` take the same two forms (``BOT_DIR``, or
``--model MODEL --spec SPEC``); ``open_bot`` checks that exactly one is given and opens
it. Both are a ``ChatBot`` (``serve/reply.py``), their ``version`` set as the web app
sets it (``serve/version.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from rolecall.errors import ConfigError


def open_bot(
    models_dir: Optional[Path],
    model: Optional[str],
    spec: Optional[Path],
    temperature: float,
    max_tokens: int,
    progress: bool,
    open_llm: Callable[[str], Any],
    command: str = "chat",
    typing: bool = False,
):
    """The bot in ``models_dir``, or ``model`` (opened with ``open_llm``) prompted with
    ``spec``: exactly one. ``command`` names the command in the fixes."""
    if (models_dir is None) == (model is None):
        raise ConfigError(
            "give a bot directory or --model (with --spec), not both"
            if models_dir is not None
            else "give a bot directory, or --model with --spec",
            fix=f"rolecall {command} bot/  or  rolecall {command} --model MODEL --spec spec.yaml",
        )
    if models_dir is not None:
        from rolecall.serve.bot import Bot

        if spec is not None:
            raise ConfigError(
                "--spec goes with --model; a bot directory names its spec in bot.json",
                fix="drop --spec",
            )
        from rolecall.serve.version import models_version

        bot = Bot.load(models_dir, progress=progress, typing=typing)
        bot.version = models_version(models_dir)
        return bot
    if spec is None:
        raise ConfigError(
            "--model needs --spec, the role spec that prompts it",
            fix="add --spec path/to/spec.yaml",
        )
    from rolecall.serve.prompted import PromptedBot
    from rolecall.spec import load_role_spec

    role_spec = load_role_spec(spec)  # before the model: a bad spec fails fast
    from rolecall.serve.version import prompted_version

    bot = PromptedBot(open_llm(model), role_spec, temperature=temperature, max_tokens=max_tokens)
    bot.version = prompted_version(bot)
    return bot
