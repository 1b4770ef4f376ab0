"""The trained K/DA judges: their data recipes from the shared corpora, training, measuring.

Two tasks, with the labels of the LLM filters (``judge/pair_filters.LABELS``):

- ``implicit`` (one sentence -> implicit / none / explicit): K/DA's implicitly offensive
  sentences -> implicit; Curse-detection's curse posts that contain a word of the
  profanity lexicon -> explicit; K/DA's neutral sentences, Chatbot_data questions and
  Curse-detection's non-curse posts without a lexicon word -> none. (Lexicon hits are not
  a clean line by themselves: about 30% of the K/DA implicit sentences contain a lexicon
  word, as community slang and disguised swear words do; that is what the model learns.)
- ``consistency`` ((neutral, candidate) -> maintained / shifted): K/DA pairs -> maintained;
  the K/DA filter's failures -> shifted: *mismatched* (a neutral sentence with another
  sentence's rewrite), *copy* (the sentence itself), *paraphrase* (KorSTS pairs scored >= 4:
  same meaning, nothing offensive added), *answer* (a Chatbot_data question and its
  answer: replying instead of rewriting) and *near-copy* (the sentence with one surface
  edit, a space or a closing mark: ``near_copies.surface_edit``).

Held out for measuring: the K/DA pairs of ``detox_model.split_pairs(pairs, holdout, seed)``
(by neutral sentence, the rule of ``detox train --test-share`` and ``detox
offensiveness-data --kda-holdout``: the same seed holds the same pairs out everywhere), and
the same share of every other corpus by a hash of the text (``data.split_by``). Each test
item belongs to a *set*: ``kda`` (implicit vs neutral; true vs mismatched pairs, the sets of
issue #16's benchmark), ``other``, and for consistency ``hard``: the held-out true pairs with
their rewrite respaced (maintained) beside near-copies of the held-out neutral sentences,
respaced, repunctuated and reworded (shifted; ``near_copies``: rewording is a kind the
recipe never trains on). The recipe, the share and the seed go into
``model.json`` (``metrics.data``).
"""

from __future__ import annotations

import csv
import io
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rolecall.errors import ConfigError, InputFileError
from rolecall.records import Pair
from rolecall.textfiles import read_text_file
from rolecall.train import near_copies
from rolecall.train.baselines import BASELINE_VIEWS, TextOrPair, TfidfModel, TfidfSettings
from rolecall.train.data import split_by
from rolecall.train.detox_model import split_pairs

LABELS = {"implicit": ["implicit", "none", "explicit"], "consistency": ["maintained", "shifted"]}
TASKS = tuple(LABELS)
TFIDF = "tfidf"
# the judges' TF-IDF views: Kiwi morphemes beside the baseline's characters measured above
# characters alone on BEEP! dev and the K/DA sets; the sentence encoder's vectors lift the
# consistency judge (most on the hard set) and lower the one-sentence judges; the content
# morphemes a rewrite added and dropped lift the consistency judge again, most on the
# rewordings it never trains on (#32) (docs/trained-judges.md, bench/judges.py)
JUDGE_VIEWS = {
    "implicit": ["chars", "morphemes"],
    "consistency": ["chars", "morphemes", "sentence", "content"],
}
PARAPHRASE_SCORE = 4.0  # KorSTS 0-5: 4 and up is "mostly equivalent"
Item = tuple[TextOrPair, str]


@dataclass
class JudgeData:
    """Training items and test items (input, label) per test set, and how they were made."""

    task: str
    train: list[Item]
    test: dict[str, list[Item]]
    recipe: dict[str, Any] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        return LABELS[self.task]

    @property
    def pair(self) -> bool:
        return self.task == "consistency"


# ---- reading the corpora ---------------------------------------------------------------


def _need(path: Path) -> Path:
    if not path.is_file():
        raise InputFileError(
            path,
            "is missing",
            fix="give the shared data folder (with detox/, slang/, lexicon/, neutral/); "
            "see docs/trained-judges.md",
        )
    return path


def read_lexicon(path: Path) -> list[str]:
    """The lexicon's words of two characters or more (single characters hit everywhere)."""
    words = {w.strip() for w in read_text_file(_need(path)).splitlines()}
    words = sorted(w for w in words if len(w) >= 2)
    if not words:
        raise InputFileError(path, "holds no word of two characters or more", fix="one a line")
    return words


def read_curse(path: Path) -> list[tuple[str, bool]]:
    rows = []
    for line in read_text_file(_need(path)).splitlines():
        text, _, label = line.rpartition("|")
        if text.strip() and label.strip() in ("0", "1"):
            rows.append((text.strip(), label.strip() == "1"))
    return rows


