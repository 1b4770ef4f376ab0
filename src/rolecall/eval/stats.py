"""Dataset statistics, the NAACL 2022 paper's Table 2, plus distinct-n diversity.

``dialogue_stats`` counts one dataset in one word unit; ``dataset_stats`` does both units;
``format_stats_table`` puts several datasets side by side; ``stats_to_json`` saves them.

Word units, because "words" in Korean is ambiguous and the two give very different numbers:

- ``"eojeol"`` (어절): whitespace-separated tokens, punctuation attached (what a Korean
  reader calls a word).
- ``"morpheme"``: Kiwi morphemes as ``"form/tag"`` strings. The tag is part of the unit so
  that homographs stay apart (이/JKS the subject particle vs 이/VCP the copula, 하/XSA vs
  하/VV); punctuation morphemes (SF, SP, ...) are counted like any other, as in eojeol.
  Counts depend on the Kiwi version, which is recorded in the stats (``"tokenizer"``).

Texts are NFC-normalised first (text pasted from macOS may be decomposed jamo, which
would make equal words differ). Word counts cover every turn, system and user. Bigrams
never cross a turn boundary. Every ratio over an empty count is 0.0, never an error.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from rich.table import Table

from rolecall.examples import examples_from_dialogue
from rolecall.korean import kiwi
from rolecall.records import Dialogue, Example

Unit = Literal["eojeol", "morpheme"]
UNITS: tuple[Unit, ...] = ("eojeol", "morpheme")
UNIT_LABELS = {"eojeol": "어절", "morpheme": "morphemes"}

# rows of the table: (key, label); the second group is counted once per unit
DATASET_ROWS = [
    ("dialogues", "dialogues"),
    ("turns", "turns"),
    ("avg_turns_per_dialogue", "avg turns / dialogue"),
    ("positive_examples", "positive examples"),
    ("negative_examples", "negative examples"),
    ("unique_system_turns", "unique system turns"),
]
WORD_ROWS = [
    ("words", "words"),
    ("avg_words_per_turn", "avg words / turn"),
    ("unique_words", "unique words"),
    ("unique_bigrams", "unique bigrams"),
    ("distinct_1", "distinct-1"),
    ("distinct_2", "distinct-2"),
]


def tokenizer_name(unit: Unit) -> str:
    if unit == "eojeol":
        return "whitespace"
    from kiwipiepy import __version__

    return f"kiwipiepy {__version__}"


def normalize_text(text: str) -> str:
    """NFC, whitespace runs collapsed, ends stripped: the identity of a turn's text."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def tokenize(texts: Sequence[str], unit: Unit = "eojeol") -> list[list[str]]:
    """Each text as a list of words in ``unit`` (see the module docstring)."""
    texts = [unicodedata.normalize("NFC", t) for t in texts]
    if unit == "eojeol":
        return [t.split() for t in texts]
    if unit == "morpheme":
        # one call for the whole batch: Kiwi spreads a list over its worker threads
        return [[f"{tok.form}/{tok.tag}" for tok in toks] for toks in kiwi().tokenize(texts)]
    raise ValueError(f"unknown word unit {unit!r}; expected one of {UNITS}")


