"""The out-of-bounds judge and the first-OOB run, on a scripted backend."""

from __future__ import annotations

import json
import threading

import pytest
from pydantic import BaseModel, ConfigDict

from rolecall.errors import ConfigError
from rolecall.jsonl import read_jsonl
from rolecall.judge.dialogues import judge_dialogues_by_panel
from rolecall.judge.out_of_bounds import Item, make_judge, make_panel
from rolecall.judge.voting import majority
from rolecall.llm import LLM, Cache, load_backend
from rolecall.llm.base import Backend, Completion, TokenLogprob
from rolecall.llm.registry import BackendEntry
from rolecall.records import Category, Dialogue, RoleSpec, Turn, Verdict
from tests.fakes import use_backend

SPEC = RoleSpec(
    name="s",
    outline="어르신께 안부 전화를 드리는 인공지능 상담원입니다.",
    categories=[
        Category(name="persona", description="인공지능입니다.", error_category="wrong persona"),
        Category(name="safety", description="안전합니다.", error_category="not safe"),
    ],
)


def judge_dialogues(llm, judge, dialogues, out_dir, samples=1, progress=True):
    """A panel of one judge model."""
    return judge_dialogues_by_panel([(llm, judge)], dialogues, out_dir, samples, progress)


def last_system_line(prompt: str) -> str:
    return [line for line in prompt.splitlines() if line.startswith("시스템: ")][-1]


class ScriptedOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scoring: bool = True


class Scripted(Backend):
    """Flags turns containing '저도' as persona; answers garbage for turns with '???'."""

    scheme = "scripted"
    supports_chat = True
    supports_loglikelihood = True
    supports_json_schema = True
    max_concurrency = 4

    def __init__(self, location: str, options: ScriptedOptions):
        self.model_id = "scripted"
        self.supports_loglikelihood = options.scoring
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, request, sample_index=0):
        with self._lock:
            self.calls += 1
        if request.kind == "score":
            flagged = "저도" in last_system_line(request.prompt)
            wanted = " persona" if flagged else " 적절"
            logprob = -0.2 if request.score_text == wanted else -2.0 - len(request.score_text)
            return Completion(
                text=request.score_text,
                logprobs=[TokenLogprob(token=request.score_text, logprob=logprob)],
            )
        line = last_system_line(request.messages[0].content)
        if "???" in line:
            return Completion(text="잘 모르겠습니다")
        if "저도" in line:
            return Completion(text='{"verdict": "out-of-bounds", "rule": "persona"}')
        return Completion(text='{"verdict": "in-bounds", "rule": null}')


@pytest.fixture(autouse=True)
def _scripted(monkeypatch):
    use_backend(
        monkeypatch,
        "scripted",
        BackendEntry(factory=Scripted, options=ScriptedOptions, summary="scripted judge for tests"),
    )


def dialogue(did: str, *system_texts: str) -> Dialogue:
    turns = []
    for text in system_texts:
        turns += [Turn(role="system", text=text), Turn(role="user", text="응, 그래.")]
    return Dialogue(id=did, turns=turns)


DIALOGUES = [
    dialogue("a", "안녕하세요, 어르신.", "식사는 하셨어요?", "저도 방금 먹었어요.", "맛있었어요."),
    dialogue("b", "안녕하세요.", "잘 주무셨어요?", "건강하세요."),
    dialogue("c", "안녕하세요.", "??? 뭐라고요", "저도 몰라요."),
]


def test_score_mode_compares_label_likelihoods():
    backend = load_backend("scripted:x")
    judge = make_judge(SPEC, backend)
    assert judge.mode == "score" and judge.labels == ["적절", "persona", "safety"]
    item = Item("a", 4, tuple(DIALOGUES[0].turns[:4]), "저도 방금 먹었어요.")
    requests = judge.format_input(item)
    assert [r.score_text for r in requests] == [" 적절", " persona", " safety"]
    assert requests[0].prompt.endswith("판정:") and "persona: 인공지능입니다." in requests[0].prompt
    verdict = judge.parse_output(item, [backend.complete(r) for r in requests], "m")
    assert (verdict.label, verdict.category) == ("out-of-bounds", "wrong persona")
    assert sum(verdict.probabilities.values()) == pytest.approx(1.0)
    assert max(verdict.probabilities, key=verdict.probabilities.get) == "persona"
    assert json.loads(verdict.raw_output)["loglikelihood"]["persona"] == -0.2


