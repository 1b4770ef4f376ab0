"""An LLM prompted with the role spec: as the bot's generator (bot.json generator_model)
and as the whole bot (the web app's llm bot, `rolecall chat --model --spec`)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from rolecall.errors import InputFileError
from rolecall.llm import LLM, load_backend
from rolecall.records import Turn
from rolecall.serve.prompted import PromptedBot, PromptedGenerator
from rolecall.serve.reply import TRIES
from rolecall.spec import load_role_spec
from tests.cli_runs import run_cli
from tests.paths import REPO

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

    (tmp_path / "bot.json").write_text(
        json.dumps({"generator_model": "fake:x", "spec": str(SPEC)}), encoding="utf-8"
    )
    bot = Bot.load(tmp_path)
    reply = bot.reply([Turn(role="user", text="안녕하세요")])
    assert reply.path == "generated" and reply.text
    assert reply.stages[0]["stage"] == "generate" and reply.stages[0]["alpha"] is None

    (tmp_path / "bot.json").write_text(json.dumps({"generator_model": "fake:x"}), encoding="utf-8")
    with pytest.raises(InputFileError, match="no spec"):
        Bot.load(tmp_path)


def test_the_prompted_bot_answers_with_the_generators_line_and_avoids_rejected_ones():
    bot = PromptedBot(
        LLM(load_backend("fake:x")), load_role_spec(SPEC), temperature=0.7, max_tokens=64
    )
    history = [Turn(role="user", text="오늘 점심은 먹었어요.")]
    first = bot.reply(history)
    assert first.path == "llm" and first.latency_ms >= 0
    # the configured draw, through the one chat_role prompt of PromptedGenerator
    assert first.text == bot.generator.reply(history, 64, 0.7, 0)
    (stage,) = first.stages
    assert stage == {
        "stage": "generate",
        "model": "fake:fake-x",
        "tries": 1,
        "excluded": 0,
        "temperature": 0.7,
        "ms": stage["ms"],
    }
    second = bot.reply(history, exclude={first.text})
    assert second.text and second.text != first.text
    assert second.stages[0]["tries"] >= 2 and second.stages[0]["excluded"] == 1
    assert second.stages[0]["temperature"] == 0.8


@pytest.mark.parametrize(("line", "said"), [("네 좋아요\n", "네 좋아요"), ("\n", "...")])
def test_the_prompted_bot_gives_up_after_the_shared_number_of_tries(line, said):
    """A model that always says the rejected line, or nothing: ``TRIES`` draws, then the
    bot still answers (the last draw, or '...' for an empty one)."""
    calls = []

    def complete(request):
        calls.append(request.params.seed)
        return SimpleNamespace(text=line)

    llm = SimpleNamespace(model_id="stub", complete=complete)
    reply = PromptedBot(llm, load_role_spec(SPEC)).reply(
        [Turn(role="user", text="안녕하세요")], exclude={"네 좋아요"}
    )
    assert reply.text == said and reply.stages[0]["tries"] == TRIES
    assert calls == list(range(TRIES))


def test_rolecall_chat_talks_to_a_prompted_bot(tmp_path):
    script = tmp_path / "script.txt"
    lines = ["안녕하세요", "오늘 병원에 다녀왔어요"]
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli(
        "chat",
        "--model",
        "fake:x",
        "--spec",
        str(SPEC),
        "--script",
        str(script),
        "--temperature",
        "0",
    )
    assert result.returncode == 0, result.stderr
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["user"] for r in replies] == lines
    assert all(r["path"] == "llm" and r["text"] for r in replies)
    assert [r["stages"][0]["temperature"] for r in replies] == [0.0, 0.0]
    # the reply to the second line answered the whole dialogue so far
    bot = PromptedBot(LLM(load_backend("fake:x")), load_role_spec(SPEC), temperature=0.0)
    history = [
        Turn(role="user", text=lines[0]),
        Turn(role="system", text=replies[0]["text"]),
        Turn(role="user", text=lines[1]),
    ]
    assert replies[1]["text"] == bot.reply(history).text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give a bot directory, or --model with --spec"),
        (("--model", "fake:x"), "--model needs --spec"),
        (("some/bot", "--model", "fake:x"), "give a bot directory or --model"),
    ],
)
def test_rolecall_chat_needs_a_bot_directory_or_a_model_with_a_spec(args, message):
    result = run_cli("chat", *args, "--script", "-", input="안녕하세요\n")
    assert result.returncode == 2 and message in result.stderr  # a ConfigError
    assert "Traceback" not in result.stderr