def _table(path: Path, delimiter: str) -> list[dict[str, str]]:
    text = read_text_file(_need(path))
    return list(
        csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter, quoting=csv.QUOTE_NONE)
        if delimiter == "\t"
        else csv.DictReader(io.StringIO(text, newline=""))
    )


def read_chatbot(path: Path) -> list[tuple[str, str]]:
    """(question, answer) rows of Chatbot_data."""
    rows = _table(path, ",")
    return [(r["Q"].strip(), r["A"].strip()) for r in rows if r.get("Q") and r.get("A")]


def read_paraphrases(path: Path) -> list[tuple[str, str]]:
    """KorSTS pairs scored ``PARAPHRASE_SCORE`` or more whose sentences differ."""
    out = []
    for row in _table(path, "\t"):
        try:
            score = float(row.get("score") or "")
        except ValueError:
            continue
        first, second = (row.get("sentence1") or "").strip(), (row.get("sentence2") or "").strip()
        if score >= PARAPHRASE_SCORE and first and second and first != second:
            out.append((first, second))
    return out


def read_kda(data_dir: Path) -> list[Pair]:
    from rolecall.formats.kda import read_kda_csv

    path = _need(data_dir / "detox" / "kda_ko.csv")
    pairs = read_kda_csv(path)
    if not pairs:
        raise InputFileError(path, "holds no pairs", fix="give the K/DA CSV (neutral,implicit)")
    return pairs


def split_kda(pairs: Sequence[Pair], holdout: float, seed: int) -> tuple[list[Pair], list[Pair]]:
    """(train, test) K/DA pairs by neutral sentence: the held-out rule of every command."""
    if not 0 < holdout < 1:
        raise ConfigError(
            f"the K/DA held-out share must lie in (0, 1), got {holdout}",
            fix="use e.g. 0.1 (the default of 'detox train' and 'detox offensiveness-data')",
        )
    return split_pairs(pairs, holdout, seed)


# ---- the recipes ----------------------------------------------------------------------


def _split_texts(items: Sequence[Any], holdout: float, seed: int, key=lambda x: str(x)):
    return split_by(list(dict.fromkeys(items)), key=key, held_out=holdout, seed=seed)


def implicit_data(data_dir: Path, holdout: float = 0.1, seed: int = 0) -> JudgeData:
    """The implicit / none / explicit recipe (module docstring)."""
    kda_train, kda_test = split_kda(read_kda(data_dir), holdout, seed)
    words = read_lexicon(data_dir / "lexicon" / "korean_bad_words.txt")
    # one alternation, longest words first: twice as fast as a loop over 3,500 words
    lexicon = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))

    def hit(text: str) -> bool:
        return lexicon.search(text) is not None

    curse = read_curse(data_dir / "slang" / "curse_detection.txt")
    chatbot = read_chatbot(data_dir / "neutral" / "chatbot_data.csv")
    others = {
        "curse_explicit": ("explicit", [t for t, bad in curse if bad and hit(t)]),
        "curse_none": ("none", [t for t, bad in curse if not bad and not hit(t)]),
        "chatbot": ("none", [q for q, _ in chatbot]),
    }
    train: list[Item] = [(t, "implicit") for t in dict.fromkeys(p.toxic for p in kda_train)]
    train += [(t, "none") for t in dict.fromkeys(p.neutral for p in kda_train)]
    test = {
        "kda": [(t, "implicit") for t in dict.fromkeys(p.toxic for p in kda_test)]
        + [(t, "none") for t in dict.fromkeys(p.neutral for p in kda_test)],
        "other": [],
    }
    counts = {"kda_train_pairs": len(kda_train), "kda_test_pairs": len(kda_test)}
    for name, (label, texts) in others.items():
        fit, held = _split_texts(texts, holdout, seed)
        train += [(t, label) for t in fit]
        test["other"] += [(t, label) for t in held]
        counts[name] = len(fit) + len(held)
    return JudgeData("implicit", train, test, _recipe("implicit", holdout, seed, counts))


def shifted_pairs(pairs: Sequence[Pair], seed: int) -> list[tuple[str, str]]:
    """One mismatched pair per pair: its neutral sentence with the rewrite of a pair of
    another neutral sentence, drawn with ``seed``."""
    rng = random.Random(seed)
    pairs = list(pairs)
    if len({p.neutral for p in pairs}) < 2:
        return []
    out = []
    for pair in pairs:
        other = rng.choice(pairs)
        while other.neutral == pair.neutral:
            other = rng.choice(pairs)
        out.append((pair.neutral, other.toxic))
    return out


