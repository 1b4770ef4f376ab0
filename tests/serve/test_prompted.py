"""An LLM prompted with the role spec as the bot's generator (bot.json generator_model)."""

from __future__ import annotations

import json

import pytest

from rolecall.errors import InputFileError
from rolecall.llm import LLM, load_backend
from rolecall.records import Turn
from rolecall.serve.prompted import PromptedGenerator
from rolecall.spec import load_role_spec
from tests.conftest import REPO

SPEC = REPO / "examples" / "carecall" / "spec.yaml"


def test_prompted_generator_prompts_with_the_spec_and_scores_replies():
    llm = LLM(load_backend("fake:x"))
    generator = PromptedGenerator(llm, load_role_spec(SPEC))
    history = [Turn(role="user", text="오늘 점심은 먹었어요.")]
    prompt = generator.prompt(history)
    assert prompt.startswith("이 봇은") and prompt.rstrip().endswith("시스템:")
    assert "사용자: 오늘 점심은 먹었어요." in prompt
    (text,) = generator.generate([history])
    assert text and "\n" not in text
    assert generator.generate([history]) == [text]  # greedy and cached: the same reply
    values = generator.response_perplexities([history, history], ["네 좋아요", "네"])
    assert len(values) == 2 and all(v > 1 for v in values)
    assert generator.settings.alpha is None


def test_a_bot_directory_can_name_a_prompted_generator(tmp_path):
    pytest.importorskip("torch")
    from rolecall.serve.bot import Bot

    (tmp_path / "bot.json").write_text(json.dumps({
        "generator_model": "fake:x", "spec": str(SPEC)}), encoding="utf-8")
    bot = Bot.load(tmp_path)
    reply = bot.reply([Turn(role="user", text="안녕하세요")])
    assert reply.path == "generated" and reply.text
    assert reply.stages[0]["stage"] == "generate" and reply.stages[0]["alpha"] is None

    (tmp_path / "bot.json").write_text(json.dumps({"generator_model": "fake:x"}),
                                       encoding="utf-8")
    with pytest.raises(InputFileError, match="no spec"):
        Bot.load(tmp_path)
