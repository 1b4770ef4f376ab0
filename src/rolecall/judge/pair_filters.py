"""K/DA's two filters (ACL 2025), each a label judge with its own templates.

1. ``consistency``: is the context of the neutral sentence maintained in the candidate?
   Failures: answering or replying to the sentence, drifting to unrelated slang, merely
   paraphrasing without adding offensiveness. Keep "maintained".
2. ``implicit``: is the candidate implicitly offensive? Keep "implicit"; drop "none"
   (not offensive) and "explicit" (open profanity).

Label words per language map to outcomes. ``score`` mode compares the words' likelihoods
(base models), optionally calibrated against the model's prior for each word (``calibrate``,
see ``labels.py``); ``generate`` mode reads a JSON ``{"label": ...}`` answer (chat models).
Alternative templates are chosen by name (``template=``); the run manifest records their
hashes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from rolecall.errors import BackendError, ConfigError
from rolecall.judge.labels import (
    content_free_prior,
    enum_schema,
    json_answer,
    label_requests,
    pick_label,
    resolve_mode,
)
from rolecall.judge.voting import DirectJudge, Member
from rolecall.llm import LLM, Message, Request, SamplingParams
from rolecall.llm.base import Backend, Completion
from rolecall.prompts import Template, load_template
from rolecall.records import Pair, Verdict

# filter -> language -> label word -> outcome; the first outcome listed is the one kept
LABELS = {
    "consistency": {
        "ko": {"유지": "maintained", "변화": "shifted"},
        "en": {"kept": "maintained", "shifted": "shifted"},
    },
    "implicit": {
        "ko": {"은근함": "implicit", "무해함": "none", "노골적": "explicit"},
        "en": {"implicit": "implicit", "none": "none", "explicit": "explicit"},
    },
}
KEEP = {"consistency": "maintained", "implicit": "implicit"}
FILTERS = tuple(LABELS)
MODES = ("score", "generate")  # in order of preference for auto
# content-free inputs for calibration (Zhao et al. 2021 use "N/A", "" and "[MASK]"; an
# empty sentence would read as a real, empty candidate here)
CONTENT_FREE = ("N/A", "[MASK]")


def keeps(name: str, verdict: Verdict) -> bool:
    """Whether filter ``name`` keeps a candidate with this (majority) verdict."""
    return verdict.parse_status == "parsed" and verdict.label == KEEP[name]


def pair_id(pair: Pair) -> str:
    return pair.provenance.get("candidate_id") or f"{pair.neutral}\u241f{pair.toxic}"


@dataclass(frozen=True)
class PairJudge:
    name: str  # "consistency" or "implicit"
    mode: str  # "score" or "generate"
    template: Template
    words: dict[str, str]  # label word -> outcome
    temperature: float = 0.0
    constrained: bool = True
    prior: dict[str, float] | None = field(default=None, compare=False)  # word -> log p

    @staticmethod
    def item_id(pair: Pair) -> str:
        return pair_id(pair)

    def keeps(self, verdict: Verdict) -> bool:
        return keeps(self.name, verdict)

    def format_input(self, pair: Pair) -> list[Request]:
        text = self.template.render(neutral=pair.neutral, toxic=pair.toxic)
        if self.mode == "score":
            return label_requests(text, list(self.words))
        schema = enum_schema("label", list(self.words)) if self.constrained else None
        params = SamplingParams(
            temperature=self.temperature, max_tokens=32, seed=0, json_schema=schema
        )
        return [Request(messages=(Message(role="user", content=text),), params=params)]

    def parse_output(self, pair: Pair, completions: list[Completion], model: str) -> Verdict:
        common = {"judge": self.name, "item_id": pair_id(pair), "model": model}
        if self.mode == "score":
            word, probabilities, raw = pick_label(list(self.words), completions, self.prior)
            return Verdict(
                label=self.words[word],
                raw_output=raw,
                parse_status="parsed",
                probabilities={self.words[w]: p for w, p in probabilities.items()},
                **common,
            )
        text = completions[0].text
        word = (json_answer(text) or {}).get("label")
        if word not in self.words:
            return Verdict(raw_output=text, parse_status="unparsed", **common)
        return Verdict(label=self.words[word], raw_output=text, parse_status="parsed", **common)


def make_pair_judge(
    name: str,
    backend: Backend,
    language: str = "ko",
    mode: str = "auto",
    template: str | None = None,
    temperature: float = 0.0,
) -> PairJudge:
    if name not in LABELS:
        raise ConfigError(f"unknown filter '{name}'", fix=f"use one of {FILTERS}")
    words = LABELS[name].get(language)
    if words is None:
        raise ConfigError(
            f"no label words for language '{language}'", fix=f"use one of {sorted(LABELS[name])}"
        )
    mode = resolve_mode(mode, MODES, backend, f"{name} filter")
    caps = backend.capabilities()
    default = f"judge_{name}" if mode == "score" else f"judge_{name}_chat"
    loaded = load_template(template or default, language)
    return PairJudge(
        name, mode, loaded, words, temperature, constrained=bool(caps.get("json_schema"))
    )


def calibrate(llm: LLM, judge: PairJudge) -> PairJudge:
    """``judge`` with its content-free prior measured on ``llm`` (score mode only).

    A few scoring calls, cached like every other: a resumed run asks nothing again.
    """
    if judge.mode != "score":
        return judge
    words = list(judge.words)
    prompts = [judge.template.render(neutral=text, toxic=text) for text in CONTENT_FREE]
    requests = [r for prompt in prompts for r in label_requests(prompt, words)]
    samples = [s for per_request in llm.generate(requests) for s in per_request]
    failed = [s for s in samples if not s.ok]
    if failed:
        raise BackendError(
            f"calibrating the {judge.name} judge failed: {failed[0].error}",
            fix="check the judge model, or set calibrate: false",
        )
    prior = content_free_prior(prompts, words, [s.completion for s in samples])
    return replace(judge, prior=prior)


def make_panel(
    name: str,
    members: Sequence[LLM | DirectJudge],
    language: str = "ko",
    mode: str = "auto",
    template: str | None = None,
    temperature: float = 0.0,
    calibrated: bool = False,
) -> list[Member]:
    """The panel of filter ``name``: each LLM gets this filter's judge (made per model:
    ``auto`` picks score or generate mode by what that model's backend can do, so a panel
    may mix a base model and a chat model; ``calibrated`` measures each score-mode judge's
    label prior on its model first); a direct judge (trained, rules) sits as it is, and must answer
    this filter."""
    if not members:
        raise ConfigError(f"no judge for the {name} filter", fix="name at least one judge")
    panel: list[Member] = []
    for member in members:
        if not isinstance(member, LLM):
            if member.name != name:
                raise ConfigError(
                    f"{member.model} judges {member.name}, not the {name} filter",
                    fix=f"give the {name} filter a judge made for it",
                )
            panel.append(member)
            continue
        judge = make_pair_judge(name, member.backend, language, mode, template, temperature)
        panel.append((member, calibrate(member, judge) if calibrated else judge))
    return panel
