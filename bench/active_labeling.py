"""How many labels the label queue's order saves over random order (issue #35 item 4).

A simulated annotator answers every item it is served with the gold label. Two sets:

- **beep**: BEEP! comments, offensive (``hate`` offensive or hate) vs none, read as
  ``bench/judges.py`` reads them. Pool: BEEP! train (``slang/beep_labeled_train.tsv``,
  7,896 comments); held out: BEEP! dev (``eval/beep_labeled_dev.tsv``, 471).
- **carecall**: the 244 in-bounds system turns of ``examples/carecall/dialogues.jsonl``
  (every system turn after the opening one) and the 183 hand-written out-of-bounds turns
  of ``out_of_bounds.jsonl`` in the contexts they replace, built as ``bench/judges.py``
  builds its out_of_bounds set. Each seed holds ``--held-out`` (30%) of the dialogues
  out; the rest is the pool.

The judge is the project's TF-IDF judge (``train/baselines.TfidfModel``) over the views of
the implicit judge (``kda_judges.JUDGE_VIEWS["implicit"]``: characters and Kiwi
morphemes), reading a comment, or a care-call turn as the pair (the turn before, the turn)
as ``bench/judges.py``'s TF-IDF row does. Its vocabulary and IDF weights are fitted once
per seed on the pool's texts (no labels: the app, too, holds every item's text before any
label), so that each refit, every ``--step`` labels, is its logistic regression alone (the
package's settings, ``sklearn.clone`` of the model's own) and Kiwi never runs again; every
order gets the same judge. Each seed starts every order from the same ``--start`` random
labels (both classes present), adds ``--step`` labels at a time up to ``--max-labels``
(default 1,500 of BEEP!'s 7,896; care-call's pool of ~300 is used whole) and scores
macro-F1 on the held-out part after every refit. Orders:

1. **random**: uniformly random unlabelled items (the baseline);
2. **queue**: the disagreement queue of ``web/queue_order``, built as ``--queue`` says:

   - ``panel`` (the default: the best measured, docs/benchmarks.md): a panel votes on
     every unlabelled pool item: the judge, and two more refitted TF-IDF judges that see
     one view each (characters only, morphemes only), and one fixed judge: for BEEP! the
     profanity lexicon (``lexicon/korean_bad_words.txt`` through
     ``kda_judges.read_lexicon``, offensive when a word of it appears, as the implicit
     recipe matches it), for care-call ``rules:carecall``. Score: ``vote_entropy`` of the
     four votes, ties by the judge's ``uncertainty``;
   - ``committee``: query by committee the classic way: ``COMMITTEE_SIZE`` copies of the
     judge refitted on bootstrap resamples of the labels so far (the same features),
     ``vote_entropy`` of their votes, ties by the ``uncertainty`` of their mean
     probability;
   - ``panel-spread``: ``panel``, then each batch spread out (``spread_batch``): a ranked
     place skips an item whose cosine (the judge's features) to an item already in the
     batch exceeds ``SPREAD``, against near-duplicates in one batch;

   served by ``ranked_queue`` with the issue's random share of 0.2 (``panel-spread``
   keeps its random items and their places);
3. **uncertainty**: the judge's ``uncertainty`` alone, through ``ranked_queue`` with the
   same random share of 0.2, so that it differs from the queue by its score only.

BEEP!'s pool and held-out part are the same for every seed (its features are computed
once); a seed changes the start labels and the random draws, and for care-call the split.

Measured per seed and set: the macro-F1 of the judge fitted on all pool labels, and per
order the labels needed to first reach 95% of it (an order that never does counts as the
last label count it reached, ``reached: false``). Targets (#35): the queue needs at most
2/3 of the labels random order needs, on both sets (mean labels over seeds, queue /
random). The plot (``--plot``, PNG) shows macro-F1 against labels, the mean over seeds.
The first label count to reach 95% moves by hundreds of labels between seeds on BEEP!
(its curves are flat there), hence 10 seeds and a cap of 3,000 by default.

The regressions run on one thread (``threadpool_limits``): on a shared machine BLAS's
threads made a refit tens of times slower.

Usage: python bench/active_labeling.py [--seeds 0,1,...,9] [--max-labels 3000]
       [--step 25] [--start 20] [--queue panel|committee|panel-spread]
       [--plot runs/active_labeling.png] [--data ../shared/data]
       [--examples-dir examples/carecall] [--held-out 0.3] [--sets beep,carecall]
The last line printed is a JSON object with every number and the ``targets``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from scipy.special import expit
from sklearn.base import clone
from threadpoolctl import threadpool_limits

from rolecall.eval.offensiveness import beep_examples
from rolecall.jsonl import read_jsonl
from rolecall.judge.out_of_bounds import IN_BOUNDS, OUT_OF_BOUNDS, Item
from rolecall.judge.rules import load_rule_judge
from rolecall.judge.written_out_of_bounds import out_of_bounds_items, read_out_of_bounds
from rolecall.records import Dialogue
from rolecall.spec import load_role_spec
from rolecall.train.baselines import TfidfModel, TfidfSettings
from rolecall.train.kda_judges import JUDGE_VIEWS, label_metrics, read_lexicon
from rolecall.web.queue_order import (
    RANDOM,
    RANDOM_SHARE,
    RANKED,
    ranked_queue,
    uncertainty,
    vote_entropy,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
ORDERS = ("random", "queue", "uncertainty")
REACH = 0.95  # of the all-labels macro-F1
MAX_RATIO = 0.667  # the queue's labels / random's (2/3)
VIEWS = JUDGE_VIEWS["implicit"]
COMMITTEE = (["chars"], ["morphemes"])  # the panel's other refitted judges, one view each
QUEUES = ("panel", "committee", "panel-spread")  # how the queue order is built; first: default
COMMITTEE_SIZE = 5  # --queue committee: bootstrap copies of the judge
SPREAD = 0.4  # --queue panel-spread: the most cosine between two items of one batch


@dataclass
class LabelSet:
    """One set's items as the judges read them: ``pool`` / ``held`` feature matrices per
    judge (``"judge"`` and the committee's), gold labels, the fixed judge's pool votes."""

    name: str
    title: str
    labels: list[str]  # [positive, other]: "positive" is what P(positive) is of
    pool: dict[str, Any]
    held: dict[str, Any]
    pool_gold: np.ndarray  # label indices
    held_gold: list[str]
    fixed: list[str]  # the fixed judge's label per pool item
    regression: Any  # the all-labels judge's regression: its settings are cloned
    all_labels_f1: float


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2,3,4,5,6,7,8,9", help="comma-separated")
    parser.add_argument("--max-labels", type=int, default=3000, help="the most labels per run")
    parser.add_argument("--step", type=int, default=25, help="labels between refits")
    parser.add_argument("--start", type=int, default=20, help="random labels to begin with")
    parser.add_argument("--plot", type=Path, default=ROOT / "runs" / "active_labeling.png")
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--examples-dir", type=Path, default=ROOT / "examples" / "carecall")
    parser.add_argument("--held-out", type=float, default=0.3, help="care-call dialogues")
    parser.add_argument("--sets", default="beep,carecall", help="comma-separated")
    parser.add_argument("--queue", choices=QUEUES, default=QUEUES[0], help="the queue's order")
    args = parser.parse_args(argv)
    args.seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    args.sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    if args.start < 2 or args.step < 1 or args.max_labels < args.start:
        parser.error("need --start >= 2, --step >= 1 and --max-labels >= --start")
    if not set(args.sets) <= {"beep", "carecall"} or not args.seeds:
        parser.error("--sets takes beep and/or carecall; --seeds one seed or more")
    return args


# ---- the sets -------------------------------------------------------------------------


def label_set(name, title, labels, pool, held, fixed, seed, pair=False) -> LabelSet:
    """Fit the judge's and the committee's vocabularies on the pool (the judge on all pool
    labels too: the reference) and compute every matrix once."""
    inputs = [x for x, _ in pool]
    gold = np.array([labels.index(y) for _, y in pool])
    pool_x, held_x, reference = {}, {}, None
    for key, views in (("judge", VIEWS), *((v[0], v) for v in COMMITTEE)):
        model = TfidfModel(
            TfidfSettings(task=name, labels=labels, pair=pair, views=list(views), seed=seed)
        )
        model.fit(inputs, [y for _, y in pool])
        # the package's features of the fitted vocabulary, once: a refit is then the
        # regression alone (subtle: _matrix is TfidfModel's own reading of its inputs)
        pool_x[key] = model._matrix(inputs)
        held_x[key] = model._matrix([x for x, _ in held])
        if key == "judge":
            reference = model
    held_gold = [y for _, y in held]
    all_f1 = label_metrics(held_gold, reference.predict([x for x, _ in held]))["macro_f1"]
    return LabelSet(
        name, title, labels, pool_x, held_x, gold, held_gold, fixed, reference.regression, all_f1
    )


def beep_set(data_dir: Path, seed: int) -> LabelSet:
    def read(path: Path) -> list[tuple[str, str]]:
        rows = beep_examples(path)
        return [(e.response, "offensive" if e.label == "negative" else "none") for e in rows]

    pool = read(data_dir / "slang" / "beep_labeled_train.tsv")
    held = read(data_dir / "eval" / "beep_labeled_dev.tsv")
    words = read_lexicon(data_dir / "lexicon" / "korean_bad_words.txt")
    lexicon = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))
    fixed = ["offensive" if lexicon.search(text) else "none" for text, _ in pool]
    title = f"BEEP! offensive vs none: pool BEEP! train ({len(pool)}), held out dev ({len(held)})"
    return label_set("beep", title, ["offensive", "none"], pool, held, fixed, seed)


def carecall_items(examples: Path) -> tuple[list[Item], list[str]]:
    """The 244 in-bounds and 183 written out-of-bounds turns, as ``bench/judges.py``."""
    spec = load_role_spec(examples / "spec.yaml")
    dialogues = list(read_jsonl(examples / "dialogues.jsonl", Dialogue))
    items = [
        Item(d.id, i, tuple(d.turns[:i]), turn.text)
        for d in dialogues
        for i, turn in enumerate(d.turns)
        if turn.role == "system" and i > 0
    ]
    gold = [IN_BOUNDS] * len(items)
    for item, _ in out_of_bounds_items(
        read_out_of_bounds(examples / "out_of_bounds.jsonl", dialogues, spec)
    ):
        items.append(item)
        gold.append(OUT_OF_BOUNDS)
    return items, gold


def carecall_set(examples: Path, held_out: float, seed: int) -> LabelSet:
    items, gold = carecall_items(examples)
    dialogue = [item.dialogue_id.split(":")[0] for item in items]  # a written turn: D:ID
    names = sorted(set(dialogue))
    random.Random(seed).shuffle(names)
    out = set(names[: round(len(names) * held_out)])
    pool = [i for i in range(len(items)) if dialogue[i] not in out]
    held = [i for i in range(len(items)) if dialogue[i] in out]
    rules = load_rule_judge("carecall", "out_of_bounds", load_role_spec(examples / "spec.yaml"))
    fixed = [v.label for v in rules.verdicts([items[i] for i in pool])]

    def rows(index: list[int]) -> list[tuple[tuple[str, str], str]]:
        return [((items[i].history[-1].text, items[i].response), gold[i]) for i in index]

    title = (
        f"care-call turns, out of bounds vs in: pool {len(pool)} turns of "
        f"{len(names) - len(out)} dialogues, held out {len(held)} of {len(out)}"
    )
    labels = [OUT_OF_BOUNDS, IN_BOUNDS]
    return label_set("carecall", title, labels, rows(pool), rows(held), fixed, seed, pair=True)


# ---- one run of one order ---------------------------------------------------------------


def label_counts(pool_size: int, args: argparse.Namespace) -> list[int]:
    """``start``, then every ``step`` more, and the last count (the pool or the cap)."""
    limit = min(args.max_labels, pool_size)
    counts = list(range(args.start, limit + 1, args.step))
    return counts if counts[-1] == limit else [*counts, limit]


def start_labels(gold: np.ndarray, size: int, seed: int) -> list[int]:
    """``size`` random pool items with both classes among them (the last draw replaced by
    an item of a missing class)."""
    rng = random.Random(seed)
    chosen = rng.sample(range(len(gold)), size)
    for label in (0, 1):
        if not any(gold[i] == label for i in chosen):
            chosen[-1 if label == 0 else 0] = rng.choice(np.flatnonzero(gold == label).tolist())
    return chosen


@dataclass
class Refit:
    """A judge's regression refitted on the labels so far, as one weight per feature."""

    weights: np.ndarray
    intercept: float

    def first_share(self, matrix) -> np.ndarray:
        """P(the first label, ``labels[0]``) per row: the regression's P(index 1) is
        expit of the decision."""
        return 1.0 - expit(matrix @ self.weights + self.intercept)


def refit(
    label_set: LabelSet, key: str, labelled: list[int], sample_weight: np.ndarray | None = None
) -> Refit:
    """The package's regression on the labelled rows (``sample_weight``: one per row, as
    sklearn's). Fitted on the columns those rows use: under L2 the others keep
    weight 0 (their gradient is 0 from the start), so the model is the same and the fit
    several times faster."""
    rows = label_set.pool[key][np.array(labelled)]
    gold = label_set.pool_gold[np.array(labelled)]
    if set(gold.tolist()) != {0, 1}:
        raise ValueError("a refit needs labels of both classes")
    columns = np.unique(rows.indices)
    regression = clone(label_set.regression).fit(
        rows[:, columns], gold, sample_weight=sample_weight
    )
    weights = np.zeros(rows.shape[1])
    weights[columns] = regression.coef_[0]
    return Refit(weights, float(regression.intercept_[0]))


def bootstrap_judges(
    label_set: LabelSet, labelled: list[int], seed: int, size: int = COMMITTEE_SIZE
) -> list[Refit]:
    """``size`` copies of the judge, each refitted on a bootstrap resample of the labelled
    items (as many draws as labels, with replacement; a draw that misses a class is drawn
    again), an item drawn k times weighing k."""
    rng = np.random.default_rng(seed)
    chosen = np.array(labelled)
    gold = label_set.pool_gold[chosen]
    members = []
    while len(members) < size:
        draw = rng.integers(0, len(chosen), len(chosen))
        if len(set(gold[draw].tolist())) < 2:
            continue
        times = np.bincount(draw, minlength=len(chosen))
        kept = np.flatnonzero(times)
        members.append(refit(label_set, "judge", chosen[kept].tolist(), times[kept]))
    return members


def spread_batch(
    queue: list[tuple[int, str]], rows, take: int, threshold: float = SPREAD
) -> list[tuple[int, str]]:
    """The first ``take`` entries of ``queue`` (``ranked_queue``'s, over ``rows``' items)
    with near-duplicates spread out: a random entry keeps its place and item; a ranked
    place takes the best-ranked item left whose cosine (of ``rows``) to every item already
    in the batch is at most ``threshold``, or the best-ranked left where none is."""
    norms = np.sqrt(np.asarray(rows.multiply(rows).sum(axis=1)).ravel())
    unit = sparse.csr_matrix(sparse.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ rows)
    left = [item for item, tag in queue if tag == RANKED]  # best first
    batch: list[tuple[int, str]] = []
    for item, tag in queue[:take]:
        if tag == RANDOM:
            batch.append((item, tag))
            continue
        taken = [i for i, _ in batch]
        apart = (
            n
            for n, candidate in enumerate(left)
            if not taken or (unit[taken] @ unit[candidate].T).max() <= threshold
        )
        batch.append((left.pop(next(apart, 0)), RANKED))
    return batch


def next_labels(
    label_set: LabelSet,
    order: str,
    judge: Refit,
    labelled: list[int],
    take: int,
    seed: int,
    queue: str = QUEUES[0],
) -> list[int]:
    """The ``take`` items the order serves next, from the unlabelled pool (``queue``: how
    the queue order is built, one of ``QUEUES``)."""
    seen = set(labelled)
    left = [i for i in range(len(label_set.pool_gold)) if i not in seen]
    if order == "random":
        served = ranked_queue([0.0] * len(left), random_share=1.0, seed=seed)
        return [left[i] for i, _ in served[:take]]
    rows = label_set.pool["judge"][left]
    p = judge.first_share(rows)
    doubt = uncertainty(p.tolist())
    if order == "uncertainty":
        served = ranked_queue(doubt, random_share=RANDOM_SHARE, seed=seed)
        return [left[i] for i, _ in served[:take]]
    names = label_set.labels
    if queue == "committee":
        shares = [m.first_share(rows) for m in bootstrap_judges(label_set, labelled, seed)]
        votes = [[names[0] if q >= 0.5 else names[1] for q in item] for item in zip(*shares)]
        mean = np.clip(np.mean(shares, axis=0), 0.0, 1.0)
        served = ranked_queue(vote_entropy(votes), RANDOM_SHARE, seed, uncertainty(mean.tolist()))
        return [left[i] for i, _ in served[:take]]
    votes = [[names[0] if q >= 0.5 else names[1]] for q in p]
    for views in COMMITTEE:
        member = refit(label_set, views[0], labelled)
        for vote, q in zip(votes, member.first_share(label_set.pool[views[0]][left])):
            vote.append(names[0] if q >= 0.5 else names[1])
    for vote, i in zip(votes, left):
        vote.append(label_set.fixed[i])
    served = ranked_queue(vote_entropy(votes), RANDOM_SHARE, seed=seed, tiebreak=doubt)
    if queue == "panel-spread":
        served = spread_batch(served, rows, take)
    return [left[i] for i, _ in served[:take]]


def run_order(
    label_set: LabelSet, order: str, counts: list[int], seed: int, queue: str = QUEUES[0]
) -> list[float]:
    """Macro-F1 on the held-out part after the refit at each label count."""
    labelled = start_labels(label_set.pool_gold, counts[0], seed)
    curve = []
    for step, count in enumerate(counts):
        judge = refit(label_set, "judge", labelled)
        first = judge.first_share(label_set.held["judge"]) >= 0.5  # sklearn: decision <= 0
        predicted = [label_set.labels[0 if y else 1] for y in first]
        curve.append(label_metrics(label_set.held_gold, predicted)["macro_f1"])
        if step + 1 < len(counts):
            take = counts[step + 1] - count
            draw = seed * 10_000 + step
            labelled += next_labels(label_set, order, judge, labelled, take, draw, queue)
    return curve


def labels_needed(counts: list[int], curve: list[float], goal: float) -> tuple[int, bool]:
    """The first label count whose macro-F1 reaches ``goal``; else the last count, False."""
    for count, f1 in zip(counts, curve):
        if f1 >= goal:
            return count, True
    return counts[-1], False


# ---- a set over the seeds ----------------------------------------------------------------


def measure_set(name: str, args: argparse.Namespace) -> dict:
    runs, beep = [], None
    for seed in args.seeds:
        began = time.perf_counter()
        if name == "beep":
            # the same pool and held-out part for every seed: features and the all-labels
            # judge once (its regression, lbfgs, does not use the seed)
            found = beep = beep or beep_set(args.data, args.seeds[0])
        else:
            found = carecall_set(args.examples_dir, args.held_out, seed)
        counts = label_counts(len(found.pool_gold), args)
        goal = REACH * found.all_labels_f1
        curves = {order: run_order(found, order, counts, seed, args.queue) for order in ORDERS}
        needed = {order: labels_needed(counts, curves[order], goal) for order in ORDERS}
        print(
            f"{name} seed {seed}: all labels {found.all_labels_f1:.3f}; labels to "
            + ", ".join(f"{o} {n}{'' if ok else ' (not reached)'}" for o, (n, ok) in needed.items())
            + f" ({time.perf_counter() - began:.0f} s)",
            flush=True,
        )
        runs.append((found, counts, curves, needed))
    return summarise(runs)


def summarise(runs: list[tuple]) -> dict:
    """Per order: labels needed (mean, per seed, reached), the mean curve over the label
    counts every seed has."""
    first = runs[0][0]
    common = sorted(set.intersection(*(set(counts) for _, counts, _, _ in runs)))
    orders = {}
    for order in ORDERS:
        needed = [n[order] for _, _, _, n in runs]
        curve = [
            round(statistics.mean(c[order][cs.index(count)] for _, cs, c, _ in runs), 4)
            for count in common
        ]
        orders[order] = {
            "labels_needed": round(statistics.mean(n for n, _ in needed), 1),
            "labels_needed_per_seed": [n for n, _ in needed],
            "reached": all(ok for _, ok in needed),
            "reached_per_seed": [ok for _, ok in needed],
            "macro_f1": curve,
        }
    all_f1 = [found.all_labels_f1 for found, *_ in runs]
    return {
        "title": first.title,
        "pool": [len(found.pool_gold) for found, *_ in runs],
        "held_out": [len(found.held_gold) for found, *_ in runs],
        "label_counts": [counts for _, counts, _, _ in runs],
        "curve_label_counts": common,  # of every order's mean macro_f1
        "all_labels_macro_f1": round(statistics.mean(all_f1), 4),
        "all_labels_macro_f1_per_seed": all_f1,
        "goal_macro_f1": round(REACH * statistics.mean(all_f1), 4),
        "orders": orders,
    }


# ---- printing, the plot, the targets -------------------------------------------------------


def print_table(name: str, result: dict, marks: Sequence[int] = (20, 95, 195, 495, 995)) -> None:
    print(f"\n== {name}: {result['title']}")
    print(
        f"all labels: macro-F1 {result['all_labels_macro_f1']:.3f} (mean over seeds); "
        f"goal (95%): {result['goal_macro_f1']:.3f}"
    )
    counts = result["curve_label_counts"]
    shown = sorted({c for c in counts if c in marks} | {counts[-1]})
    header = f"{'order':14s}{'labels needed':>16s}"
    print(header + "".join(f"{'F1@' + str(c):>10s}" for c in shown) + "  labels needed per seed")
    for order, found in result["orders"].items():
        needed = f"{found['labels_needed']:.1f}{'' if found['reached'] else '*'}"
        seeds = ",".join(str(n) for n in found["labels_needed_per_seed"])
        cells = "".join(f"{found['macro_f1'][counts.index(c)]:>10.3f}" for c in shown)
        print(f"{order:14s}{needed:>16s}{cells}  {seeds}")
    if not all(found["reached"] for found in result["orders"].values()):
        print("* not reached within the cap in every seed: counted as the last label count")


def save_plot(results: dict[str, dict], path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6 * len(results), 4.5), dpi=100)
    FigureCanvasAgg(figure)
    for n, (name, result) in enumerate(results.items(), 1):
        axes = figure.add_subplot(1, len(results), n)
        for order, found in result["orders"].items():
            axes.plot(result["curve_label_counts"], found["macro_f1"], label=order)
        axes.axhline(result["goal_macro_f1"], linestyle="--", color="grey", label="95% of all")
        axes.set(xlabel="labels", ylabel="held-out macro-F1 (mean over seeds)", title=name)
        axes.legend(loc="lower right")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return path