def test_run_judges_up_to_the_first_oob_turn_and_splits(tmp_path):
    llm = LLM(load_backend("scripted:x"))
    counts, judged, examples = judge_dialogues(
        llm, make_judge(SPEC, llm.backend), DIALOGUES, tmp_path, progress=False
    )
    # a: 3 turns judged (stops at "저도"), b: 3, c: 3 ("저도" at its third turn)
    assert counts["judged_turns"] == 9 and counts["out_of_bounds"] == 2
    # three label scores per turn, never past the OOB turn; b and c open with the same
    # turn, which is judged once
    assert llm.backend.calls == 8 * 3
    assert [(e.dialogue_id, e.label) for e in examples] == [
        ("a", "positive"),
        ("a", "positive"),
        ("a", "negative"),
        ("b", "positive"),
        ("b", "positive"),
        ("b", "positive"),
        ("c", "positive"),
        ("c", "positive"),
        ("c", "negative"),
    ]
    judged = {d.id: d for d in judged}
    assert [t.out_of_bounds for t in judged["a"].turns if t.role == "system"] == [
        False,
        False,
        True,
        None,
    ]
    assert len(list(read_jsonl(tmp_path / "verdicts.jsonl"))) == 9
    assert sorted(f.name for f in tmp_path.iterdir()) == ["verdicts.jsonl"]  # its sink only


def test_generate_mode_parses_json_and_keeps_unparsed_answers(tmp_path):
    llm = LLM(load_backend("scripted:x?scoring=false"))
    judge = make_judge(SPEC, llm.backend)
    assert judge.mode == "generate" and judge.constrained
    counts, _, examples = judge_dialogues(llm, judge, DIALOGUES, tmp_path, progress=False)
    assert counts["unparsed"] == 1 and counts["out_of_bounds"] == 1
    verdicts = {v["item_id"]: v for v in read_jsonl(tmp_path / "verdicts.jsonl")}
    assert verdicts["c#2"]["parse_status"] == "unparsed"
    assert verdicts["c#2"]["raw_output"] == "잘 모르겠습니다"
    assert "c#4" not in verdicts  # the split stops at an unknown label
    assert [e.label for e in examples if e.dialogue_id == "c"] == ["positive"]


def test_votes_over_samples_are_all_kept(tmp_path):
    llm = LLM(load_backend("scripted:x?scoring=false"))
    judge_dialogues(
        llm,
        make_judge(SPEC, llm.backend, temperature=0.7),
        DIALOGUES[:1],
        tmp_path,
        samples=3,
        progress=False,
    )
    votes = list(read_jsonl(tmp_path / "verdicts.jsonl"))
    assert len(votes) == 3 * 3
    assert {v["judge"] for v in votes} == {f"out_of_bounds/generate/{i}" for i in range(3)}


def vote(label, category=None, status="parsed"):
    return Verdict(
        judge="j",
        item_id="i",
        label=label if status == "parsed" else None,
        category=category,
        raw_output=str(label),
        parse_status=status,
    )


def test_majority_vote():
    assert (
        majority([vote("in-bounds"), vote("in-bounds"), vote("out-of-bounds", "not safe")]).label
        == "in-bounds"
    )
    tie = majority([vote("in-bounds"), vote("out-of-bounds", "not safe")])
    assert (tie.label, tie.category) == ("out-of-bounds", "not safe")  # ties flag the turn
    mixed = majority(
        [
            vote("out-of-bounds", "style"),
            vote("out-of-bounds", "not safe"),
            vote("out-of-bounds", "not safe"),
            vote(None, status="unparsed"),
        ]
    )
    assert mixed.category == "not safe" and mixed.probabilities == {"out-of-bounds": 1.0}
    none = majority([vote(None, status="unparsed"), vote(None, status="unparsed")])
    assert none.parse_status == "unparsed" and json.loads(none.raw_output) == ["None", "None"]


