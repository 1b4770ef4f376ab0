"""An offensiveness classifier from the shared Korean corpora, and the offensive rate.

The detox model is judged by how offensive its rewrites still are (K/DA, ACL 2025). The
judge is rolecall's own out-of-bounds classifier (``train/classifier.py``) trained on single
sentences (an empty history) labelled offensive or not from three public corpora:

- BEEP! labeled train (``slang/beep_labeled_train.tsv``): ``hate`` offensive or hate ->
  offensive, none -> not;
- Curse-detection-data (``slang/curse_detection.txt``, ``text|label``): 1 -> offensive;
- K/DA (``detox/kda_ko.csv``): the implicit sentence -> offensive, the neutral -> not;
  only the pairs the caller allows (keep the detox model's test sentences out).

The label "negative" (out of bounds) means offensive; ``offensive_rate`` is the share of
texts the classifier flags.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Iterable, Sequence
from pathlib import Path

from rolecall.errors import InputFileError
from rolecall.records import Example, Pair
from rolecall.textfiles import read_text_file

OFFENSIVE = "offensive"


def _example(text: str, offensive: bool, source: str) -> Example:
    if offensive:
        return Example(
            history=[],
            response=text,
            label="negative",
            category=OFFENSIVE,
            dialogue_id=f"{source}:{text}",
        )
    return Example(history=[], response=text, label="positive", dialogue_id=f"{source}:{text}")


def beep_examples(path: Path) -> list[Example]:
    reader = csv.DictReader(
        io.StringIO(read_text_file(path), newline=""), delimiter="\t", quoting=csv.QUOTE_NONE
    )
    if not {"comments", "hate"} <= set(reader.fieldnames or []):
        raise InputFileError(
            path,
            f"has columns {reader.fieldnames}, not BEEP!'s",
            fix="give the labeled BEEP! TSV (columns comments, hate, ...)",
        )
    rows = list(reader)
    return [
        _example(row["comments"].strip(), row["hate"].strip() != "none", "beep")
        for row in rows
        if (row.get("comments") or "").strip()
    ]


def curse_examples(path: Path) -> list[Example]:
    out = []
    for line in read_text_file(path).splitlines():
        text, _, label = line.rpartition("|")
        if text.strip() and label.strip() in ("0", "1"):
            out.append(_example(text.strip(), label.strip() == "1", "curse"))
    return out


def kda_examples(pairs: Iterable[Pair]) -> list[Example]:
    out, seen = [], set()
    for pair in pairs:
        if pair.neutral not in seen:
            seen.add(pair.neutral)
            out.append(_example(pair.neutral, False, "kda"))
        out.append(_example(pair.toxic, True, "kda"))
    return out


def offensiveness_examples(
    data_dir: Path, kda_pairs: Iterable[Pair], per_source: int | None = None, seed: int = 0
) -> list[Example]:
    """Examples from the three corpora (at most ``per_source`` from each, drawn at random
    with ``seed``), shuffled."""
    rng = random.Random(seed)
    sources = [
        beep_examples(data_dir / "slang" / "beep_labeled_train.tsv"),
        curse_examples(data_dir / "slang" / "curse_detection.txt"),
        kda_examples(kda_pairs),
    ]
    out = []
    for examples in sources:
        if per_source is not None and len(examples) > per_source:
            examples = rng.sample(examples, per_source)
        out += examples
    rng.shuffle(out)
    return out


def offensive_rate(classifier, texts: Sequence[str]) -> float:
    """Share of ``texts`` the classifier flags as offensive (out of bounds)."""
    if not texts:
        return 0.0
    flagged = classifier.predict([[] for _ in texts], [t.strip() for t in texts])
    return float(sum(bool(f) for f in flagged) / len(texts))
