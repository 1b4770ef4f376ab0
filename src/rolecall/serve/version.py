"""A bot's version label: what the web app records with every bot turn and
``rolecall redteam`` with every report, so that error rates and red-team rates can be
compared per bot version (NAACL 2022, Table 4).

It names the model without its server address or file path (annotators see it), and a
hash of the full model id, spec and prompt (or of the bot directory's model files) tells
versions apart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any


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
    """``rfg:HASH`` of a bot directory's model settings, its user checks' replies and
    ``bot.json``."""
    parts = sorted(p for p in directory.glob("*/model.json"))
    # the user-turn checks' replies and help lines live beside their model
    parts += sorted(directory.glob("*/checks.json"))
    parts += [directory / "bot.json"] if (directory / "bot.json").is_file() else []
    return "rfg:" + _short_hash(*(p.read_text(encoding="utf-8") for p in parts))


def one_bot_version(
    path: Path,
    field: str,
    version: Any,
    fix: str,
    replace: bool = False,
    say: Callable[[str], None] = print,
) -> None:
    """A resumable JSONL file whose records (their ``field``) name another bot version than
    ``version`` is an error telling ``fix``; with ``replace`` it is removed (every record
    made again). A run resumed against a changed bot would otherwise mix two versions."""
    from rolecall.errors import ConfigError
    from rolecall.jsonl import ResumableJsonl

    if not path.is_file():
        return
    with ResumableJsonl(path, key=lambda r: r["id"]) as earlier:  # drops a cut last line
        others = {r.get(field) for r in earlier.records} - {version}
    if not others:
        return
    if not replace:
        raise ConfigError(
            f"{path} holds records of another bot ({', '.join(map(str, others))}), not of "
            f"{version}",
            fix=fix,
        )
    say(f"{path}: made by an earlier bot version, made again")
    path.unlink()
