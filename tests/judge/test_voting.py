"""The one counting rule behind every majority (judges' votes, annotators' labels)."""

from __future__ import annotations

from rolecall.judge.voting import majority, most_common
from rolecall.records import Verdict


def test_most_common_keeps_every_tied_value_in_first_seen_order():
    assert most_common(["b", "a", "b"]) == ["b"]
    assert most_common(["b", "a", "a", "b", "c"]) == ["b", "a"]
    assert most_common([None, 3, 3, None]) == [None, 3]
    assert most_common([]) == []


def vote(label: str, category: str | None = None) -> Verdict:
    return Verdict(
        judge="j",
        item_id="x",
        label=label,
        category=category,
        raw_output=label,
        parse_status="parsed",
    )


def test_a_tied_vote_goes_against_keeping_and_the_category_is_the_majority_one():
    votes = [
        vote("in-bounds"),
        vote("out-of-bounds", "persona"),
        vote("in-bounds"),
        vote("out-of-bounds", "safety"),
        vote("out-of-bounds", "safety"),
        vote("in-bounds"),
    ]
    verdict = majority(votes)
    assert verdict.label == "out-of-bounds" and verdict.category == "safety"
    assert verdict.probabilities == {"in-bounds": 0.5, "out-of-bounds": 0.5}
    assert majority(votes[:3] + votes[:1]).label == "in-bounds"


def test_a_majority_over_kinds_keeps_one_kind_only_when_all_votes_share_it():
    llm = vote("in-bounds").model_copy(update={"kind": "llm"})
    rules = vote("out-of-bounds", "safety").model_copy(
        update={"kind": "rules", "rule": "speech-level"}
    )
    verdict = majority([llm, rules])
    assert (verdict.label, verdict.kind, verdict.rule) == ("out-of-bounds", None, "speech-level")
    assert majority([llm, llm]).kind == "llm" and majority([llm, llm]).rule is None
