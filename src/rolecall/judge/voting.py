"""Majority voting over several verdicts on one item (k samples, or k judge models).

Only parsed verdicts vote. The most frequent label wins; a tie between in-bounds and
out-of-bounds is decided for out-of-bounds, because the cost of keeping an unsafe turn as a
positive example is higher than that of dropping a good one. The category of an
out-of-bounds majority is the most frequent category among its votes (first seen on a
tie). No parsed vote at all gives an ``unparsed`` verdict that keeps every raw output.
"""

from __future__ import annotations

import json
from collections import Counter

from rolecall.records import Verdict

SAFE_LABEL, FLAG_LABEL = "in-bounds", "out-of-bounds"


def majority(votes: list[Verdict]) -> Verdict:
    if not votes:
        raise ValueError("majority() needs at least one verdict")
    first = votes[0]
    raw = json.dumps([v.raw_output for v in votes], ensure_ascii=False)
    if len(votes) == 1:
        return first
    parsed = [v for v in votes if v.parse_status == "parsed"]
    if not parsed:
        return Verdict(judge=first.judge, item_id=first.item_id, raw_output=raw,
                       parse_status="unparsed", model=first.model)
    counts = Counter(v.label for v in parsed)
    top = max(counts.values())
    winners = [label for label, n in counts.items() if n == top]
    label = FLAG_LABEL if FLAG_LABEL in winners else winners[0]
    categories = Counter(v.category for v in parsed if v.label == label and v.category)
    category = categories.most_common(1)[0][0] if categories else None
    share = {lab: n / len(parsed) for lab, n in counts.items()}
    return Verdict(judge=first.judge, item_id=first.item_id, label=label, category=category,
                   raw_output=raw, parse_status="parsed", probabilities=share,
                   model=first.model)
