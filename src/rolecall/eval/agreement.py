"""How far people agree with the filters' judges (K/DA's human agreement check).

Human labels come as a CSV with the columns ``item_id``, ``filter``, ``label`` and
optionally ``annotator``; labels are the filter's outcomes (consistency: maintained /
shifted; implicit: implicit / none / explicit). For each filter the report gives, over the
items both sides labelled: agreement % and Cohen's kappa of the judge's majority verdict
against each annotator, and against the majority of the annotators ("majority-vote
agreement"). Items whose people tie have no human majority and are left out of it. A
panel that mixes judge kinds (an LLM, a trained classifier, a rule judge) is also measured
per kind (``kinds``): which kind agrees with people is what decides the defaults
(``pipelines/default_judges.py``).

Kappa and agreement are scikit-learn's, alpha the ``krippendorff`` package's. subtle:
``sklearn.metrics`` takes about 2 s to import and the web app imports this module at
start-up (for alpha), so scikit-learn is imported inside the functions that use it.
"""

from __future__ import annotations

import csv
import io
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from pathlib import Path

import krippendorff
import numpy as np

from rolecall.errors import InputFileError
from rolecall.judge.pair_filters import KEEP, LABELS
from rolecall.judge.voting import SAFE_LABEL, majority, most_common
from rolecall.records import Verdict

REQUIRED = ("item_id", "filter", "label")


def percent_agreement(a: Sequence[str], b: Sequence[str]) -> float:
    if len(a) != len(b) or not a:
        raise ValueError("two label lists of the same, non-zero length are needed")
    from sklearn.metrics import accuracy_score  # lazy, see the module docstring

    return float(accuracy_score(list(a), list(b)))


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float:
    """scikit-learn's ``cohen_kappa_score``, (p_o - p_e) / (1 - p_e); 1.0 when both raters
    use a single identical label (p_e = 1: scikit-learn gives NaN and a warning there)."""
    if len(a) != len(b) or not a:
        raise ValueError("two label lists of the same, non-zero length are needed")
    if len(set(a) | set(b)) == 1:
        return 1.0
    from sklearn.metrics import cohen_kappa_score  # lazy, see the module docstring

    return float(cohen_kappa_score(list(a), list(b)))


def krippendorff_alpha(units: Sequence[Sequence[Hashable]]) -> float | None:
    """Krippendorff's alpha for nominal labels (the ``krippendorff`` package); ``units``
    holds each item's labels, one per annotator who labelled it (any number; missing labels
    are simply absent).

    alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c n_k, with o the coincidence
    matrix over the items with two or more labels (each item's ordered label pairs weighted
    1 / (m - 1)) and n_c how often c occurs in it. None when it is undefined: fewer than two
    pairable labels, or a single category everywhere (no disagreement is possible; the
    package raises or returns NaN there).
    """
    pairable = [Counter(unit) for unit in units if len(unit) >= 2]
    categories = sorted({label for counts in pairable for label in counts}, key=repr)
    if len(categories) < 2:
        return None
    # units x categories; who gave a label does not matter at the nominal level
    value_counts = np.array([[counts[c] for c in categories] for counts in pairable])
    return float(krippendorff.alpha(value_counts=value_counts, level_of_measurement="nominal"))


# filter -> the labels a person may give: the judges' outcomes (consistency: maintained or
# shifted; implicit: implicit, none or explicit)
OUTCOMES = {
    name: list(dict.fromkeys(o for words in by.values() for o in words.values()))
    for name, by in LABELS.items()
}


