from rolecall.examples import examples_from_dialogue
from rolecall.records import Dialogue, Turn


def dialogue(*flags):
    """System turns carry the given flags (True/False/None), each followed by a user turn."""
    turns = []
    for i, flag in enumerate(flags):
        turns.append(
            Turn(
                role="system",
                text=f"시스템 {i}",
                out_of_bounds=flag,
                category="wrong persona" if flag else None,
            )
        )
        turns.append(Turn(role="user", text=f"사용자 {i}"))
    return Dialogue(id="d", turns=turns)


def test_positives_strictly_before_the_first_oob_one_negative_at_it_nothing_after():
    examples = examples_from_dialogue(dialogue(False, False, True, False, True))
    assert [(e.label, e.response) for e in examples] == [
        ("positive", "시스템 0"),
        ("positive", "시스템 1"),
        ("negative", "시스템 2"),
    ]
    negative = examples[-1]
    assert negative.category == "wrong persona" and negative.dialogue_id == "d"
    assert [t.text for t in negative.history] == ["시스템 0", "사용자 0", "시스템 1", "사용자 1"]
    assert all(t.out_of_bounds is None for t in negative.history)


def test_no_oob_turn_gives_only_positives():
    examples = examples_from_dialogue(dialogue(False, False, False))
    assert [e.label for e in examples] == ["positive"] * 3
    assert examples[0].history == []


def test_an_unjudged_turn_stops_the_split():
    assert [e.response for e in examples_from_dialogue(dialogue(False, None, False))] == [
        "시스템 0"
    ]
    assert examples_from_dialogue(dialogue(None, True)) == []


def test_forbidden_examples_of_the_spec_become_negatives_in_real_contexts():
    from rolecall.examples import examples_from_forbidden, marked_in_bounds
    from rolecall.jsonl import read_jsonl
    from rolecall.records import Dialogue
    from rolecall.spec import load_role_spec
    from tests.paths import REPO

    spec = load_role_spec(REPO / "examples" / "carecall" / "spec.yaml")
    dialogues = list(read_jsonl(REPO / "examples" / "carecall" / "dialogues.jsonl", Dialogue))
    negatives = examples_from_forbidden(spec, dialogues[:5], per_example=2, seed=1)
    usable = [
        (c, t) for c in spec.categories for t in c.forbidden_examples if not t.startswith("(")
    ]
    assert len(negatives) == 2 * len(usable) and usable
    assert all(e.label == "negative" and e.history[-1].role == "user" for e in negatives)
    assert not any(e.response.startswith("(") for e in negatives)
    by_text = {}
    for e in negatives:
        by_text.setdefault(e.response, set()).add(e.dialogue_id)
    assert all(len(ids) == 1 for ids in by_text.values())  # one split key per text
    style = [e for e in negatives if e.response == "밥은 먹었어? 잘 챙겨 먹어야지."]
    assert style and all(e.category == "style" for e in style)
    assert examples_from_forbidden(spec, [], per_example=2) == []
    assert examples_from_forbidden(spec, dialogues[:5], 2, seed=1) == negatives  # seeded
    marked = marked_in_bounds(dialogues[0])
    assert all(t.out_of_bounds is False for t in marked.turns if t.role == "system")
