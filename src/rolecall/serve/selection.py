"""Response selection for one live turn: retrieve, rerank, and (optionally) MC dropout.

What the Retrieve-fail-Generate bot does per user turn (NAACL 2022 §4.3): the retriever
finds the ``k`` best of the bot's candidate responses (``candidates.py``), the reranker
orders them (when asked: ``rerank``), and the best one's MC-dropout confidence
(``serve/unanswerable.py``) says whether to answer with it or fall back to the generator.

The context is run through the backbone **once**: with an ``attention`` reranker that
shares the retriever's backbone and cuts the context the same way (``max_turns`` and
``context_max_tokens``; the defaults agree), the same states feed the retriever's context
head and the reranker's cross-attention head. The candidates' states come from the
reranker's features cache, filled for every indexed candidate by ``prepare`` (once, like
the index itself). A ``joint`` reranker reads each (context, candidate) pair whole, one
backbone pass per candidate: correct, but far slower on a CPU.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rolecall.errors import ConfigError
from rolecall.records import Turn
from rolecall.serve.candidates import CandidateIndex
from rolecall.serve.lexical import LexicalScorer, fuse, standardised
from rolecall.serve.unanswerable import sigmoid_confidence
from rolecall.train.backbones.features import Features
from rolecall.train.data import LAST
from rolecall.train.pairs import as_context
from rolecall.train.reranker import Reranker


@dataclass(frozen=True)
class Selection:
    """One candidate for the turn: its index id and text, the retriever's score, the
    reranker's (None without a reranker)."""

    candidate_id: int
    text: str
    retrieval_score: float
    rerank_score: float | None = None


@dataclass(frozen=True)
class Turnout:
    """The ranked candidates of one turn, best first, and the best one's confidence (MC
    dropout's mean - variance of its sigmoid scores, or a detector's score; None when not
    asked for)."""

    ranked: list[Selection]
    confidence: float | None = None

    @property
    def best(self) -> Selection:
        return self.ranked[0]


