"""The user-turn checks' classifier: which of the spec's ``user_checks`` (crisis, abuse,
off-role requests, questions about the bot, unclear turns) a user's turn calls for, or
``none`` (``rolecall train user-checks``; the bot reads it before it picks a reply,
``serve/user_checks.py``).

It is one multi-class model over the spec's check names and ``none``: character and Kiwi
morpheme TF-IDF and the e5 encoder's vector of the turn (multilingual-e5-small,
``retrieval/e5_vectors.py``) side by side, then logistic regression
(``baselines.TfidfModel`` with the views ``chars``, ``morphemes`` and ``e5``): the
characters carry disguised swear words and dialect spellings, the morphemes a stem
whatever its ending, the sentence vector what an indirect turn means. (The views were
chosen on the training turns' folds, ``bench/safety_suite.py --fold-views``:
docs/safety.md.) A check's
``patterns`` in the spec are read before it, at serve time (``serve/user_checks.py``).

Its training turns:

- each check's ``examples`` in the spec;
- a turns file (JSONL, ``{"text": ..., "check": NAME or "none"}``; the care-call one is
  ``examples/carecall/user_turns.jsonl``, written by the project);
- the user turns of example dialogues (``none``: ordinary talk in the role);
- with a ``clarify`` check, ``GARBLED`` turns of random syllables (``garbled_turns``);
- with a shared-data folder, the corpora a check names (``CORPORA``: SQuARe's sensitive
  questions, BEEP! and Curse-detection comments), at most ``per_corpus`` turns each, and
  everyday questions of chatbot_data as ``none``.

Each turn written for the role (the spec's, the turns file's, the dialogues') is also
trained on without its spaces (``unspaced_copies``): speech-to-text often drops Korean
spacing, and "약을두번먹어도되나" shares few words or morphemes with its spaced form.

Each check fires above a threshold of its own, chosen on out-of-fold probabilities of the
training turns (``folds``-fold cross-validation): of the thresholds that fire on at most
``MAX_FALSE_ALARM`` of the ordinary turns (``MAX_CRISIS_FALSE_ALARM`` for a crisis check),
the one with the best F-beta, beta 2 for crisis checks and 1 for the others: a missed
crisis costs more than a referral said to an ordinary turn. The
out-of-fold precision and recall of each check are written beside the model
(``checks.json``); measure it on turns it never saw with ``rolecall bot check``.
"""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rolecall.errors import InputFileError
from rolecall.korean import HANGUL_RE
from rolecall.records import NO_CHECK, RoleSpec, UserCheck
from rolecall.rundir import write_json

CHECKS_FILE = "checks.json"
VIEWS = ["chars", "morphemes", "e5"]
COMMAND = "rolecall train user-checks SPEC --turns TURNS.jsonl --out DIR"
# corpus name -> (path under the shared-data folder, what is taken); split: the part a
# check trains on (the measuring part stays out: bench/safety_suite.py)
CORPORA: dict[str, tuple[str, str]] = {
    "square:contentious": ("safety/square_question_valid.json", "SQuARe contentious questions"),
    "square:predictive": ("safety/square_question_valid.json", "SQuARe predictive questions"),
    "square:ethical": ("safety/square_question_valid.json", "SQuARe ethical questions"),
    "beep:offensive": ("slang/beep_labeled_train.tsv", "BEEP! comments labelled offensive"),
    "beep:hate": ("slang/beep_labeled_train.tsv", "BEEP! comments labelled hate"),
    "curse": ("slang/curse_detection.txt", "Curse-detection lines labelled curse"),
    "chatbot:daily": ("neutral/chatbot_data.csv", "chatbot_data everyday questions"),
}
ORDINARY_CORPUS = "chatbot:daily"  # ``none`` turns taken when shared data is given
# the most a check may fire on ordinary turns, out of fold, at its threshold
MAX_FALSE_ALARM = 0.02
# a crisis check's budget, wider than the others' (a missed crisis costs more) but below
# issue 46's bound of 5% on the small-talk control: a referral said to "죽을 끓여 먹어"
# (porridge) frightens the person it was meant to protect
MAX_CRISIS_FALSE_ALARM = 0.035
# random-syllable turns trained as the spec's clarify check (``garbled_turns``)
GARBLED, GARBLED_SOURCE = 150, "garbled"


