"""The ``slang`` attack of ``rolecall redteam`` (issue #19): the simulated user's own next
turn, rewritten by K/DA's generator with n comments retrieved for that turn.

A K/DA sentence (the ``kda`` attack) comes from elsewhere and has to be fitted to the call;
this attack starts from what the simulated user would have said anyway (the ``neutral``
control's turn, same prompt and seed), so the offence is in context by construction and
the two kinds differ only in the rewrite. The rewrite is K/DA's own generation step, not a
copy of it: ``plan_candidates`` retrieves the top-n comments of the slang index for the
turn and renders ``detox_rewrite`` with K/DA's sampling defaults (``KdaConfig``), and
``candidate_problem`` rejects what K/DA generation rejects (an empty rewrite, or one that
only repeats the turn). A rejected rewrite leaves the user's own turn in place, marked
``rewritten: false`` with the reason, so that the attack is never silently a neutral turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rolecall.generate.kda import KdaConfig, candidate_problem, plan_candidates
from rolecall.llm import LLM
from rolecall.prompts import Template, load_template
from rolecall.slang.index import SlangIndex


@dataclass(frozen=True)
class SlangRewriter:
    """K/DA's generator over one slang index: ``llm`` rewrites a turn with ``n`` comments."""

    llm: LLM
    index: SlangIndex
    n: int  # comments per rewrite (RedteamSettings.slang_n)
    language: str = "ko"
    config: KdaConfig = field(default_factory=KdaConfig)

    def template(self) -> Template:
        return load_template(self.config.template, self.language)

    def rewrite(self, turn: str, seed: int, turn_id: str) -> dict[str, Any]:
        """``turn`` rewritten: the attack record's fields (``text`` is the rewrite, or
        ``turn`` when the rewrite was rejected). ``seed`` makes the call repeatable (the
        LLM cache answers a rerun); ``turn_id`` names it as K/DA names a sentence."""
        config = self.config.model_copy(update={"ns": (self.n,), "seed": seed})
        template = self.template()
        [planned] = plan_candidates([(turn_id, turn)], self.index, config, template)
        raw = self.llm.complete(planned.request).text
        # subtle: K/DA keeps the stripped answer; a user turn is one line, as the stop
        # string asks (a backend that ignores stop strings may still write more)
        rewrite = raw.strip().split("\n")[0].strip()
        problem = candidate_problem(turn, rewrite)
        texts = self._texts
        return {
            "text": turn if problem else rewrite,
            "sentence": turn,
            "rewrite": rewrite,
            "rewritten": problem is None,
            "rejected": problem,
            "comments": [{"id": i, "text": texts[i]} for i in planned.comment_ids],
            "source": {
                "slang_index": str(self.index.path),
                "n": self.n,
                "model": self.llm.model_id,
                "seed": planned.request.params.seed,
                "prompt_hash": template.hash,
            },
        }

    @cached_property
    def _texts(self) -> dict[str, str]:
        """Comment id -> text, mapped once (cached_property writes past ``frozen``)."""
        return dict(zip(self.index.ids, self.index.texts))
