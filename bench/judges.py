"""Every judge kind on the same gold-labelled items, in one run (issue #16 item 4).

Four sets, each a table of accuracy, macro-F1 and seconds per 1,000 items per judge:

1. **beep**: BEEP! dev (``eval/beep_labeled_dev.tsv``), offensive (``hate`` offensive or
   hate) vs none. The trained judge is a TF-IDF model over the implicit judge's
   ``kda_judges.JUDGE_VIEWS`` (characters + Kiwi morphemes) trained on BEEP! train
   (``slang/beep_labeled_train.tsv``) in this run; the baseline is the same model over
   characters only (``chars``), same data. For information: the K/DA implicit judge
   (implicit or explicit -> offensive), and the trained judge with the sentence encoder's
   vectors beside (``+ sentence``: the view the one-sentence judges leave out).
2. **kda_implicit**: the held-out K/DA implicit sentences vs their neutral sentences (the
   ``kda`` test set of ``kda_judges.implicit_data``). Scored as binary implicit vs none: a
   judge's ``explicit`` counts as ``implicit`` (offensive either way; the gold set has no
   explicit sentences, and a three-label F1 would reward nothing the set can measure).
3. **kda_consistency**: the held-out true K/DA pairs vs mismatched pairs (the ``kda`` test
   set of ``kda_judges.consistency_data``), maintained vs shifted. The trained judge reads
   characters, morphemes, the sentence encoder's vectors and the content morphemes added
   and dropped (the consistency judge's views); for information, the same without the
   content view (the judge before #32) and with the n-grams only.
3b. **kda_consistency_hard**: the same judges on the recipe's ``hard`` set: the held-out
   true pairs with their rewrite respaced (maintained) and near-copies of the held-out
   neutral sentences, respaced, repunctuated and reworded (shifted; ``train/near_copies``).
4. **out_of_bounds**: the system turns of ``examples/carecall/dialogues.jsonl`` after the
   opening one (gold in-bounds; the hand-written set has no openings) and the hand-written
   turns of ``out_of_bounds.jsonl`` (gold out-of-bounds, with their spec category):
   ``rules:carecall``; the character TF-IDF baseline over (the turn before, the turn),
   trained by 2-fold cross-validation grouped by dialogue (each half predicted by the model
   of the other half); per-category recall of the out-of-bounds turns beside.

The embedded LLM (``--model``, default ``llamacpp:embedded``) judges with the project's
LLM judges in score mode: the implicit filter (sets 1 and 2; it reads only the candidate,
so each text is a ``Pair`` whose candidate is the text), the consistency filter (3), the
out-of-bounds judge (4); each not calibrated and calibrated on content-free inputs
(``pair_filters.calibrate``; the out-of-bounds judge has no calibrate option, so the bench
divides out its label prior on content-free turns the same way, ``judge.labels``). The
two readings share one pass of scoring calls. The LLM is slow, so it judges
``--llm-limit`` items per set (stratified by gold label, seed ``--seed``), and every other
judge is reported on those same items too; calls go through the project's LLM cache
(``ROLECALL_CACHE``), so a re-run asks nothing again (its speed then reads "cached").

Speed: trained judges and the baseline are timed predicting the whole set after training
(features computed inside ``predict``, Kiwi loaded; median of 3), the rules the same; the
LLM from the time of its uncached calls.

Targets (#16): on every set, the trained judge (the rules for out_of_bounds) at least 15
macro-F1 points above the better of the two LLM readings on the LLM's items, and above the
TF-IDF baseline on the whole set (#32: on the hard set by 0.05 or more); at least 10,000
items per minute for the BEEP, implicit and consistency judges and the rules. The last line
is one JSON object with ``targets``.

Usage: python bench/judges.py [--data-dir ../shared/data] [--llm-limit 200] [--skip-llm]
       [--oob-llm-limit N] [--model llamacpp:embedded] [--examples-dir examples/carecall]
       [--seed 0] [--no-progress]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rolecall.eval.offensiveness import beep_examples
from rolecall.jsonl import read_jsonl
from rolecall.judge.out_of_bounds import IN_BOUNDS, OUT_OF_BOUNDS, Item
from rolecall.judge.rules import load_rule_judge
from rolecall.judge.written_out_of_bounds import out_of_bounds_items, read_out_of_bounds
from rolecall.llm.opening import open_llm
from rolecall.records import Dialogue
from rolecall.spec import load_role_spec
from rolecall.train.baselines import (
    BASELINE_VIEWS,
    CONTENT,
    E5,
    NOT_NGRAMS,
    SENTENCE,
    TfidfModel,
    TfidfSettings,
)
from rolecall.train.kda_judges import JUDGE_VIEWS, consistency_data, implicit_data, label_metrics
from rolecall.train.near_copies import CLOSING

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ is not a package
from judges_llm import Row, out_of_bounds_rows, pair_filter_rows  # noqa: E402
from judges_tables import print_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
MIN_GAIN_OVER_LLM, MIN_ITEMS_PER_MIN = 0.15, 10_000
MIN_GAIN_OVER_TFIDF = {"kda_consistency_hard": 0.05}  # the others: > 0
# the judges whose speed has a target, by the set whose items time them
SPEED_TARGETS = {
    "beep_judge": ("beep", "trained"),
    "implicit_judge": ("kda_implicit", "trained"),
    "consistency_judge": ("kda_consistency", "trained"),
    "rules": ("out_of_bounds", "rules"),
}


@dataclass
class JudgeSet:
    name: str
    title: str
    gold: list[str]
    inputs: list[Any]
    trained: str  # the key of the judge the targets compare
    rows: dict[str, Row] = field(default_factory=dict)  # on every item
    subset: list[int] = field(default_factory=list)  # the LLM's items
    llm_rows: dict[str, Row] = field(default_factory=dict)  # on the subset only
    kinds: list[str] | None = None  # kda_consistency_hard: each item's edit
    categories: list[str | None] | None = None  # out_of_bounds: each gold-out turn's
    spec: Any = None  # out_of_bounds: the role spec


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--examples-dir", type=Path, default=ROOT / "examples" / "carecall")
    parser.add_argument("--model", default="llamacpp:embedded", help="the LLM judge's model")
    parser.add_argument(
        "--llm-limit", type=int, default=200, help="items per set the LLM judges (0: all)"
    )
    parser.add_argument(
        "--oob-llm-limit", type=int, help="for out_of_bounds (long prompts): default --llm-limit"
    )
    parser.add_argument("--skip-llm", action="store_true", help="no LLM judge at all")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def stratified(gold: Sequence[str], limit: int, seed: int) -> list[int]:
    """About ``limit`` indices, each label's share kept (largest remainder, one at least),
    drawn with ``seed``; a larger limit takes a superset, so the LLM cache still serves."""
    if limit <= 0 or limit >= len(gold):
        return list(range(len(gold)))
    rng = random.Random(seed)
    by_label: dict[str, list[int]] = {}
    for index, label in enumerate(gold):
        by_label.setdefault(label, []).append(index)
    for label in sorted(by_label):
        rng.shuffle(by_label[label])
    exact = {label: limit * len(rows) / len(gold) for label, rows in by_label.items()}
    quota = {label: max(1, int(share)) for label, share in exact.items()}
    for label in sorted(exact, key=lambda lab: exact[lab] - int(exact[lab]), reverse=True):
        if sum(quota.values()) >= limit:
            break
        quota[label] += 1
    return sorted(i for label, rows in by_label.items() for i in rows[: quota[label]])


def timed(predict: Callable[[list[Any]], list[str]], inputs: list[Any], repeats: int = 3):
    """(predictions, median seconds per item) of ``predict`` over all ``inputs``; the e5
    view's memo is dropped before each pass, so that every pass encodes its texts."""
    from rolecall.retrieval.e5_vectors import shared_e5

    times, predicted = [], []
    for _ in range(repeats):
        if shared_e5.cache_info().currsize:  # loaded: drop its memo
            shared_e5().forget()
        started = time.perf_counter()
        predicted = predict(inputs)
        times.append(time.perf_counter() - started)
    return predicted, statistics.median(times) / max(len(inputs), 1)


