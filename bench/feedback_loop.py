"""The Fix loop simulated on the care-call turns (issue #47 item 6; the paper's section
3.3): is a guard trained on the bot's own flagged replies better than one trained on as
many random labelled examples?

Data: ``examples/carecall`` as ``rolecall.judge.written_out_of_bounds.gold_examples``
reads it: 39 dialogues written in bounds (every system turn after the opening one, a
positive) and 183 out-of-bounds system turns written for the same contexts (negatives:
wrong persona, unsafe, off-policy, not sensible).

The bot: every reply text of the 39 dialogues, in bounds or not, is a candidate (a served
pool holds bad replies, as a generated pool does); the first stage ranks them by the
bundled sentence encoder's cosine with the person's last turn, fused with BM25 as the
bot fuses them (``serve/lexical.fuse``); the guard (character TF-IDF + LR over the turn
before and the reply, ``train/baselines.py``, flagging at P(out) >= 0.5) replaces a
flagged reply with a fallback question.

The simulated annotator flags a served reply when it is one of the written out-of-bounds
turns (a known violation; a reply from the in-bounds pool is accepted). Error rate: the
share of contexts whose served reply the annotator flags; the fallback share is reported
beside it (a guard that flags everything has no errors and no answers).

Per seed the dialogues are split in three by a seeded shuffle: seed (v1's data), feedback,
evaluation. Version 1: the guard trained on the seed dialogues' labelled turns. Feedback:
version 1 talks in the feedback dialogues' contexts; each flagged reply becomes a negative
in its context and the context's gold reply a positive (what Fix and a saved dialogue
give). Version 2: version 1's data + the feedback. Control: version 1's data + as many
labelled turns drawn at random from the feedback dialogues (both labels, in their
proportion). All three are read on the evaluation dialogues, which no version trained on.

Targets (on all seeds' evaluation contexts together, a paired bootstrap over contexts):
version 2's error rate below version 1's, the 95% interval of the difference below 0
(``v2_vs_v1``); version 2's below the control's (``v2_vs_control``). A guard that flags
more has fewer errors and more fallbacks, so the same differences are also given with
version 2 and the control falling back on exactly as many contexts as version 1 (their
likeliest out of bounds; ``at_v1_fallbacks``), and those are targets too
(``matched_v2_vs_v1``, ``matched_v2_vs_control``). Each target's value is the upper end
of the difference's 95% interval.

Usage: python bench/feedback_loop.py [--seeds 0,1,2,3,4]
The last line printed is a JSON object with every number and the targets.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from rolecall.eval.intervals import paired_bootstrap
from rolecall.judge.written_out_of_bounds import gold_examples
from rolecall.records import Example
from rolecall.retrieval.sentence_vectors import shared_vectors
from rolecall.serve.lexical import LexicalScorer, fuse
from rolecall.serve.selection import last_user_text
from rolecall.train.baselines import BASELINE_VIEWS, TfidfModel, TfidfSettings

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "carecall"
LEXICAL_WEIGHT = 0.5  # BM25's weight in the fused first stage, as a bot's default
FLAG_AT = 0.5


def pair(history, response: str) -> tuple[str, str]:
    return (history[-1].text if history else "", response)


def fit_guard(items: list[Example], seed: int) -> TfidfModel:
    settings = TfidfSettings(
        task="out_of_bounds",
        labels=["positive", "negative"],
        pair=True,
        views=list(BASELINE_VIEWS),
        seed=seed,
    )
    model = TfidfModel(settings)
    model.fit([pair(e.history, e.response) for e in items], [e.label for e in items])
    return model


class Bot:
    """The first stage over the whole pool, then a guard."""

    def __init__(self, pool: list[str], bad: set[str]):
        self.pool, self.bad = pool, bad
        self.vectors = shared_vectors().vectors(pool)
        self.lexical = LexicalScorer(pool)

    def first(self, contexts: list[Example]) -> list[str]:
        """The first stage's best candidate for each context."""
        turns = [last_user_text(list(e.history)) for e in contexts]
        dense = shared_vectors().vectors(turns) @ self.vectors.T
        best = []
        for i, turn in enumerate(turns):
            scores = fuse(dense[i], self.lexical.scores(turn), LEXICAL_WEIGHT)
            best.append(self.pool[int(np.argmax(scores))])
        return best

    def served(self, guard: TfidfModel, contexts: list[Example], replies: list[str],
               falls: int | None = None):  # fmt: skip
        """Per context: (the annotator flags the served reply, the guard fell back).
        ``falls``: the guard falls back on exactly this many contexts, its likeliest out of
        bounds (an operating point matched to another guard's fallback count; no label
        read), instead of at P(out) >= 0.5."""
        proba = guard.predict_proba([pair(e.history, r) for e, r in zip(contexts, replies)])
        out = proba[:, guard.labels.index("negative")]
        if falls is None:
            fallback = out >= FLAG_AT
        else:
            fallback = np.zeros(len(out), dtype=bool)
            fallback[np.argsort(-out, kind="stable")[:falls]] = True
        errors = np.array([r in self.bad for r in replies]) & ~fallback
        return errors.astype(float), fallback.astype(float)


def split(items: list[Example], seed: int) -> list[list[Example]]:
    names = sorted({e.dialogue_id for e in items})
    random.Random(seed).shuffle(names)
    third = len(names) // 3
    parts = [set(names[:third]), set(names[third : 2 * third]), set(names[2 * third :])]
    return [[e for e in items if e.dialogue_id in part] for part in parts]