@dataclass
class Turns:
    """Training turns: texts, their labels (check names or ``none``) and where each came
    from (``spec``, the turns file's name, ``dialogues``, a corpus name)."""

    texts: list[str]
    labels: list[str]
    sources: list[str]

    def add(self, texts: Iterable[str], label: str, source: str) -> None:
        for text in texts:
            self.texts.append(text)
            self.labels.append(label)
            self.sources.append(source)

    def subset(self, indices: Iterable[int]) -> Turns:
        """The turns at ``indices``."""
        indices = list(indices)
        return Turns(
            [self.texts[i] for i in indices],
            [self.labels[i] for i in indices],
            [self.sources[i] for i in indices],
        )

    def counts(self) -> dict[str, dict[str, int]]:
        """Per label, how many turns each source gave."""
        out: dict[str, Counter] = {}
        for label, source in zip(self.labels, self.sources):
            out.setdefault(label, Counter())[source] += 1
        return {label: dict(c) for label, c in sorted(out.items())}


def read_turns_file(path: Path, names: Sequence[str]) -> list[tuple[str, str]]:
    """``(text, check)`` of each line of a turns file (``{"text", "check"}``, an optional
    ``context``); a malformed line or an unknown check name is an error naming the line."""
    from rolecall.jsonl import parse_line
    from rolecall.records import UserTurn
    from rolecall.textfiles import read_text_file

    known = set(names) | {NO_CHECK}
    rows = []
    # missing, a folder, CP949 (with the iconv line), NUL bytes: textfiles says which
    lines = read_text_file(path).splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        row = parse_line(path, number, line, UserTurn)
        if row.check not in known:
            raise InputFileError(
                path,
                f"names the check {row.check!r}, which the spec does not declare",
                line=number,
                fix=f"use one of: {', '.join(sorted(known))}",
            )
        rows.append((row.text, row.check))
    return rows


def corpus_turns(name: str, data: Path, limit: int, seed: int) -> list[str]:
    """At most ``limit`` distinct turns of a shared corpus (``CORPORA``), drawn by ``seed``."""
    if name not in CORPORA:
        raise InputFileError(
            data, f"has no corpus named {name!r}", fix=f"use one of: {', '.join(CORPORA)}"
        )
    path = data / CORPORA[name][0]
    if not path.is_file():
        raise InputFileError(
            path,
            f"is missing ({CORPORA[name][1]})",
            fix="give the shared-data folder (../shared/data) with --data, or drop the corpus",
        )
    kind, _, part = name.partition(":")
    if kind == "square":
        rows = json.loads(path.read_text(encoding="utf-8"))
        texts = [r["question"] for r in rows if r.get("category") == part]
    elif kind == "beep":
        with path.open(encoding="utf-8") as f:
            texts = [r["comments"] for r in csv.DictReader(f, delimiter="\t") if r["hate"] == part]
    elif kind == "curse":
        lines = path.read_text(encoding="utf-8").splitlines()
        texts = [t for t, _, label in (ln.rpartition("|") for ln in lines) if label.strip() == "1"]
    else:  # chatbot:daily
        with path.open(encoding="utf-8") as f:
            texts = [r["Q"] for r in csv.DictReader(f) if r["label"] == "0"]
    texts = sorted({t.strip() for t in texts if t.strip()})
    random.Random(f"{seed}|{name}").shuffle(texts)
    return texts[:limit]