class ResponseSelector:
    """A candidate index (with its retriever) and optionally a reranker, for live turns."""

    def __init__(
        self,
        index: CandidateIndex,
        reranker: Reranker | None = None,
        k: int = 10,
        rerank: bool = True,
        lexical_weight: float = 0.0,
        depth: int = 50,
        partner: CandidateIndex | None = None,
    ):
        """``rerank`` False: the retriever's order stands and the reranker only gives the
        best candidate's MC-dropout confidence (what a bot does by default: see
        ``BotSettings.rerank``). ``lexical_weight`` > 0: the retriever's ``depth`` best
        and BM25's ``depth`` best on the last user turn are ranked by the two scores fused
        (``lexical.py``) before the ``k`` best are kept. ``partner``: a second retriever's
        index of the same candidates (another backbone's); its ``depth`` best join, and
        the two retrievers' standardised scores are summed before BM25's are fused."""
        if k < 1:
            raise ValueError(f"k must be 1 or more, got {k}")
        if partner is not None and partner.texts != index.texts:
            raise ConfigError(
                f"the second retriever's index ({partner.path}) holds other candidates than "
                f"the first's ({index.path})",
                fix="build both indexes from the same examples (rolecall bot run does)",
            )
        self.partner = partner
        self.index, self.reranker, self.k, self.rerank = index, reranker, k, rerank
        self.lexical_weight, self.depth = lexical_weight, depth
        self._lexical: LexicalScorer | None = None
        self._building: threading.Thread | None = None
        self.retriever = index.retriever
        self.shared = reranker is not None and _shares_context_pass(self.retriever, reranker)

    @property
    def lexical(self) -> LexicalScorer:
        if self._building is not None:
            self._building.join()
            self._building = None
        if self._lexical is None:
            self._lexical = LexicalScorer(self.index.texts)
        return self._lexical

    def build_lexical_in_background(self) -> None:
        """Build the BM25 index (its Korean analyser takes a second or two to load) in a
        thread: a chat is ready sooner and builds it while the person types; the first
        turn that needs it waits for it."""
        if self.lexical_weight and self._lexical is None and self._building is None:

            def build() -> None:
                self._lexical = LexicalScorer(self.index.texts)

            self._building = threading.Thread(target=build, name="bm25-index", daemon=True)
            self._building.start()

    def prepare(self, progress: bool = True, lexical: bool = True) -> None:
        """Build the BM25 index (with ``lexical_weight``; ``lexical`` False: leave it to
        ``build_lexical_in_background`` or the first turn) and compute the reranker's
        states of every indexed candidate now (a frozen backbone only), so that no turn pays
        for them; kept in memory, and on disk when the reranker's features have a cache
        directory."""
        if self.lexical_weight and lexical:
            self.lexical  # noqa: B018 - built now, not in the first turn
        reranker = self.reranker
        if reranker is None or reranker.joint or not reranker.backbone.frozen:
            return
        if reranker.features is None:
            reranker.features = Features(reranker.backbone)
        reranker.features.precompute(
            "texts",
            self.index.texts,
            reranker.settings.candidate_max_tokens,
            progress,
            side="right",
        )

    def retrieve(self, context: str | Sequence[Turn], k: int | None = None) -> list[Selection]:
        """The retriever's ``k`` best candidates for one context, best first."""
        text = as_context(context, self.retriever.settings.max_turns)
        encoded = self.retriever.contexts_from_states(*self.retriever.context_states([text]))
        return self._first_stage(encoded, context, k or self.k)

    def _first_stage(self, encoded: Any, context: str | Sequence[Turn], k: int) -> list[Selection]:
        """The ``k`` best by the retriever, or by its scores fused with BM25's over the
        retriever's ``depth`` best and BM25's own (those sharing a word with the turn);
        with a partner, its ``depth`` best too and both retrievers' scores summed."""
        if not self.lexical_weight and self.partner is None:
            return [Selection(i, t, s) for i, t, s in self.index.search_encoded(encoded, k)[0]]
        hits = self.index.search_encoded(encoded, max(k, self.depth))[0]
        ids = [i for i, _, _ in hits]
        found = set(ids)
        partnered = None
        if self.partner is not None:
            cut = as_context(context, self.partner.retriever.settings.max_turns)
            partnered = self.partner.retriever.encode_contexts([cut])
            more = self.partner.search_encoded(partnered, max(k, self.depth))[0]
            ids += [i for i, _, _ in more if i not in found]
            found = set(ids)
        lexical = self.lexical.scores(last_user_text(context)) if self.lexical_weight else None
        extra = (
            [
                int(i)
                for i in np.argsort(-lexical, kind="stable")[: self.depth]
                if lexical[i] > 0 and int(i) not in found
            ]
            if lexical is not None
            else []
        )
        first = [s for _, _, s in hits]
        dense = np.concatenate([first, self.index.score_ids(encoded, ids[len(hits) :] + extra)])
        ids += extra
        if partnered is not None:
            dense = standardised(dense) + standardised(self.partner.score_ids(partnered, ids))
        fused = fuse(dense, lexical[ids], self.lexical_weight) if lexical is not None else dense
        order = np.lexsort((np.arange(len(ids)), -fused))[:k]
        return [Selection(ids[i], self.index.texts[ids[i]], float(fused[i])) for i in order]

    def select(
        self,
        context: str | Sequence[Turn],
        mc_passes: int = 0,
        seed: int = 0,
        detector: Any = None,
    ) -> Turnout:
        """Retrieve ``k``, rerank them (when there is a reranker and ``rerank``), best
        first; with ``mc_passes`` (>= 2) also the best one's MC-dropout confidence, or with
        ``detector`` (``serve/unanswerable.py``) the best one's score by it."""
        text = as_context(context, self.retriever.settings.max_turns)
        states = self.retriever.context_states([text])
        encoded = self.retriever.contexts_from_states(*states)
        ranked = self._first_stage(encoded, context, self.k)
        if self.reranker is not None and self.rerank:
            ranked = self._reranked(ranked, text, states)
        if detector is not None:
            return Turnout(ranked, float(detector.scores([text], [ranked[0].text])[0]))
        if self.reranker is None or mc_passes < 2:
            return Turnout(ranked)
        best = [ranked[0].text]
        if self.shared:
            samples = self.reranker.score_states(states, best, mc_passes, seed)
        else:
            samples = self.reranker.mc_dropout([text], best, mc_passes, seed)
        confidence = sigmoid_confidence(samples)[0]
        return Turnout(ranked, float(confidence))

    def _reranked(self, found: list[Selection], text: str, states: Any) -> list[Selection]:
        """``found`` reordered by the reranker's scores (ties keep the retriever's order)."""
        responses = [s.text for s in found]
        if self.shared:
            scores = self.reranker.score_states(states, responses)
        else:
            scores = self.reranker.score_pairs([text] * len(found), responses)
        order = np.lexsort((np.arange(len(found)), -scores))
        return [
            Selection(
                found[i].candidate_id, found[i].text, found[i].retrieval_score, float(scores[i])
            )
            for i in order
        ]


def last_user_text(context: str | Sequence[Turn]) -> str:
    """The text BM25 matches: the last user turn (of a context text, its last line)."""
    if isinstance(context, str):
        line = context.strip().splitlines()[-1] if context.strip() else ""
        line = line.removeprefix(LAST)
        return line.split(": ", 1)[1] if line.startswith(("user: ", "system: ")) else line
    users = [t.text for t in context if t.role == "user"]
    return users[-1] if users else ""


def _shares_context_pass(retriever, reranker: Reranker) -> bool:
    """Whether the retriever's context states are exactly what the reranker would read."""
    r, s = retriever.settings, reranker.settings
    a, b = retriever.backbone, reranker.backbone
    same = a is b or (a.frozen and b.frozen and a.identity == b.identity)
    return (
        not reranker.joint
        and same
        and r.max_turns == s.max_turns
        and r.context_max_tokens == s.context_max_tokens
    )