def read_human_labels(path: str | Path) -> dict[str, dict[str, dict[str, str]]]:
    """filter -> item_id -> annotator -> label."""
    from rolecall.formats.spreadsheet import restore
    from rolecall.textfiles import read_text_file

    path = Path(path)
    text = read_text_file(path)  # missing, a folder, not UTF-8 (with the iconv line)
    try:
        reader = csv.DictReader(io.StringIO(text))
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise InputFileError(
                path,
                f"missing column(s) {missing}",
                fix="columns: item_id,filter,label[,annotator]",
                line=1,
            )
        labels: dict = defaultdict(lambda: defaultdict(dict))
        for row in reader:
            # the web app's export quotes cells a spreadsheet would run as formulas
            row = {k: restore(v) if isinstance(v, str) else v for k, v in row.items()}
            if not all((row.get(c) or "").strip() for c in REQUIRED):
                raise InputFileError(path, "empty item_id, filter or label", line=reader.line_num)
            annotator = (row.get("annotator") or "").strip() or "annotator"
            name, label = row["filter"].strip(), row["label"].strip()
            if name not in OUTCOMES:  # a misspelt filter would be a block of 0 items
                raise InputFileError(
                    path, f"unknown filter {name!r}", line=reader.line_num,
                    fix=f"the filter column is one of: {', '.join(OUTCOMES)}",
                )  # fmt: skip
            if label not in OUTCOMES[name]:  # any other word would count as a disagreement
                raise InputFileError(
                    path, f"unknown {name} label {label!r}", line=reader.line_num,
                    fix=f"a {name} label is one of: {', '.join(OUTCOMES[name])}",
                )  # fmt: skip
            labels[name][row["item_id"].strip()][annotator] = label
    except csv.Error as exc:
        raise InputFileError(path, f"broken CSV ({exc})", line=reader.line_num) from None
    return labels


def _pair_stats(judge: list[str], human: list[str]) -> dict:
    if not judge:
        return {"items": 0, "agreement": None, "kappa": None}
    return {
        "items": len(judge),
        "agreement": round(percent_agreement(judge, human), 4),
        "kappa": round(cohen_kappa(judge, human), 4),
    }


def kind_of(vote: Verdict) -> str:
    """The judge kind of a vote; files written before judge kinds existed hold LLM votes
    only, so a vote with no kind is an LLM's."""
    return vote.kind or "llm"


def agreement_report(
    verdicts: dict[str, list[Verdict]], human: dict[str, dict[str, dict[str, str]]]
) -> dict:
    """``verdicts``: filter -> every vote; ``human``: from ``read_human_labels``.

    Per filter: the agreement of the panel's majority (all its votes, as in the run) with
    each annotator and with the people's majority, and when the votes come from judges of
    several kinds (``llm``, ``classifier``, ``rules``), the same for each kind's own
    majority under ``kinds``, so that a panel's judges are measured one kind at a time."""
    report = {}
    for name, items in human.items():
        keep = KEEP.get(name, SAFE_LABEL)  # ties count against keeping, as in the run
        votes = verdicts.get(name, [])
        report[name] = _agreement(votes, items, keep)
        kinds = sorted({kind_of(v) for v in votes})
        if len(kinds) > 1:
            report[name]["kinds"] = {
                kind: _agreement([v for v in votes if kind_of(v) == kind], items, keep)
                for kind in kinds
            }
    return report


def _agreement(votes: list[Verdict], items: dict[str, dict[str, str]], keep: str) -> dict:
    """Agreement of the majority of ``votes`` per item with the people of ``items``."""
    by_item = defaultdict(list)
    for vote in votes:
        by_item[vote.item_id].append(vote)
    judged = {item: majority(v, keep) for item, v in by_item.items()}
    judged = {item: v.label for item, v in judged.items() if v.parse_status == "parsed"}
    annotators = sorted({a for by in items.values() for a in by})
    per_annotator = {}
    for annotator in annotators:
        shared = [i for i, by in items.items() if annotator in by and i in judged]
        per_annotator[annotator] = _pair_stats(
            [judged[i] for i in shared], [items[i][annotator] for i in shared]
        )
    # people who tie have no majority: the item is left out of majority-vote agreement
    human_majority = {
        item: top[0] for item, by in items.items() if len(top := most_common(by.values())) == 1
    }
    shared = [i for i in human_majority if i in judged]
    return {
        "annotators": per_annotator,
        "majority_vote": _pair_stats(
            [judged[i] for i in shared], [human_majority[i] for i in shared]
        ),
        "unmatched_items": sorted(set(items) - set(judged)),
    }
