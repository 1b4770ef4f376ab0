"""The project's bot, loaded once, with a version fit to show annotators.

The bots themselves and their ``Reply`` live in ``serve/`` (``serve/reply.py``): a
project's ``llm`` bot is ``serve.prompted.PromptedBot``, its ``models`` bot the
Retrieve-fail-Generate ``serve.bot.Bot``. What is the web app's own:

- the ``version`` recorded with every bot turn, so that error rates can be compared per
  bot version (paper's Table 4; ``serve/version.py``, which ``rolecall redteam`` uses too);
- ``bot_for(config, spec)``: a bot loaded once per distinct configuration (loading models
  takes seconds; the app keeps them for its lifetime).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from rolecall.records import RoleSpec
from rolecall.serve.reply import ChatBot
from rolecall.serve.version import models_version, prompted_version
from rolecall.web.settings import BotConfig


def load_bot(config: BotConfig, spec: RoleSpec) -> ChatBot:
    """A new bot for ``config``, its ``version`` set (``config.version`` wins)."""
    if config.kind == "models":
        from rolecall.serve.bot import Bot

        directory = Path(config.path).expanduser()
        bot = Bot.load(directory)
        bot.version = config.version or models_version(directory)
        return bot
    from rolecall.llm.opening import open_llm
    from rolecall.serve.prompted import PromptedBot

    prompted = PromptedBot(
        open_llm(config.model),  # the configured call cache, as every other command
        spec,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
    )
    prompted.version = config.version or prompted_version(prompted)
    return prompted


_LOADED: dict[str, ChatBot] = {}
_LOCK = threading.Lock()


def bot_for(config: BotConfig, spec: RoleSpec) -> ChatBot:
    key = json.dumps([config.model_dump(), spec.model_dump()], sort_keys=True, ensure_ascii=False)
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = load_bot(config, spec)
        return _LOADED[key]
