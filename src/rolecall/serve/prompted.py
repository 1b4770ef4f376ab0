"""An LLM prompted with the role spec, in the place of a trained generator.

The Retrieve-fail-Generate bot (``serve/bot.py``) falls back to its generator when
retrieval fails. The paper's generator is a fine-tuned LM (``rolecall train generator``:
LoRA, MLE + unlikelihood, minutes to hours of training); before one is trained, or with a
strong instruction model on a server, the role spec itself can prompt any LLM
(``prompts/*/chat_role.j2``). ``PromptedGenerator`` offers what the bot asks of a
generator (``generate``, ``response_perplexities``, ``settings.alpha``) through rolecall's
LLM layer, so its calls are cached like every other call. ``bot.json``'s
``generator_model`` turns it on for a bot directory without ``generator/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rolecall.records import RoleSpec, Turn


@dataclass(frozen=True)
class PromptedSettings:
    alpha: None = None  # no unlikelihood training: recorded as None in the reply's stages


class PromptedGenerator:
    def __init__(self, llm, spec: RoleSpec):
        from rolecall.prompts import load_template

        self.llm, self.spec = llm, spec
        self.template = load_template("chat_role", spec.language)
        self.settings = PromptedSettings()

    def prompt(self, history: Sequence[Turn]) -> str:
        return self.template.render(outline=self.spec.outline,
                                    categories=self.spec.categories, history=list(history))

    def reply(self, history: Sequence[Turn], max_new_tokens: int = 48,
              temperature: float = 0.0, seed: int = 0) -> str:
        """The next system turn: the completion up to its first line break."""
        from rolecall.llm import Request, SamplingParams

        params = SamplingParams(temperature=temperature, max_tokens=max_new_tokens,
                                seed=seed, stop=("\n",))
        completion = self.llm.complete(Request(prompt=self.prompt(history), params=params))
        return completion.text.strip().split("\n")[0].strip()

    def generate(self, histories: Sequence[Sequence[Turn]], max_new_tokens: int = 48,
                 temperature: float = 0.0, seed: int = 0) -> list[str]:
        return [self.reply(h, max_new_tokens, temperature, seed) for h in histories]

    def response_perplexities(self, histories: Sequence[Sequence[Turn]],
                              responses: Sequence[str]) -> list[float]:
        """Perplexity of each response as the next system turn (one scoring call each)."""
        from rolecall.llm import Request

        if len(histories) != len(responses):
            raise ValueError(f"{len(histories)} histories but {len(responses)} responses")
        requests = [Request(prompt=self.prompt(h), score_text=" " + r)
                    for h, r in zip(histories, responses)]
        samples = self.llm.generate(requests)
        out = []
        for sample in samples:
            completion = sample[0].completion
            out.append(completion.perplexity if completion is not None else float("inf"))
        return out
