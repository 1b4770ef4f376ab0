"""The bots a person chats with in the web app, behind one small interface.

``reply(history, exclude)`` returns a ``BotAnswer``: the text, and its provenance (path
taken, scores). ``exclude`` holds the replies a person already rejected with Fix at this
point of the dialogue; a bot must not offer them again. ``version`` is recorded with
every bot turn so that error rates can be compared per bot version (paper's Table 4); it
names the model without its server address or file path (annotators see it), and a hash
of the full model id, spec and prompt tells versions apart.

- ``PromptedBot``: an LLM prompted with the role spec (``prompts/*/chat_role.j2``);
- ``ModelsBot``: the Retrieve-fail-Generate bot of ``serve/bot.py``.

``bot_for(config, spec)`` loads a bot once per distinct configuration (loading models
takes seconds; the app keeps them for its lifetime).
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rolecall.records import RoleSpec, Turn
from rolecall.web.settings import BotConfig

TRIES = 5  # samples asked of an LLM for a reply not rejected before


@dataclass
class BotAnswer:
    text: str
    provenance: dict[str, Any] = field(default_factory=dict)


class ChatBot(Protocol):
    version: str

    def reply(self, history: list[Turn], exclude: set[str]) -> BotAnswer: ...


def _short_hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:10]


def model_name(model_id: str) -> str:
    """``scheme:name`` of a model id, without where it lives: ``openai:http://host:port/v1#M``
    -> ``openai:M``, ``llamacpp:/models/x.gguf@123-456`` -> ``llamacpp:x.gguf``."""
    scheme, _, rest = model_id.partition(":")
    rest = rest.rpartition("#")[2].split("@")[0].rstrip("/").rpartition("/")[2]
    return f"{scheme}:{rest[:48]}" if rest else scheme


class PromptedBot:
    def __init__(self, llm, spec: RoleSpec, config: BotConfig):
        from rolecall.prompts import load_template

        self.llm, self.spec, self.config = llm, spec, config
        self.template = load_template("chat_role", spec.language)
        self.version = config.version or (
            f"llm:{model_name(llm.model_id)}:"
            f"{_short_hash(spec.model_dump_json(), self.template.hash, llm.model_id)}")

    def reply(self, history: list[Turn], exclude: set[str]) -> BotAnswer:
        from rolecall.llm import Request, SamplingParams

        prompt = self.template.render(outline=self.spec.outline,
                                      categories=self.spec.categories, history=history)
        text = ""
        for attempt in range(TRIES):
            # the first try is the configured sampling with a fixed seed; later tries
            # change the seed so that a rejected reply is not simply repeated
            params = SamplingParams(temperature=self.config.temperature if attempt == 0
                                    else max(self.config.temperature, 0.8),
                                    max_tokens=self.config.max_tokens, seed=attempt,
                                    stop=("\n",))
            completion = self.llm.complete(Request(prompt=prompt, params=params))
            text = completion.text.strip().split("\n")[0].strip()
            if text and text not in exclude:
                break
        return BotAnswer(text or "...", {"path": "llm", "model": self.llm.model_id,
                                         "tries": attempt + 1, "excluded": len(exclude)})


class ModelsBot:
    def __init__(self, directory: Path, config: BotConfig):
        from rolecall.serve.bot import Bot

        self.bot = Bot.load(directory)
        parts = sorted(p for p in directory.glob("*/model.json"))
        parts += [directory / "bot.json"] if (directory / "bot.json").is_file() else []
        self.version = config.version or (
            "rfg:" + _short_hash(*(p.read_text(encoding="utf-8") for p in parts)))

    def reply(self, history: list[Turn], exclude: set[str]) -> BotAnswer:
        reply = self.bot.reply(history, exclude)
        return BotAnswer(reply.text, {"path": reply.path, "stages": reply.stages,
                                      "latency_ms": reply.latency_ms})


_LOADED: dict[str, ChatBot] = {}
_LOCK = threading.Lock()


def bot_for(config: BotConfig, spec: RoleSpec) -> ChatBot:
    key = json.dumps([config.model_dump(), spec.model_dump()], sort_keys=True,
                     ensure_ascii=False)
    with _LOCK:
        if key not in _LOADED:
            if config.kind == "models":
                _LOADED[key] = ModelsBot(Path(config.path).expanduser(), config)
            else:
                from rolecall.llm import LLM, load_backend

                _LOADED[key] = PromptedBot(LLM(load_backend(config.model)), spec, config)
        return _LOADED[key]