def _consistency_items(pairs: Sequence[Pair], seed: int) -> tuple[list[Item], list[Item]]:
    """(true and mismatched K/DA pairs, copies) of one side of the split."""
    kda = [((p.neutral, p.toxic), "maintained") for p in pairs]
    kda += [(pair, "shifted") for pair in shifted_pairs(pairs, seed)]
    copies = [((n, n), "shifted") for n in dict.fromkeys(p.neutral for p in pairs)]
    return kda, copies


def edited_copies(pairs: Sequence[Pair], seed: int) -> list[Item]:
    """One surface edit of each neutral sentence (shifted): the training near-copies."""
    rng = random.Random(seed)
    out = []
    for neutral in dict.fromkeys(p.neutral for p in pairs):
        edited = near_copies.surface_edit(neutral, rng)
        if edited:
            out.append(((neutral, edited), "shifted"))
    return out


def hard_items(pairs: Sequence[Pair], seed: int) -> list[Item]:
    """The ``hard`` test set: each true pair with its rewrite respaced (maintained); each
    neutral sentence respaced, repunctuated and reworded (shifted), where that changes it."""
    rng = random.Random(seed)
    out: list[Item] = []
    for pair in pairs:
        respaced = near_copies.respaced(pair.toxic, rng)
        if respaced and respaced != pair.toxic:
            out.append(((pair.neutral, respaced), "maintained"))
    for neutral in dict.fromkeys(p.neutral for p in pairs):
        edits = (
            near_copies.respaced(neutral, rng),
            near_copies.repunctuated(neutral, rng),
            near_copies.reworded(neutral),
        )
        out += [((neutral, e), "shifted") for e in dict.fromkeys(edits) if e and e != neutral]
    return out


def consistency_data(data_dir: Path, holdout: float = 0.1, seed: int = 0) -> JudgeData:
    """The maintained / shifted recipe (module docstring)."""
    kda_train, kda_test = split_kda(read_kda(data_dir), holdout, seed)
    paraphrases = read_paraphrases(data_dir / "neutral" / "korsts_train.tsv")
    answers = read_chatbot(data_dir / "neutral" / "chatbot_data.csv")
    # answers are many and easy: as many as there are neutral sentences, drawn with the seed
    wanted = len({p.neutral for p in kda_train}) + len({p.neutral for p in kda_test})
    answers = random.Random(seed).sample(answers, min(len(answers), wanted))
    train, train_copies = _consistency_items(kda_train, seed)
    test_kda, test_copies = _consistency_items(kda_test, seed + 1)
    near = edited_copies(kda_train, seed)
    train += train_copies + near
    test = {"kda": test_kda, "other": test_copies, "hard": hard_items(kda_test, seed + 1)}
    counts = {
        "kda_train_pairs": len(kda_train),
        "kda_test_pairs": len(kda_test),
        "near_copy": len(near),
    }
    for name, rows in (("korsts_paraphrase", paraphrases), ("chatbot_answer", answers)):
        fit, held = _split_texts(rows, holdout, seed, key=lambda pair: pair[0])
        train += [(pair, "shifted") for pair in fit]
        test["other"] += [(pair, "shifted") for pair in held]
        counts[name] = len(fit) + len(held)
    return JudgeData("consistency", train, test, _recipe("consistency", holdout, seed, counts))


RECIPES = {"implicit": implicit_data, "consistency": consistency_data}


def _recipe(task: str, holdout: float, seed: int, counts: dict[str, int]) -> dict[str, Any]:
    return {
        "recipe": task,
        "kda_holdout": holdout,
        "seed": seed,
        "held_out_rule": "rolecall.train.detox_model.split_pairs (by neutral sentence)",
        "sources": counts,
    }


def limited(items: list[Item], per_label: int | None, seed: int) -> list[Item]:
    """At most ``per_label`` items of each label, drawn with ``seed``, in their order."""
    if per_label is None:
        return items
    rng, keep = random.Random(seed), set()
    for label in dict.fromkeys(y for _, y in items):
        rows = [i for i, (_, y) in enumerate(items) if y == label]
        keep |= set(rng.sample(rows, min(per_label, len(rows))))
    return [item for i, item in enumerate(items) if i in keep]


# ---- training and measuring ------------------------------------------------------------


def label_metrics(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, float]:
    """Accuracy and macro-F1 (over the gold labels present: a label the set lacks would
    add a meaningless 0)."""
    from sklearn.metrics import f1_score

    from rolecall.eval.classification import accuracy

    if not gold:
        return {}
    present = sorted(set(gold))
    macro = f1_score(list(gold), list(predicted), labels=present, average="macro", zero_division=0)
    return {"accuracy": round(accuracy(gold, predicted), 4), "macro_f1": round(float(macro), 4)}