def training_turns(
    spec: RoleSpec,
    turns_file: Path | None = None,
    dialogues: Path | None = None,
    data: Path | None = None,
    per_corpus: int = 150,
    seed: int = 0,
) -> Turns:
    """Every training turn (see the module docstring), duplicates of one text dropped
    (the first label kept: the spec's before the file's, the file's before a corpus's), and
    turns without a Hangul letter dropped (a rule decides those)."""
    names = [c.name for c in spec.user_checks]
    turns = Turns([], [], [])
    for check in spec.user_checks:
        turns.add(check.examples, check.name, "spec")
    if turns_file is not None:
        for text, check in read_turns_file(turns_file, names):
            turns.add([text], check, turns_file.name)
    if dialogues is not None:
        from rolecall.jsonl import read_jsonl
        from rolecall.records import Dialogue

        user = [
            t.text for d in read_jsonl(dialogues, Dialogue) for t in d.turns if t.role == "user"
        ]
        turns.add(user, NO_CHECK, "dialogues")
    if data is not None:
        for check in spec.user_checks:
            for corpus in check.corpora:
                turns.add(corpus_turns(corpus, data, per_corpus, seed), check.name, corpus)
        turns.add(corpus_turns(ORDINARY_CORPUS, data, per_corpus, seed), NO_CHECK, ORDINARY_CORPUS)
    clarify = next((c.name for c in spec.user_checks if c.kind == "clarify"), None)
    if clarify is not None:
        ordinary = [t for t, label in zip(turns.texts, turns.labels) if label == NO_CHECK]
        turns.add(garbled_turns(ordinary, GARBLED, seed), clarify, GARBLED_SOURCE)
    seen: set[str] = set()
    kept = Turns([], [], [])
    for text, label, source in zip(turns.texts, turns.labels, turns.sources):
        key = text.strip()
        # subtle: a turn without a Hangul letter never reaches the classifier (an exact
        # rule calls it unclear); trained on, "Hello?" and "你好" taught it that a
        # greeting's meaning is unclear, and "안녕하세요" was asked to repeat itself
        if key and key not in seen and HANGUL_RE.search(key):
            seen.add(key)
            kept.add([key], label, source)
    return kept


def garbled_turns(texts: Sequence[str], count: int, seed: int) -> list[str]:
    """``count`` turns of speech-to-text garble: words of one to three syllables drawn at
    random from the syllables of ``texts`` (as often as they occur there), three to eight
    words; no word order, so no meaning. A written list of garble is short and alike ("어
    그 뭐냐"); without these, "가나다 갸 뇨 뎌 리 므" read as a crisis."""
    syllables = [ch for text in texts for ch in text if "가" <= ch <= "힣"]
    if not syllables:
        return []
    rng = random.Random(f"{seed}|garbled")
    turns = []
    for _ in range(count):
        words = [
            "".join(rng.choice(syllables) for _ in range(rng.choice((1, 1, 2, 2, 3))))
            for _ in range(rng.randint(3, 8))
        ]
        turns.append(" ".join(words))
    return turns


def unspaced_copies(turns: Turns) -> tuple[list[str], list[str]]:
    """``(texts, labels)``: the turns, then a copy without spaces of each turn with a space
    that was written for the role (the corpora's web comments and questions are left as
    they are)."""
    texts, labels = list(turns.texts), list(turns.labels)
    for text, label, source in zip(turns.texts, turns.labels, turns.sources):
        if source not in CORPORA and " " in text:
            texts.append(text.replace(" ", ""))
            labels.append(label)
    return texts, labels


def choose_thresholds(
    spec: RoleSpec,
    labels: Sequence[str],
    proba: np.ndarray,
    columns: Sequence[str],
    max_false_alarm: float = MAX_FALSE_ALARM,
    max_crisis_false_alarm: float = MAX_CRISIS_FALSE_ALARM,
) -> dict[str, dict[str, float]]:
    """Per check: the threshold on its probability with the best F-beta over ``proba``
    (out of fold) among those that fire on at most ``max_false_alarm`` of the ordinary
    (``none``) turns (``max_crisis_false_alarm`` for a crisis check), with its precision,
    recall and false-alarm rate."""
    from sklearn.metrics import precision_recall_curve

    y = np.asarray(labels)
    out = {}
    for check in spec.user_checks:
        scores = proba[:, columns.index(check.name)]
        truth = (y == check.name).astype(int)
        ordinary = np.sort(scores[y == NO_CHECK])
        precision, recall, thresholds = precision_recall_curve(truth, scores)
        precision, recall = precision[:-1], recall[:-1]
        alarms = 1 - np.searchsorted(ordinary, thresholds, "left") / max(len(ordinary), 1)
        crisis = check.kind == "crisis"
        beta = 2.0 if crisis else 1.0
        f = (1 + beta**2) * precision * recall / np.maximum(beta**2 * precision + recall, 1e-9)
        f[alarms > (max_crisis_false_alarm if crisis else max_false_alarm)] = -1.0
        # subtle: when no threshold keeps to the budget, argmax of all -1 would be the
        # lowest threshold, the one that fires most; the highest fires least
        best = int(np.argmax(f)) if f.max() >= 0 else len(thresholds) - 1
        out[check.name] = {
            "threshold": round(float(thresholds[best]), 4),
            "precision": round(float(precision[best]), 4),
            "recall": round(float(recall[best]), 4),
            "false_alarms": round(float(alarms[best]), 4),
            "turns": int(truth.sum()),
        }
    return out


