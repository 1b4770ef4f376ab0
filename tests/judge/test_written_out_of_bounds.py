"""The hand-written out-of-bounds set: the shipped carecall file, the checks of
read_out_of_bounds, judge items and training examples from it."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from rolecall.errors import ConfigError, InputFileError
from rolecall.jsonl import read_jsonl
from rolecall.judge.written_out_of_bounds import (
    examples_from_out_of_bounds,
    out_of_bounds_items,
    read_out_of_bounds,
)
from rolecall.records import Dialogue
from rolecall.spec import load_role_spec
from tests.paths import REPO

CARECALL = REPO / "examples" / "carecall"


@pytest.fixture(scope="module")
def shipped():
    spec = load_role_spec(CARECALL / "spec.yaml")
    dialogues = list(read_jsonl(CARECALL / "dialogues.jsonl", Dialogue))
    return spec, dialogues, read_out_of_bounds(CARECALL / "out_of_bounds.jsonl", dialogues, spec)


def test_the_shipped_set_covers_every_category_of_the_spec(shipped):
    spec, dialogues, turns = shipped
    assert len(turns) >= 150
    counts = Counter(t.category for t in turns)
    assert set(counts) == {c.name for c in spec.categories}
    assert min(counts.values()) >= 15, counts
    assert len({t.id for t in turns}) == len(turns)
    assert len({t.dialogue_id for t in turns}) >= 30  # spread over the dialogues
    in_bounds = {turn.text.strip() for d in dialogues for turn in d.turns}
    assert not [t.id for t in turns if t.text in in_bounds]
    assert len({t.text for t in turns}) == len(turns)


def test_items_carry_the_context_and_an_id_naming_the_record(shipped):
    _, dialogues, turns = shipped
    pairs = out_of_bounds_items(turns)
    assert [category for _, category in pairs] == [t.category for t in turns]
    item, _ = pairs[0]
    first = turns[0]
    dialogue = next(d for d in dialogues if d.id == first.dialogue_id)
    assert item.id == f"{first.dialogue_id}:{first.id}#{first.turn_index}"
    assert item.history == tuple(dialogue.turns[: first.turn_index])
    assert item.history[-1].role == "user" and item.response == first.text
    assert len({i.id for i, _ in pairs}) == len(pairs)


def test_examples_are_negatives_with_the_spec_error_category(shipped):
    spec, _, turns = shipped
    examples = examples_from_out_of_bounds(turns, spec)
    errors = {c.name: c.error_category for c in spec.categories}
    assert [e.category for e in examples] == [errors[t.category] for t in turns]
    assert {e.label for e in examples} == {"negative"}
    assert examples[0].dialogue_id == turns[0].dialogue_id
    other = spec.model_copy(update={"categories": spec.categories[:1]})
    with pytest.raises(ConfigError, match="has no categories"):
        examples_from_out_of_bounds(turns, other)


def test_rules_carecall_flags_a_share_of_the_categories_it_covers(shipped):
    """A loose floor (the counts are reported in examples/carecall/README.md): each rule
    flags at least a quarter of its own category's turns."""
    from rolecall.judge.rules import load_rule_judge

    spec, _, turns = shipped
    pairs = out_of_bounds_items(turns)
    verdicts = load_rule_judge("carecall", "out_of_bounds", spec).verdicts([i for i, _ in pairs])
    rule_of = {
        "style": "speech_level",
        "persona": "persona",
        "temporality": "temporality",
        "unsupported_features": "unsupported",
    }
    for category, rule in rule_of.items():
        mine = [v for (_, c), v in zip(pairs, verdicts) if c == category]
        hits = sum(v.rule == rule for v in mine)
        assert hits >= len(mine) / 4, (category, hits, len(mine))


DIALOGUE = Dialogue(
    id="d1",
    turns=[
        {"role": "system", "text": "안녕하세요, 어르신."},
        {"role": "user", "text": "응, 그래."},
        {"role": "system", "text": "식사는 하셨어요?"},
        {"role": "user", "text": "먹었어."},
    ],
)


def write(tmp_path, *records):
    path = tmp_path / "oob.jsonl"
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def record(**changes):
    base = {"id": "a", "dialogue": "d1", "turn": 2, "category": "style", "text": "밥 먹었어?"}
    return {**base, **changes}


def test_a_good_record_reads_with_its_history(tmp_path):
    (turn,) = read_out_of_bounds(write(tmp_path, record(note="반말")), [DIALOGUE])
    assert (turn.id, turn.dialogue_id, turn.turn_index, turn.text) == ("a", "d1", 2, "밥 먹었어?")
    assert [t.text for t in turn.history] == ["안녕하세요, 어르신.", "응, 그래."]


@pytest.mark.parametrize(
    ("bad", "message", "fix"),
    [
        (record(dialogue="d9"), "dialogue 'd9' is not among the 1 dialogues", "d1"),
        (record(turn=1), "turn 1 of d1 is a user turn", "[2]"),
        (record(turn=0), "is the opening turn", "[2]"),
        (record(turn=7), "is not a turn", "[2]"),
        (record(text="식사는 하셨어요?"), "the dialogue's own turn 2", "write"),
        (record(category="rudeness"), "category 'rudeness' is not a category", "style"),
        (record(extra=1), "not a valid WrittenRecord", None),
        ("{not json", "not valid JSON", "JSON object"),
    ],
)
def test_a_bad_record_names_its_line_and_the_fix(tmp_path, bad, message, fix):
    from rolecall.records import Category, RoleSpec

    spec = RoleSpec(
        name="s",
        outline="o",
        categories=[Category(name="style", description="-", error_category="style")],
    )
    if isinstance(bad, dict):
        bad = {**bad, "id": "b"}  # the good first record is "a"
    path = write(tmp_path, record(), "", bad)
    with pytest.raises(InputFileError, match=message) as error:
        read_out_of_bounds(path, [DIALOGUE], spec)
    assert error.value.line == 3
    if fix is not None:
        assert fix in error.value.fix
    if not isinstance(bad, str) and "extra" not in bad:
        assert "line 3" in error.value.fix


def test_a_repeated_id_and_a_missing_file_are_input_file_errors(tmp_path):
    with pytest.raises(InputFileError, match="used again \\(first on line 1\\)") as error:
        read_out_of_bounds(write(tmp_path, record(), record()), [DIALOGUE])
    assert error.value.line == 2
    with pytest.raises(InputFileError, match="file not found"):
        read_out_of_bounds(tmp_path / "missing.jsonl", [DIALOGUE])


def test_without_a_spec_any_category_name_is_kept(tmp_path):
    (turn,) = read_out_of_bounds(write(tmp_path, record(category="anything")), [DIALOGUE])
    assert turn.category == "anything"
