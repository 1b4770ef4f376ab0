"""An LLM prompted with the role spec: as the bot's generator, or as the whole bot.

The Retrieve-fail-Generate bot (``serve/bot.py``) falls back to its generator when
retrieval fails. The paper's generator is a fine-tuned LM (``rolecall train generator``:
LoRA, MLE + unlikelihood, minutes to hours of training); before one is trained, or with a
strong instruction model on a server, the role spec itself can prompt any LLM
(``prompts/*/chat_role.j2``). ``PromptedGenerator`` offers what the bot asks of a
generator (``generate``, ``response_perplexities``, ``settings.alpha``) through rolecall's
LLM layer, so its calls are cached like every other call (when the ``LLM`` has a cache).
``bot.json``'s ``generator_model`` turns it on for a bot directory without ``generator/``.

``PromptedBot`` is that generator answering every turn by itself, with no retrieval and
no guard (path ``llm``): the web app's ``llm`` bot and ``rolecall chat --model M --spec S``.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from rolecall.records import RoleSpec, Turn
from rolecall.serve.reply import Reply, draw_unrejected, ms_since


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
        return self.template.render(
            outline=self.spec.outline, categories=self.spec.categories, history=list(history)
        )

    def reply(
        self,
        history: Sequence[Turn],
        max_new_tokens: int = 48,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> str:
        """The next system turn: the completion up to its first line break."""
        from rolecall.llm import Request, SamplingParams

        params = SamplingParams(
            temperature=temperature, max_tokens=max_new_tokens, seed=seed, stop=("\n",)
        )
        completion = self.llm.complete(Request(prompt=self.prompt(history), params=params))
        return completion.text.strip().split("\n")[0].strip()

    def generate(
        self,
        histories: Sequence[Sequence[Turn]],
        max_new_tokens: int = 48,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> list[str]:
        return [self.reply(h, max_new_tokens, temperature, seed) for h in histories]

    def response_perplexities(
        self, histories: Sequence[Sequence[Turn]], responses: Sequence[str]
    ) -> list[float]:
        """Perplexity of each response as the next system turn (one scoring call each)."""
        from rolecall.llm import Request

        if len(histories) != len(responses):
            raise ValueError(f"{len(histories)} histories but {len(responses)} responses")
        requests = [
            Request(prompt=self.prompt(h), score_text=" " + r) for h, r in zip(histories, responses)
        ]
        samples = self.llm.generate(requests)
        out = []
        for sample in samples:
            completion = sample[0].completion
            out.append(completion.perplexity if completion is not None else float("inf"))
        return out


class PromptedBot:
    """A ``ChatBot`` (``serve/reply.py``): the prompted LLM's line is the reply; a reply a
    person rejected is drawn again (``draw_unrejected``)."""

    version = "llm"  # the web app sets one naming the model and hashing the prompt

    def __init__(self, llm, spec: RoleSpec, temperature: float = 0.7, max_tokens: int = 64):
        self.generator = PromptedGenerator(llm, spec)
        self.temperature, self.max_tokens = temperature, max_tokens

    def reply(self, history: Sequence[Turn], exclude: Collection[str] = ()) -> Reply:
        started = time.perf_counter()

        def draw(temperature: float, seed: int) -> str:
            return self.generator.reply(history, self.max_tokens, temperature, seed)

        text, tries, temperature = draw_unrejected(draw, self.temperature, exclude)
        stage = {
            "stage": "generate",
            "model": self.generator.llm.model_id,
            "tries": tries,
            "excluded": len(exclude),
            "temperature": temperature,
            "ms": ms_since(started),
        }
        # subtle: every draw may come back empty (a model that stops at once); a turn
        # of the dialogue is never empty, so the bot says it has nothing to say
        return Reply(text or "...", "llm", [stage], ms_since(started))