def targets(results: dict[str, dict]) -> dict:
    goals = {}
    for name, result in results.items():
        queue, rand = result["orders"]["queue"], result["orders"]["random"]
        ratio = round(queue["labels_needed"] / rand["labels_needed"], 3)
        goal = {"value": ratio, "target": f"<= {MAX_RATIO}", "met": ratio <= MAX_RATIO}
        goal |= {"queue_reached": queue["reached"], "random_reached": rand["reached"]}
        if not (queue["reached"] and rand["reached"]):
            goal["note"] = "an order did not reach 95% in every seed: counted as the cap"
        goals[f"{name}_queue_over_random_labels"] = goal
    return goals


def main(argv: Sequence[str] | None = None) -> dict:
    args = arguments(argv)
    began = time.perf_counter()
    print(
        f"data: {args.data}; examples: {args.examples_dir}; seeds {args.seeds}; "
        f"queue: {args.queue}",
        flush=True,
    )
    with threadpool_limits(1):
        results = {name: measure_set(name, args) for name in args.sets}
    for name, result in results.items():
        print_table(name, result)
    plot = save_plot(results, args.plot)
    seconds = round(time.perf_counter() - began)
    print(f"\nplot: {plot}; whole run {seconds} s")
    summary = {
        "bench": "active_labeling",
        "data": str(args.data),
        "seeds": args.seeds,
        "start": args.start,
        "step": args.step,
        "max_labels": args.max_labels,
        "random_share": RANDOM_SHARE,
        "queue": args.queue,
        "judge_views": VIEWS,
        "plot": str(plot),
        "seconds": seconds,
        "sets": results,
        "targets": targets(results),
    }
    print(json.dumps(summary, ensure_ascii=False))
    return summary


if __name__ == "__main__":
    main()