def ngram_counts(token_lists: Iterable[Sequence[str]]) -> dict[str, int]:
    """Total and distinct unigrams and bigrams; bigrams stay inside one token list."""
    unigrams, bigrams = 0, 0
    unique_unigrams: set[str] = set()
    unique_bigrams: set[tuple[str, str]] = set()
    for tokens in token_lists:
        unigrams += len(tokens)
        unique_unigrams.update(tokens)
        pairs = list(zip(tokens, tokens[1:]))
        bigrams += len(pairs)
        unique_bigrams.update(pairs)
    return {
        "unigrams": unigrams,
        "unique_unigrams": len(unique_unigrams),
        "bigrams": bigrams,
        "unique_bigrams": len(unique_bigrams),
    }


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def dialogue_stats(
    dialogues: Iterable[Dialogue], examples: Iterable[Example] | None = None, unit: Unit = "eojeol"
) -> dict[str, Any]:
    """One dataset's Table 2 numbers, with words counted in ``unit``.

    Positive/negative examples are counted from ``examples`` when given (e.g. an examples
    file, possibly labelled by people). Otherwise they come from the dialogues' own flags
    by the first-out-of-bounds split (``examples_from_dialogue``), exactly what training
    would get from them: for dialogues nobody judged yet both counts are 0.
    """
    if unit not in UNITS:
        raise ValueError(f"unknown word unit {unit!r}; expected one of {UNITS}")
    dialogues = list(dialogues)
    if examples is None:
        examples = [e for d in dialogues for e in examples_from_dialogue(d)]
    labels = [e.label for e in examples]
    turns = [t for d in dialogues for t in d.turns]
    counts = ngram_counts(tokenize([t.text for t in turns], unit))
    system_texts = {normalize_text(t.text) for t in turns if t.role == "system"}
    return {
        "unit": unit,
        "tokenizer": tokenizer_name(unit),
        "dialogues": len(dialogues),
        "turns": len(turns),
        "avg_turns_per_dialogue": _ratio(len(turns), len(dialogues)),
        "positive_examples": labels.count("positive"),
        "negative_examples": labels.count("negative"),
        "unique_system_turns": len(system_texts),
        "words": counts["unigrams"],
        "avg_words_per_turn": _ratio(counts["unigrams"], len(turns)),
        "unique_words": counts["unique_unigrams"],
        "unique_bigrams": counts["unique_bigrams"],
        "distinct_1": _ratio(counts["unique_unigrams"], counts["unigrams"]),
        "distinct_2": _ratio(counts["unique_bigrams"], counts["bigrams"]),
    }


def dataset_stats(
    dialogues: Iterable[Dialogue],
    examples: Iterable[Example] | None = None,
    units: Sequence[Unit] = UNITS,
) -> dict[str, dict[str, Any]]:
    """``dialogue_stats`` in each unit: ``{unit: stats}``, one column of the table."""
    dialogues = list(dialogues)
    examples = None if examples is None else list(examples)
    return {unit: dialogue_stats(dialogues, examples, unit) for unit in units}


def _by_unit(column: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Accept one ``dialogue_stats`` result or a ``dataset_stats`` result alike."""
    return {column["unit"]: column} if "unit" in column else column


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.4f}" if key.startswith("distinct") else f"{value:,.2f}"


def format_stats_table(columns: dict[str, dict[str, Any]], title: str | None = None) -> Table:
    """Datasets side by side: one column per dataset, one row per metric (and unit).

    ``columns`` maps a dataset name to ``dataset_stats(...)`` (``{unit: stats}``) or to a
    single ``dialogue_stats(...)``. Word rows appear once per unit present in any column,
    labelled e.g. "words (어절)" and "words (morphemes)"; a missing unit shows "–".
    """
    by_unit = {name: _by_unit(column) for name, column in columns.items()}
    units = [u for u in UNITS if any(u in c for c in by_unit.values())]
    table = Table(title=title)
    table.add_column("metric")
    for name in by_unit:
        table.add_column(name, justify="right")
    for key, label in DATASET_ROWS:
        # these do not depend on the unit: take them from whichever unit a column has
        table.add_row(
            label, *(_cell(key, next(iter(c.values()), {}).get(key)) for c in by_unit.values())
        )
    for unit in units:
        table.add_section()
        for key, label in WORD_ROWS:
            table.add_row(
                f"{label} ({UNIT_LABELS[unit]})",
                *(_cell(key, c.get(unit, {}).get(key)) for c in by_unit.values()),
            )
    return table


def stats_to_json(columns: dict[str, dict[str, Any]]) -> str:
    """The same columns as JSON text (Korean unescaped), for papers and diffs."""
    return json.dumps(columns, ensure_ascii=False, indent=2) + "\n"
