"""The out-of-bounds judge (NAACL 2022, section 3.2): is a system turn within the role spec?

Two forms, one per template file:

- ``score`` (``judge_out_of_bounds.j2``, for base models such as the embedded Gemma): the
  prompt ends at "판정:" and the judge compares the log-likelihood of each label word, the
  in-bounds word and every category name. The verdict is the most likely label; the
  softmax over the labels is kept as ``probabilities``. Needs a backend with
  log-likelihood scoring (``llamacpp:``, ``hf:``).
- ``generate`` (``judge_out_of_bounds_chat.j2``, for instruction-tuned chat models): the
  judge answers JSON (schema-constrained where the backend supports it); an answer that
  does not parse is an ``unparsed`` verdict with its raw text, never a guess.

``format_input`` builds the request of one item, ``parse_output`` reads the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rolecall.errors import ConfigError
from rolecall.judge.labels import json_answer, label_requests, pick_label, resolve_mode
from rolecall.judge.voting import DirectJudge, Member
from rolecall.llm import LLM, Message, Request, SamplingParams
from rolecall.llm.base import Backend, Completion
from rolecall.prompts import Template, load_template
from rolecall.records import RoleSpec, Turn, Verdict

JUDGE = "out_of_bounds"
IN_BOUNDS, OUT_OF_BOUNDS = "in-bounds", "out-of-bounds"
IN_BOUNDS_WORD = {"ko": "적절", "en": "ok"}
MODES = ("score", "generate")  # in order of preference for auto


@dataclass(frozen=True)
class Item:
    """One system turn to judge: its dialogue, position, history and text."""

    dialogue_id: str
    turn_index: int
    history: tuple[Turn, ...]
    response: str

    @property
    def id(self) -> str:
        return f"{self.dialogue_id}#{self.turn_index}"


@dataclass(frozen=True)
class OutOfBoundsJudge:
    spec: RoleSpec
    mode: str  # "score" or "generate"
    template: Template
    temperature: float = 0.0
    constrained: bool = True  # generate mode: JSON schema sent (if the backend has it)

    name = JUDGE  # a class attribute, not a dataclass field

    @staticmethod
    def item_id(item: Item) -> str:
        return item.id

    @property
    def labels(self) -> list[str]:
        """The label words of score mode: the in-bounds word, then every category name."""
        return [IN_BOUNDS_WORD.get(self.spec.language, "ok")] + [
            c.name for c in self.spec.categories
        ]

    def _values(self, item: Item) -> dict:
        return {
            "outline": self.spec.outline.strip(),
            "categories": self.spec.categories,
            "history": item.history,
            "response": item.response,
        }

    def format_input(self, item: Item) -> list[Request]:
        """Score mode: one scoring request per label; generate mode: one chat request."""
        text = self.template.render(**self._values(item))
        if self.mode == "score":
            return label_requests(text, self.labels)
        schema = {
            "type": "object",
            "required": ["verdict", "rule"],
            "properties": {
                "verdict": {"type": "string", "enum": [IN_BOUNDS, OUT_OF_BOUNDS]},
                "rule": {
                    "anyOf": [
                        {"type": "string", "enum": [c.name for c in self.spec.categories]},
                        {"type": "null"},
                    ]
                },
            },
        }
        params = SamplingParams(
            temperature=self.temperature,
            max_tokens=64,
            seed=0,
            json_schema=schema if self.constrained else None,
        )
        return [Request(messages=(Message(role="user", content=text),), params=params)]

    def parse_output(self, item: Item, completions: list[Completion], model: str) -> Verdict:
        if self.mode == "score":
            return self._parse_scores(item, completions, model)
        return self._parse_answer(item, completions[0].text, model)

    def _parse_scores(self, item: Item, completions: list[Completion], model: str) -> Verdict:
        best, probabilities, raw = pick_label(self.labels, completions)
        rule = None if best == self.labels[0] else best
        return self._verdict(item, rule, raw, model, probabilities)

    def _parse_answer(self, item: Item, text: str, model: str) -> Verdict:
        answer = json_answer(text) or {}
        verdict, rule = answer.get("verdict"), answer.get("rule")
        if verdict == IN_BOUNDS:
            return self._verdict(item, None, text, model)
        if verdict == OUT_OF_BOUNDS and rule in {c.name for c in self.spec.categories}:
            return self._verdict(item, rule, text, model)
        return Verdict(
            judge=JUDGE, item_id=item.id, raw_output=text, parse_status="unparsed", model=model
        )

    def _verdict(
        self,
        item: Item,
        rule: str | None,
        raw: str,
        model: str,
        probabilities: dict[str, float] | None = None,
    ) -> Verdict:
        """A parsed verdict: in bounds without a ``rule``, else out of bounds with the
        error category of the spec's category named ``rule``."""
        return Verdict(
            judge=JUDGE,
            item_id=item.id,
            label=IN_BOUNDS if rule is None else OUT_OF_BOUNDS,
            category=None if rule is None else self._error_category(rule),
            raw_output=raw,
            parse_status="parsed",
            probabilities=probabilities,
            model=model,
        )

    def _error_category(self, name: str) -> str:
        return next(c.error_category for c in self.spec.categories if c.name == name)


def make_judge(
    spec: RoleSpec, backend: Backend, mode: str = "auto", temperature: float = 0.0
) -> OutOfBoundsJudge:
    """``auto`` picks ``score`` when the backend can score text, else ``generate``; in
    generate mode the answer is schema-constrained when the backend supports it and parsed
    from free text otherwise. Both choices are recorded in the run manifest."""
    mode = resolve_mode(mode, MODES, backend, "out-of-bounds judge")
    caps = backend.capabilities()
    name = "judge_out_of_bounds" if mode == "score" else "judge_out_of_bounds_chat"
    return OutOfBoundsJudge(
        spec,
        mode,
        load_template(name, spec.language),
        temperature,
        constrained=bool(caps.get("json_schema")),
    )


def make_panel(
    spec: RoleSpec,
    members: Sequence[LLM | DirectJudge],
    mode: str = "auto",
    temperature: float = 0.0,
) -> list[Member]:
    """The out-of-bounds panel: each LLM gets its judge (mode picked per model, as in
    ``make_judge``); a direct judge (trained, rules) sits as it is, and must judge turns."""
    if not members:
        raise ConfigError("no out-of-bounds judge", fix="name at least one judge")
    panel: list[Member] = []
    for member in members:
        if isinstance(member, LLM):
            panel.append((member, make_judge(spec, member.backend, mode, temperature)))
        elif member.name != JUDGE:
            raise ConfigError(
                f"{member.model} judges {member.name}, not out-of-bounds turns",
                fix="give the dialogue judge a judge made for system turns",
            )
        else:
            panel.append(member)
    return panel