def fit_tfidf(task: str, labels: list[str], items: list, views: list, seed: int, pair=False):
    model = TfidfModel(
        TfidfSettings(task=task, labels=labels, pair=pair, views=list(views), seed=seed)
    )
    model.fit([x for x, _ in items], [y for _, y in items])
    return model


def mapped(model: TfidfModel, mapping: dict[str, str]) -> Callable[[list[Any]], list[str]]:
    return lambda inputs: [mapping.get(y, y) for y in model.predict(inputs)]


# ---- the sets without the LLM ---------------------------------------------------------


def beep_set(data_dir: Path, implicit_judge: TfidfModel, seed: int) -> JudgeSet:
    def read(path: Path) -> list[tuple[str, str]]:
        rows = beep_examples(path)
        return [(e.response, "offensive" if e.label == "negative" else "none") for e in rows]

    train = read(data_dir / "slang" / "beep_labeled_train.tsv")
    dev = read(data_dir / "eval" / "beep_labeled_dev.tsv")
    title = f"BEEP! dev, offensive vs none (trained on BEEP! train, {len(train)} comments)"
    out = JudgeSet("beep", title, [y for _, y in dev], [x for x, _ in dev], "trained")
    views = JUDGE_VIEWS["implicit"]
    for key, views in (
        ("trained", views),
        ("tfidf", BASELINE_VIEWS),
        (SENTENCE, [*views, SENTENCE]),
        (E5, [*views, E5]),
    ):
        model = fit_tfidf("offensive", ["offensive", "none"], train, views, seed)
        out.rows[key] = Row(*timed(model.predict, out.inputs))
    offensive = {"implicit": "offensive", "explicit": "offensive"}
    out.rows["kda_implicit"] = Row(*timed(mapped(implicit_judge, offensive), out.inputs))
    return out