def run_seed(bot: Bot, items: list[Example], seed: int) -> dict:
    seed_items, feedback_items, eval_items = split(items, seed)
    v1 = fit_guard(seed_items, seed)
    # the feedback: version 1 talks in the feedback dialogues' contexts
    contexts = [e for e in feedback_items if e.label == "positive"]
    replies = bot.first(contexts)
    errors, fallback = bot.served(v1, contexts, replies)
    feedback = []
    for e, reply, wrong in zip(contexts, replies, errors, strict=True):
        if wrong:
            feedback.append(
                Example(history=e.history, response=reply, label="negative",
                        category="policy violation", dialogue_id=e.dialogue_id)
            )  # fmt: skip
            feedback.append(e)  # the gold reply, as the fixed dialogue keeps it
    v2 = fit_guard(seed_items + feedback, seed)
    drawn = random.Random(seed + 1).sample(feedback_items, min(len(feedback), len(feedback_items)))
    control = fit_guard(seed_items + drawn, seed)
    evaluation = [e for e in eval_items if e.label == "positive"]
    served = bot.first(evaluation)
    found = {name: bot.served(g, evaluation, served) for name, g in
             (("v1", v1), ("v2", v2), ("control", control))}  # fmt: skip
    falls = int(found["v1"][1].sum())  # v2 and the control at v1's fallback count
    for name, guard in (("v2 at v1's fallbacks", v2), ("control at v1's fallbacks", control)):
        found[name] = bot.served(guard, evaluation, served, falls)
    return {
        "seed": seed,
        "dialogues": [
            len({e.dialogue_id for e in part}) for part in (seed_items, feedback_items, eval_items)
        ],
        "feedback_contexts": len(contexts),
        "flagged_in_feedback": int(errors.sum()),
        "feedback_examples": len(feedback),
        "eval_contexts": len(evaluation),
        "first_stage_violations": float(np.mean([r in bot.bad for r in served])),
        "errors": {name: e.tolist() for name, (e, _) in found.items()},
        "fallbacks": {name: f.tolist() for name, (_, f) in found.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0,1,2,3,4")
    args = parser.parse_args()
    started = time.perf_counter()
    items = gold_examples(EXAMPLES)
    pool = sorted({e.response for e in items})
    bot = Bot(pool, {e.response for e in items if e.label == "negative"})
    runs = [run_seed(bot, items, int(s)) for s in args.seeds.split(",")]
    joined = {name: np.concatenate([r["errors"][name] for r in runs]) for name in runs[0]["errors"]}
    fallbacks = {n: np.concatenate([r["fallbacks"][n] for r in runs]) for n in runs[0]["fallbacks"]}
    mean = lambda values: lambda i: float(values[i].mean())  # noqa: E731
    n = len(joined["v1"])
    v2_vs_v1 = paired_bootstrap(mean(joined["v1"]), mean(joined["v2"]), n)
    v2_vs_control = paired_bootstrap(mean(joined["control"]), mean(joined["v2"]), n)
    matched_v1 = paired_bootstrap(mean(joined["v1"]), mean(joined["v2 at v1's fallbacks"]), n)
    matched_control = paired_bootstrap(
        mean(joined["control at v1's fallbacks"]), mean(joined["v2 at v1's fallbacks"]), n
    )
    for r in runs:
        rates = {k: round(float(np.mean(v)), 3) for k, v in r["errors"].items()}
        falls = {k: round(float(np.mean(v)), 3) for k, v in r["fallbacks"].items()}
        print(f"seed {r['seed']}: dialogues {r['dialogues']}, flagged {r['flagged_in_feedback']} "
              f"of {r['feedback_contexts']}, errors {rates}, fallbacks {falls}")  # fmt: skip
    errors = {k: round(float(v.mean()), 4) for k, v in joined.items()}
    fallback = {k: round(float(v.mean()), 4) for k, v in fallbacks.items()}
    print(f"all seeds, {n} evaluation contexts: error rate {errors}, fallback {fallback}")
    print(f"v2 - v1 {v2_vs_v1}; v2 - control {v2_vs_control}")
    print(f"at v1's fallback count: v2 - v1 {matched_v1}; v2 - control {matched_control}")
    violations = round(float(np.mean([r["first_stage_violations"] for r in runs])), 4)
    below = lambda d: d["ci95"] is not None and d["ci95"][1] < 0  # noqa: E731
    result = {
        "bench": "feedback_loop",
        "seeds": args.seeds,
        "seconds": round(time.perf_counter() - started, 1),
        "eval_contexts": n,
        "error_rate": errors,
        "fallback_share": fallback,
        "first_stage_violations": violations,
        "runs": [{k: v for k, v in r.items() if k not in ("errors", "fallbacks")} for r in runs],
        "v2_minus_v1": v2_vs_v1,
        "v2_minus_control": v2_vs_control,
        "at_v1_fallbacks": {"v2_minus_v1": matched_v1, "v2_minus_control": matched_control},
        "targets": {
            "v2_vs_v1": {"value": v2_vs_v1["ci95"][1] if v2_vs_v1["ci95"] else None,
                         "target": "< 0", "met": below(v2_vs_v1)},
            "v2_vs_control": {"value": v2_vs_control["ci95"][1] if v2_vs_control["ci95"] else None,
                              "target": "< 0",
                              "met": below(v2_vs_control)},
            "matched_v2_vs_v1": {"value": matched_v1["ci95"][1] if matched_v1["ci95"] else None,
                                 "target": "< 0",
                                 "met": below(matched_v1)},
            "matched_v2_vs_control": {
                "value": matched_control["ci95"][1] if matched_control["ci95"] else None,
                "target": "< 0", "met": below(matched_control)},
        },
    }  # fmt: skip
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
