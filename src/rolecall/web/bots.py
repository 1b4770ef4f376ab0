"""The project's bot, loaded once, with a version fit to show annotators.

The bots themselves and their ``Reply`` live in ``serve/`` (``serve/reply.py``): a
project's ``llm`` bot is ``serve.prompted.PromptedBot``, its ``models`` bot the
Retrieve-fail-Generate ``serve.bot.Bot``. What is the web app's own:

- the ``version`` recorded with every bot turn, so that error rates can be compared per
  bot version (paper's Table 4): it names the model without its server address or file
  path (annotators see it), and a hash of the full model id, spec and prompt (or of the
  bot directory's model files) tells versions apart;
- ``bot_for(config, spec)``: a bot loaded once per distinct configuration (loading models
  takes seconds; the app keeps them for its lifetime).
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

from rolecall.records import RoleSpec
from rolecall.serve.reply import ChatBot
from rolecall.web.settings import BotConfig


def _short_hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:10]


def model_name(model_id: str) -> str:
    """``scheme:name`` of a model id, without where it lives: ``openai:http://host:port/v1#M``
    -> ``openai:M``, ``llamacpp:/models/x.gguf@123-456`` -> ``llamacpp:x.gguf``."""
    scheme, _, rest = model_id.partition(":")
    rest = rest.rpartition("#")[2].split("@")[0].rstrip("/").rpartition("/")[2]
    return f"{scheme}:{rest[:48]}" if rest else scheme


def prompted_version(bot) -> str:
    """``llm:MODEL_NAME:HASH`` of a ``PromptedBot``."""
    generator = bot.generator
    model_id = generator.llm.model_id
    return (
        f"llm:{model_name(model_id)}:"
        f"{_short_hash(generator.spec.model_dump_json(), generator.template.hash, model_id)}"
    )


def models_version(directory: Path) -> str:
    """``rfg:HASH`` of a bot directory's model settings and ``bot.json``."""
    parts = sorted(p for p in directory.glob("*/model.json"))
    parts += [directory / "bot.json"] if (directory / "bot.json").is_file() else []
    return "rfg:" + _short_hash(*(p.read_text(encoding="utf-8") for p in parts))


def load_bot(config: BotConfig, spec: RoleSpec) -> ChatBot:
    """A new bot for ``config``, its ``version`` set (``config.version`` wins)."""
    if config.kind == "models":
        from rolecall.serve.bot import Bot

        directory = Path(config.path).expanduser()
        bot = Bot.load(directory)
        bot.version = config.version or models_version(directory)
        return bot
    from rolecall.llm import LLM, load_backend
    from rolecall.serve.prompted import PromptedBot

    prompted = PromptedBot(
        LLM(load_backend(config.model)),
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