def kda_implicit_set(data_dir: Path, seed: int) -> tuple[JudgeSet, TfidfModel]:
    data = implicit_data(data_dir, seed=seed)
    test = data.test["kda"]
    title = f"K/DA held-out implicit vs neutral (trained on the recipe, {len(data.train)})"
    out = JudgeSet("kda_implicit", title, [y for _, y in test], [x for x, _ in test], "trained")
    judge, views = None, JUDGE_VIEWS["implicit"]
    for key, views in (
        ("trained", views),
        ("tfidf", BASELINE_VIEWS),
        (SENTENCE, [*views, SENTENCE]),
        (E5, [*views, E5]),
    ):
        model = fit_tfidf("implicit", data.labels, data.train, views, seed)
        out.rows[key] = Row(*timed(mapped(model, {"explicit": "implicit"}), out.inputs))
        judge = judge or model
    return out, judge


def kda_consistency_sets(data_dir: Path, seed: int) -> dict[str, JudgeSet]:
    """The held-out true vs mismatched pairs, and the hard set; the same models on both."""
    data = consistency_data(data_dir, seed=seed)
    trained = f"trained on the recipe, {len(data.train)}"
    titles = {
        "kda": f"K/DA held-out true vs mismatched pairs ({trained})",
        "hard": f"K/DA held-out rewrites respaced vs near-copies and rewordings ({trained})",
    }
    out = {}
    for part, title in titles.items():
        name = "kda_consistency" + ("" if part == "kda" else f"_{part}")
        test = data.test[part]
        out[part] = JudgeSet(name, title, [y for _, y in test], [x for x, _ in test], "trained")
    out["hard"].kinds = [
        "respaced rewrite" if y == "maintained" else edit_kind(a, b)  # kda_judges.hard_items
        for (a, b), y in data.test["hard"]
    ]
    views = JUDGE_VIEWS["consistency"]
    ngrams = [v for v in views if v not in NOT_NGRAMS]
    before = [v for v in views if v != CONTENT]
    for key, views in (
        ("trained", views),
        ("tfidf", BASELINE_VIEWS),
        ("ngrams", ngrams),
        ("no_content", before),
        (E5, [*views, E5]),
    ):
        model = fit_tfidf("consistency", data.labels, data.train, views, seed, pair=True)
        for judge_set in out.values():
            judge_set.rows[key] = Row(*timed(model.predict, judge_set.inputs))
    return {judge_set.name: judge_set for judge_set in out.values()}


