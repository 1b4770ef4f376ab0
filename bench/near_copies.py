"""Where a generated dialogue stops being its own: the near-copy limit of one-shot
generation (``generate/dialogues.py``, ``max_copy``; issue #48 item 9).

The measure: the share of a dialogue's character 4-grams (spaces removed) found in another
dialogue (``copied_share``). Measured here on dialogues that are certainly not copies of
each other (every ordered pair of the 39 care-call dialogues written for the project) and,
given a dialogue run (``--run``, e.g. the demo's ``runs/demo/dialogues``), on every
generation against the example it was shown, accepted or rejected. The limit must sit
well above the first and below the copies the run holds.

Usage: python bench/near_copies.py [--run runs/demo/dialogues]
The last line printed is a JSON object with the numbers and the targets.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np

from rolecall.generate.dialogues import MAX_COPY, _turns, copied_share
from rolecall.jsonl import read_jsonl
from rolecall.records import Dialogue

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "carecall" / "dialogues.jsonl"


def generations(run: Path, examples: dict[str, Dialogue]) -> list[dict]:
    """Every generation of a run against its example: accepted ones and rejected ones
    whose text still parses into turns."""
    found = []
    for name in ("dialogues.jsonl", "rejected.jsonl"):
        path = run / name
        if not path.is_file():
            continue
        for row in read_jsonl(path):
            example = examples.get((row.get("metadata") or {}).get("example_id"))
            turns = row.get("turns") or [t.model_dump() for t in _turns(row.get("raw", ""))]
            if example is None or not turns:
                continue
            dialogue = Dialogue(id=row["id"], turns=turns)
            share = copied_share(dialogue, example)
            found.append({"id": row["id"], "file": name, "share": round(share, 3),
                          "reason": row.get("reason")})  # fmt: skip
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, default=None)
    args = parser.parse_args()
    dialogues = list(read_jsonl(EXAMPLES, Dialogue))
    pairs = np.array([copied_share(a, b) for a, b in itertools.permutations(dialogues, 2)])
    distinct = {
        "pairs": len(pairs),
        "max": round(float(pairs.max()), 3),
        "p99": round(float(np.percentile(pairs, 99)), 3),
        "median": round(float(np.median(pairs)), 3),
    }
    print(f"{len(dialogues)} written dialogues, {len(pairs)} ordered pairs: copied share "
          f"max {distinct['max']}, p99 {distinct['p99']}, median {distinct['median']}")  # fmt: skip
    generated = generations(args.run, {d.id: d for d in dialogues}) if args.run else []
    for row in generated:
        print(f"  {row['id']} ({row['file']}): {row['share']}")
    margin = round(MAX_COPY / distinct["max"], 2)
    result = {
        "bench": "near_copies",
        "limit": MAX_COPY,
        "distinct_dialogues": distinct,
        "generated": generated,
        "targets": {
            "limit_over_distinct_max": {"value": margin, "target": ">= 2.0", "met": margin >= 2},
        },
    }
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
