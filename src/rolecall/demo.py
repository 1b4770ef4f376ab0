"""The demo: a care-call bot's greetings, written by the (embedded) model.

A few-shot completion prompt (the embedded Gemma is a base model, not a chat model) asks for
more greetings in the style of the examples; each sample is cut at the end of its line.
"""

from __future__ import annotations

from collections.abc import Iterator

from rolecall.llm import LLM, Request, SamplingParams
from rolecall.prompts import load_template

OPENINGS = {"ko": "안녕하세요, 어르신.", "en": "Hello!"}


def run_demo(llm: LLM, language: str = "ko", samples: int = 3) -> Iterator[str]:
    template = load_template("demo", language)
    opening = OPENINGS.get(language, OPENINGS["ko"])
    prompt = template.render(opening=opening)
    params = SamplingParams(temperature=0.8, top_p=0.9, max_tokens=48, stop=("\n",), seed=7)
    results = llm.generate([Request(prompt=prompt, params=params)], n=samples)[0]
    for sample in results:
        if sample.ok:
            yield f"{opening}{sample.completion.text.rstrip()}"
        else:
            yield f"(failed: {sample.error})"