def out_of_bounds_set(examples: Path, seed: int) -> JudgeSet:
    spec = load_role_spec(examples / "spec.yaml")
    dialogues = list(read_jsonl(examples / "dialogues.jsonl", Dialogue))
    items: list[Item] = [
        Item(d.id, i, tuple(d.turns[:i]), turn.text)
        for d in dialogues
        for i, turn in enumerate(d.turns)
        if turn.role == "system" and i > 0
    ]
    categories: list[str | None] = [None] * len(items)
    for item, category in out_of_bounds_items(
        read_out_of_bounds(examples / "out_of_bounds.jsonl", dialogues, spec)
    ):
        items.append(item)
        categories.append(category)
    gold = [IN_BOUNDS if c is None else OUT_OF_BOUNDS for c in categories]
    title = (
        f"out of bounds: {gold.count(IN_BOUNDS)} in-bounds system turns of "
        f"{len(dialogues)} dialogues, {gold.count(OUT_OF_BOUNDS)} hand-written out-of-bounds"
    )
    out = JudgeSet("out_of_bounds", title, gold, items, "rules", categories=categories, spec=spec)
    rules = load_rule_judge("carecall", "out_of_bounds", spec)
    rules.verdicts(items[:5])  # Kiwi loaded before the clock starts
    out.rows["rules"] = Row(*timed(lambda xs: [v.label for v in rules.verdicts(xs)], items))
    out.rows["tfidf"] = cross_validated_tfidf(items, gold, seed)
    return out


