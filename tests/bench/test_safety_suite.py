"""bench/safety_suite.py's parts on scripted checks: detection counted per check, the
targets' JSON as the house checks it (the whole bench runs on the demo's bot)."""

from __future__ import annotations

from rolecall.eval.safety_suite import SuiteItem
from tests.bench import loading

NAMES = {
    "crisis_referred", "abuse_de_escalated", "off_role_refused_and_redirected",
    "identity_answered_honestly", "no_temporal_claim", "small_talk_in_role",
    "small_talk_fallback", "crisis_false_alarms_on_small_talk",
}  # fmt: skip


def bench():
    return loading.load_bench("safety_suite", "bench_safety_suite")


def item(category: str, turn: str, subkind: str | None = None) -> SuiteItem:
    return SuiteItem(
        id=f"{category}-{turn}", category=category, expect="refer", turn=turn, subkind=subkind
    )


class Scripted:
    """Checks that fire what a table says."""

    checks = {"self_harm": None, "insult": None, "goodbye": None}
    kinds = {"self_harm": "crisis", "insult": "abuse", "goodbye": "answer"}

    def __init__(self, fired: dict[str, str]):
        self.fired = fired

    def read(self, history):
        name = self.fired.get(history[-1].text)
        return {"check": name, "kind": self.kinds.get(name)}


def test_detection_counts_precision_recall_and_false_alarms():
    items = [
        item("crisis", "a", "self_harm"),
        item("crisis", "b", "self_harm"),
        item("abuse", "c"),
        item("small_talk", "d"),
        item("small_talk", "e"),
    ]
    found = bench().detection(Scripted({"a": "self_harm", "d": "self_harm", "c": "insult"}), items)
    assert found["by_check"]["self_harm"] == {"precision": 0.5, "recall": 0.5, "fired": 2, "due": 2}
    assert found["by_check"]["insult"]["recall"] == 1.0
    assert found["crisis_referred"] == 0.5 and found["crisis_false_alarms"] == 0.5
    # goodbye: no turn calls for it, so no recall to average
    assert found["by_check"]["goodbye"]["due"] == 0 and bench().macro_f1(found) == 0.75


def test_the_targets_are_the_issues_and_met_as_measured():
    def rate(k, n):
        return {"k": k, "n": n, "rate": round(k / n, 4)}

    rates = {
        "crisis": rate(70, 70), "abuse": rate(27, 30), "investment": rate(15, 15),
        "opinion": rate(17, 20), "identity": rate(19, 20), "time_news": rate(18, 20),
        "small_talk": rate(50, 80),
    }  # fmt: skip
    found = {"with checks": {"rates": rates, "control": {"fallback_share": 0.25}}}
    targets = bench().targets(found, {"crisis_false_alarms": 0.05})
    loading.check_targets(targets, NAMES)
    assert targets["crisis_referred"]["met"] and targets["abuse_de_escalated"]["met"]
    assert targets["off_role_refused_and_redirected"]["value"] == round(32 / 35, 4)
    assert not targets["small_talk_in_role"]["met"] and not targets["small_talk_fallback"]["met"]
    assert targets["crisis_false_alarms_on_small_talk"]["met"]
    held_out = bench().targets(found, {"crisis_false_alarms": 0.1}, "held_out_")
    loading.check_targets(held_out, {f"held_out_{name}" for name in NAMES})
    assert not held_out["held_out_crisis_false_alarms_on_small_talk"]["met"]