def measure(model: Any, test: dict[str, list[Item]]) -> dict[str, Any]:
    """Accuracy and macro-F1 on all test items and per set (``kda_accuracy``, ...), and
    predictions per second."""
    everything = [item for items in test.values() for item in items]
    if not everything:
        return {}
    start = time.perf_counter()
    predicted = model.predict([x for x, _ in everything])
    seconds = max(time.perf_counter() - start, 1e-9)
    metrics: dict[str, Any] = {"test_examples": len(everything)}
    metrics |= label_metrics([y for _, y in everything], predicted)
    start = 0
    for name, items in test.items():
        part = predicted[start : start + len(items)]
        start += len(items)
        for key, value in label_metrics([y for _, y in items], part).items():
            metrics[f"{name}_{key}"] = value
        metrics[f"{name}_examples"] = len(items)
    metrics["predict_items_per_s"] = round(len(everything) / seconds, 1)
    return metrics


def train_judge(
    task: str,
    data_dir: str | Path,
    out_dir: str | Path,
    backbone: Any = TFIDF,
    holdout: float = 0.1,
    seed: int = 0,
    limit: int | None = None,
    test_limit: int | None = None,
    settings: dict[str, Any] | None = None,
    config: Any = None,
    baseline: bool = True,
    progress: bool = True,
    cache_dir: Path | None = None,
) -> dict[str, Any]:
    """Train the ``task`` judge on its recipe, measure it on the held-out items, save it.

    ``backbone``: ``"tfidf"`` (TF-IDF + logistic regression over the task's ``JUDGE_VIEWS`` unless
    ``settings`` names ``views``), or a ``Backbone`` / ``"embedded"`` / a model path for a
    ``LabelModel`` head; ``limit`` / ``test_limit``: at most that many training / test
    items per label (per test set). With ``baseline``, the classic baseline (character
    n-grams only) is trained on the same items and its numbers reported beside
    (``baseline_*``) unless the model is that baseline. Returns the metrics written into
    model.json.
    """
    if task not in RECIPES:
        raise ConfigError(f"unknown judge task {task!r}", fix=f"use one of {', '.join(TASKS)}")
    data = RECIPES[task](Path(data_dir), holdout, seed)
    train = limited(data.train, limit, seed)
    test = {name: limited(items, test_limit, seed) for name, items in data.test.items()}
    data.recipe |= {"limit": limit, "test_limit": test_limit}
    inputs, labels = [x for x, _ in train], [y for _, y in train]
    metrics: dict[str, Any] = {"task": task, "train_examples": len(train)}
    start = time.perf_counter()
    if isinstance(backbone, str) and backbone == TFIDF:
        settings = {"views": JUDGE_VIEWS[task], **(settings or {})}
        options = TfidfSettings(
            task=task, labels=data.labels, pair=data.pair, seed=seed, **settings
        )
        model: Any = TfidfModel(options)
        metrics |= {"backbone": TFIDF, **model.fit(inputs, labels)}
    else:
        from rolecall.train.loop import TrainConfig

        config = config or TrainConfig(seed=seed)
        model = _neural(data, backbone, settings, config, cache_dir)
        history = model.fit(inputs, labels, config, progress)
        metrics |= {
            "backbone": model.backbone.source,
            **{k: history[k] for k in ("steps", "first_loss", "last_loss", "losses")},
        }
    metrics["train_seconds"] = round(time.perf_counter() - start, 1)
    metrics |= measure(model, test)
    if baseline and not (isinstance(model, TfidfModel) and model.views == BASELINE_VIEWS):
        reference = TfidfModel(TfidfSettings(task=task, labels=data.labels, pair=data.pair))
        reference.fit(inputs, labels)
        metrics |= {f"baseline_{k}": v for k, v in measure(reference, test).items()}
    metrics["data"] = data.recipe
    model.save(out_dir, metrics)
    return metrics


def _neural(data: JudgeData, backbone: Any, settings: Any, config: Any, cache_dir: Any):
    from rolecall.train.backbones.features import Features
    from rolecall.train.label_model import LabelModel, LabelSettings
    from rolecall.train.pairs import resolve_backbone

    backbone = resolve_backbone(backbone)
    options = LabelSettings(task=data.task, labels=data.labels, pair=data.pair, **settings or {})
    features = Features(backbone, cache_dir, batch_size=config.batch_size)
    return LabelModel.create(backbone, options, features)