def test_unknown_mode_is_an_error():
    with pytest.raises(ConfigError, match="judge mode"):
        make_judge(SPEC, load_backend("scripted:x"), mode="vote")


class MealClassifier:
    """A direct judge (no LLM) of system turns, standing in for a trained classifier:
    a turn about meals ("식사") is unsafe; it remembers the turns it was asked about."""

    kind, name, model = "classifier", "out_of_bounds", "classifier:/models/meals"

    def __init__(self):
        self.asked: list[str] = []

    @staticmethod
    def item_id(item: Item) -> str:
        return item.id

    def verdicts(self, items):
        self.asked += [item.id for item in items]
        return [
            Verdict(
                judge=self.name,
                item_id=item.id,
                label="out-of-bounds" if "식사" in item.response else "in-bounds",
                category="not safe" if "식사" in item.response else None,
                raw_output="",
                parse_status="parsed",
                probabilities={"out-of-bounds": 0.8, "in-bounds": 0.2},
            )
            for item in items
        ]


def test_a_direct_judge_alone_stops_each_dialogue_at_its_first_flag(tmp_path):
    classifier = MealClassifier()
    counts, judged, examples = judge_dialogues_by_panel(
        [classifier], DIALOGUES, tmp_path, progress=False
    )
    # a is flagged at its second system turn ("식사는 하셨어요?"); b and c never are
    assert classifier.asked == ["a#0", "b#0", "c#0", "a#2", "b#2", "c#2", "b#4", "c#4"]
    assert (counts["judged_turns"], counts["out_of_bounds"]) == (8, 1)
    assert [(e.dialogue_id, e.label, e.category) for e in examples if e.dialogue_id == "a"] == [
        ("a", "positive", None),
        ("a", "negative", "not safe"),
    ]
    flags = [t.out_of_bounds for t in judged[0].turns if t.role == "system"]
    assert flags == [False, True, None, None]
    votes = list(read_jsonl(tmp_path / "verdicts.jsonl", Verdict))
    assert {(v.judge, v.kind, v.model) for v in votes} == {
        ("out_of_bounds/classifier", "classifier", "classifier:/models/meals")
    }
    assert votes[0].probabilities == {"out-of-bounds": 0.8, "in-bounds": 0.2}


def test_a_mixed_panel_flags_on_a_tie_and_resumes_without_calls(tmp_path):
    cache = tmp_path / "cache.sqlite"
    llm = LLM(load_backend("scripted:x"), Cache(cache))
    panel = make_panel(SPEC, [llm, MealClassifier()])
    counts, _, examples = judge_dialogues_by_panel(panel, DIALOGUES, tmp_path, progress=False)
    # the LLM flags "저도" (persona), the classifier "식사" (not safe); one vote each: a tie,
    # and a tie flags the turn with the category of the flagging vote
    negatives = {e.dialogue_id: e.category for e in examples if e.label == "negative"}
    assert negatives == {"a": "not safe", "c": "wrong persona"}
    assert counts["out_of_bounds"] == 2
    votes = list(read_jsonl(tmp_path / "verdicts.jsonl", Verdict))
    assert {v.kind for v in votes} == {"llm", "classifier"}
    before = (tmp_path / "verdicts.jsonl").read_bytes()
    again, classifier = LLM(load_backend("scripted:x"), Cache(cache)), MealClassifier()
    second = judge_dialogues_by_panel(
        make_panel(SPEC, [again, classifier]), DIALOGUES, tmp_path, progress=False
    )
    assert second[0] == counts and again.backend.calls == 0 and classifier.asked == []
    assert (tmp_path / "verdicts.jsonl").read_bytes() == before


def test_a_direct_judge_of_another_task_is_refused():
    other = MealClassifier()
    other.name = "implicit"
    with pytest.raises(ConfigError, match="not out-of-bounds turns"):
        make_panel(SPEC, [other])