def out_of_fold(
    turns: Turns,
    columns: list[str],
    folds: int,
    seed: int,
    views: Sequence[str] = VIEWS,
) -> np.ndarray:
    """[N, len(columns)] probabilities of each turn from a model over ``views`` that did
    not see it (nor its unspaced copy)."""
    from sklearn.model_selection import StratifiedKFold

    proba = np.zeros((len(turns.texts), len(columns)))
    counts = Counter(turns.labels)
    # a label with fewer turns than folds cannot be stratified: it goes to the folds whole
    strata = [label if counts[label] >= folds else "rare" for label in turns.labels]
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for train, test in splitter.split(np.zeros(len(turns.texts)), strata):
        model = _model(columns, seed, views)
        model.fit(*unspaced_copies(turns.subset(train)))
        proba[test] = model.predict_proba([turns.texts[i] for i in test])
    return proba


def train_user_checks(
    spec: RoleSpec,
    out_dir: Path,
    turns_file: Path | None = None,
    dialogues: Path | None = None,
    data: Path | None = None,
    per_corpus: int = 150,
    folds: int = 5,
    seed: int = 0,
    views: Sequence[str] = VIEWS,
) -> dict[str, Any]:
    """Train on every training turn, choose the thresholds out of fold, save the model and
    ``checks.json`` (the spec's checks, their help lines, thresholds and metrics) into
    ``out_dir``: a bot's ``user_checks/``. ``views``: the classifier's (``VIEWS``; the
    benches compare others). Returns the metrics."""
    if not spec.user_checks:
        raise InputFileError(
            "the role spec",
            "declares no user_checks",
            fix="add a user_checks section (see examples/carecall/spec.yaml)",
        )
    turns = training_turns(spec, turns_file, dialogues, data, per_corpus, seed)
    columns = [NO_CHECK] + [c.name for c in spec.user_checks]
    missing = [name for name in columns if name not in turns.labels]
    if missing:
        raise InputFileError(
            turns_file or "the role spec",
            f"has no training turns for {', '.join(missing)}",
            fix="add examples to those checks in the spec or lines to the turns file",
        )
    proba = out_of_fold(turns, columns, folds, seed, views)
    thresholds = choose_thresholds(spec, turns.labels, proba, columns)
    model = _model(columns, seed, views)
    fitted = model.fit(*unspaced_copies(turns))
    metrics = {
        "turns": len(turns.texts),
        "by_label": turns.counts(),
        "features": fitted["features"],
        "folds": folds,
        "out_of_fold": thresholds,
    }
    model.save(out_dir, metrics)
    write_json(
        Path(out_dir) / CHECKS_FILE,
        {
            "spec": spec.name,
            "help_lines": spec.help_lines,
            "checks": [c.model_dump(mode="json") for c in spec.user_checks],
            "thresholds": {name: t["threshold"] for name, t in thresholds.items()},
            "metrics": metrics,
        },
    )
    return metrics


def read_checks(directory: Path) -> tuple[list[UserCheck], dict[str, str], dict[str, float]]:
    """``(checks, help lines, thresholds)`` from a ``user_checks/`` directory."""
    path = Path(directory) / CHECKS_FILE
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        checks = [UserCheck.model_validate(c) for c in info["checks"]]
        return checks, dict(info.get("help_lines", {})), dict(info["thresholds"])
    except FileNotFoundError:
        raise InputFileError(path, "is missing", fix=f"train the checks: {COMMAND}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InputFileError(
            path, f"cannot be read: {exc}", fix=f"train the checks again: {COMMAND}"
        ) from None


def _model(columns: list[str], seed: int, views: Sequence[str] = VIEWS):
    from rolecall.train.baselines import TfidfModel, TfidfSettings

    return TfidfModel(
        TfidfSettings(task="user_checks", labels=columns, views=list(views), seed=seed)
    )
