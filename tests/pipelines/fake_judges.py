"""Judges that need no LLM, for the pipeline tests: stand-ins for a trained judge and a
rule judge, installed as ``rolecall.train.judges`` and ``rolecall.judge.rules`` for one
test (``install``), whether or not the real modules exist yet."""

from __future__ import annotations

import sys
import types
from pathlib import Path

from rolecall.errors import ConfigError
from rolecall.records import Verdict


class LaughRules:
    """``rules:laugh`` on the consistency filter: a candidate that laughs keeps its context."""

    kind, name = "rules", "consistency"

    def __init__(self, model: str = "rules:laugh"):
        self.model = model
        self.asked: list[str] = []

    @staticmethod
    def item_id(pair) -> str:
        return pair.provenance.get("candidate_id") or pair.toxic

    def verdicts(self, pairs):
        self.asked += [self.item_id(p) for p in pairs]
        laughs = ["ㅋ" in p.toxic for p in pairs]
        return [
            Verdict(
                judge=self.name,
                item_id=self.item_id(p),
                label="maintained" if laugh else "shifted",
                raw_output=p.toxic,
                parse_status="parsed",
                rule=None if laugh else "no-laugh",
            )
            for p, laugh in zip(pairs, laughs)
        ]


class SelfClassifier:
    """``classifier:PATH`` on system turns: a turn that talks about itself ("저") is a
    wrong persona, with the probability a trained model would give."""

    kind, name = "classifier", "out_of_bounds"

    def __init__(self, path: Path):
        self.model = f"classifier:{path}"
        self.asked: list[str] = []

    @staticmethod
    def item_id(item) -> str:
        return item.id

    def verdicts(self, items):
        self.asked += [item.id for item in items]
        flagged = ["저" in item.response for item in items]
        return [
            Verdict(
                judge=self.name,
                item_id=item.id,
                label="out-of-bounds" if flag else "in-bounds",
                category="wrong persona" if flag else None,
                raw_output="",
                parse_status="parsed",
                score=0.75 if flag else 0.25,
            )
            for item, flag in zip(items, flagged)
        ]


def load_trained_judge(path, task, spec=None):
    if task != "out_of_bounds":
        raise ConfigError(f"{path} judges out_of_bounds, not {task}", fix="train one for it")
    return SelfClassifier(Path(path))


def load_rule_judge(name, task, spec=None):
    if name != "laugh":
        raise ConfigError(f"no rule judge '{name}'", fix="use rules:laugh")
    if task != "consistency":
        raise ConfigError(f"rules:{name} judges consistency, not {task}", fix="use it there")
    return LaughRules(f"rules:{name}")


def install(monkeypatch) -> dict[str, list]:
    """Install the fake loaders for one test; returns the calls each loader got."""
    calls: dict[str, list] = {"trained": [], "rules": []}

    def trained(path, task, spec=None):
        calls["trained"].append((path, task, spec))
        return load_trained_judge(path, task, spec)

    def rules(name, task, spec=None):
        calls["rules"].append((name, task, spec))
        return load_rule_judge(name, task, spec)

    trained_module = types.ModuleType("rolecall.train.judges")
    trained_module.load_trained_judge = trained
    rules_module = types.ModuleType("rolecall.judge.rules")
    rules_module.load_rule_judge = rules
    monkeypatch.setitem(sys.modules, trained_module.__name__, trained_module)
    monkeypatch.setitem(sys.modules, rules_module.__name__, rules_module)
    return calls