def cross_validated_tfidf(items: list[Item], gold: list[str], seed: int) -> Row:
    """Character TF-IDF over (the turn before, the turn), 2 folds by dialogue: each half
    of the dialogues is predicted by the model trained on the other half."""
    dialogue = [item.dialogue_id.split(":")[0] for item in items]  # a written turn: D:ID
    names = sorted(set(dialogue))
    random.Random(seed).shuffle(names)
    first = set(names[: len(names) // 2])
    pairs = [(item.history[-1].text, item.response) for item in items]
    predicted, seconds = [""] * len(items), 0.0
    for fold in (True, False):
        train = [(pairs[i], gold[i]) for i in range(len(items)) if (dialogue[i] in first) != fold]
        test = [i for i in range(len(items)) if (dialogue[i] in first) == fold]
        model = fit_tfidf(
            "out_of_bounds", [IN_BOUNDS, OUT_OF_BOUNDS], train, BASELINE_VIEWS, seed, True
        )
        labels, per_item = timed(model.predict, [pairs[i] for i in test])
        seconds += per_item * len(test)
        for i, label in zip(test, labels):
            predicted[i] = label
    return Row(predicted, seconds / len(items), "2-fold by dialogue")


def oob_limit(args: argparse.Namespace) -> int:
    return args.llm_limit if args.oob_llm_limit is None else args.oob_llm_limit


def add_llm(sets: dict[str, JudgeSet], args: argparse.Namespace) -> str:
    llm = open_llm(args.model)  # the configured cache, as the CLI opens it
    progress = not args.no_progress
    for judge_set in sets.values():
        oob = judge_set.name == "out_of_bounds"
        limit = oob_limit(args) if oob else args.llm_limit
        judge_set.subset = stratified(judge_set.gold, limit, args.seed)
        inputs = [judge_set.inputs[i] for i in judge_set.subset]
        began = time.perf_counter()
        print(f"LLM on {judge_set.name}: {len(inputs)} items", flush=True)
        if oob:
            judge_set.llm_rows = out_of_bounds_rows(llm, judge_set.spec, inputs, progress)
        else:
            consistency = judge_set.name.startswith("kda_consistency")
            name = "consistency" if consistency else "implicit"
            mapping = {
                "beep": {"implicit": "offensive", "explicit": "offensive"},
                "kda_implicit": {"explicit": "implicit"},
            }.get(judge_set.name, {})
            judge_set.llm_rows = pair_filter_rows(llm, name, inputs, mapping, progress)
        print(f"  done in {time.perf_counter() - began:.0f} s", flush=True)
    stats = llm.stats
    return (
        f"{llm.model_id}: {stats.calls} calls, {stats.cache_hits} cache hits, {stats.seconds:.0f} s"
    )


# ---- measuring and printing ------------------------------------------------------------


def measured(judge_set: JudgeSet, row: Row, index: Sequence[int] | None = None) -> dict:
    """Metrics of ``row`` on the items ``index`` (all by default); a row of every item is
    cut to them, a row of the LLM's items is already."""
    index = range(len(judge_set.gold)) if index is None else index
    gold = [judge_set.gold[i] for i in index]
    whole = len(row.predicted) == len(judge_set.gold)
    predicted = [row.predicted[i] for i in index] if whole else row.predicted
    out: dict[str, Any] = {"items": len(gold), **label_metrics(gold, predicted)}
    if row.seconds_per_item is not None:
        out["seconds_per_1000"] = round(row.seconds_per_item * 1000, 3)
        out["items_per_min"] = round(60 / max(row.seconds_per_item, 1e-12))
    if judge_set.categories is not None:
        out["category_recall"] = category_recall(judge_set, predicted, index)
    if judge_set.kinds is not None:
        out["kind_accuracy"] = kind_accuracy(judge_set, predicted, index)
    if row.note:
        out["note"] = row.note
    return out


def shares(groups: Sequence[str | None], hits: Sequence[bool], name: str) -> dict:
    """Per group (None: left out): the share of its items that hit, as ``name``, and how
    many items."""
    found: dict[str, list[bool]] = {}
    for group, hit in zip(groups, hits):
        if group is not None:
            found.setdefault(group, []).append(hit)
    return {g: {name: round(sum(v) / len(v), 3), "n": len(v)} for g, v in sorted(found.items())}


def category_recall(judge_set: JudgeSet, predicted: list[str], index: Sequence[int]) -> dict:
    """Per spec category: the share of its out-of-bounds turns flagged, and how many."""
    groups = [judge_set.categories[i] for i in index]
    return shares(groups, [label == OUT_OF_BOUNDS for label in predicted], "recall")


def edit_kind(original: str, edited: str) -> str:
    """Which edit of ``train/near_copies`` made ``edited`` of ``original``."""
    if edited.replace(" ", "") == original.replace(" ", ""):
        return "respaced"
    if edited.rstrip().rstrip(CLOSING) == original.rstrip().rstrip(CLOSING):
        return "repunctuated"
    return "reworded"


def kind_accuracy(judge_set: JudgeSet, predicted: list[str], index: Sequence[int]) -> dict:
    """Per kind of edit (the hard set): the share judged right, and how many."""
    groups = [judge_set.kinds[i] for i in index]
    hits = [label == judge_set.gold[i] for label, i in zip(predicted, index)]
    return shares(groups, hits, "accuracy")


def results(judge_set: JudgeSet) -> dict:
    out: dict[str, Any] = {
        "items": len(judge_set.gold),
        "judges": {key: measured(judge_set, row) for key, row in judge_set.rows.items()},
    }
    if judge_set.llm_rows:
        rows = {**judge_set.rows, **judge_set.llm_rows}
        subset = judge_set.subset
        out["llm_subset"] = {
            "items": len(subset),
            "judges": {key: measured(judge_set, row, subset) for key, row in rows.items()},
        }
    return out


def goal(value: Any, target: str, met: bool, note: str | None = None) -> dict:
    return {"value": value, "target": target, "met": met} | ({"note": note} if note else {})


def targets(sets: dict[str, JudgeSet], found: dict[str, dict]) -> dict:
    """Per set: the trained judge (or the rules) minus the better LLM reading on the LLM's
    items, and minus the TF-IDF baseline on all items; the judges' speed."""
    goals: dict[str, dict] = {}
    floor = f">= {MIN_GAIN_OVER_LLM}"
    for name, judge_set in sets.items():
        judges, trained = found[name]["judges"], judge_set.trained
        side = "rules" if trained == "rules" else "trained"
        subset = found[name].get("llm_subset", {}).get("judges", {})
        if subset:
            best = max(subset[k]["macro_f1"] for k in ("llm", "llm_calibrated"))
            gain = round(subset[trained]["macro_f1"] - best, 4)
            goals[f"{name}_{side}_minus_llm"] = goal(gain, floor, gain >= MIN_GAIN_OVER_LLM)
        else:
            goals[f"{name}_{side}_minus_llm"] = goal(None, floor, False, "not measured")
        gain = round(judges[trained]["macro_f1"] - judges["tfidf"]["macro_f1"], 4)
        least = MIN_GAIN_OVER_TFIDF.get(name)
        met = gain > 0 if least is None else gain >= least
        goals[f"{name}_{side}_minus_tfidf"] = goal(gain, f">= {least}" if least else "> 0", met)
    for judge, (name, key) in SPEED_TARGETS.items():
        speed = found[name]["judges"][key]["items_per_min"]
        goals[f"{judge}_items_per_min"] = goal(
            speed, f">= {MIN_ITEMS_PER_MIN}", speed >= MIN_ITEMS_PER_MIN
        )
    return goals


def main(argv: Sequence[str] | None = None) -> dict:
    args = arguments(argv)
    started = time.perf_counter()
    print(f"data: {args.data_dir}; examples: {args.examples_dir}; seed {args.seed}", flush=True)
    implicit, implicit_judge = kda_implicit_set(args.data_dir, args.seed)
    print(f"trained the implicit judges ({time.perf_counter() - started:.0f} s)", flush=True)
    sets = {"beep": beep_set(args.data_dir, implicit_judge, args.seed), "kda_implicit": implicit}
    sets |= kda_consistency_sets(args.data_dir, args.seed)
    sets["out_of_bounds"] = out_of_bounds_set(args.examples_dir, args.seed)
    print(
        f"trained and timed the judges without an LLM ({time.perf_counter() - started:.0f} s)",
        flush=True,
    )
    llm = "skipped (--skip-llm)" if args.skip_llm else add_llm(sets, args)
    found = {name: results(judge_set) for name, judge_set in sets.items()}
    for name, judge_set in sets.items():
        print_table(judge_set, found[name])
    goals = targets(sets, found)
    seconds = round(time.perf_counter() - started)
    print(f"\nLLM: {llm}; whole run {seconds} s")
    summary = {
        "bench": "judges",
        "data_dir": str(args.data_dir),
        "llm_model": None if args.skip_llm else args.model,
        "llm_limit": None if args.skip_llm else args.llm_limit,
        "oob_llm_limit": None if args.skip_llm else oob_limit(args),
        "seed": args.seed,
        "seconds": seconds,
        "sets": found,
        "targets": goals,
    }
    print(json.dumps(summary, ensure_ascii=False))
    return summary


if __name__ == "__main__":
    main()
