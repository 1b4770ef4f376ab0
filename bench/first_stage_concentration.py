"""How concentrated a bot's first stage is: does it serve a few generic candidates to many
turns (issue #49: "why two retrievers over-serve a few generic candidates")?

For every held-out context of a bot directory (``held_out.jsonl``, the last turn the
user's), the top-1 candidate of each first stage over the bot's own candidate index: the
sentence retriever alone, the e5 partner alone, the two summed (standardised), each with
BM25 fused (the bot's ``lexical_weight``), and BM25 alone on the last user turn (the
classic baseline). Per stage: how many distinct candidates the contexts get, the share of
contexts the five most served take, and how many contexts get exactly their gold
response. A generic candidate served to many turns shows as a high top-5 share.

Usage: python bench/first_stage_concentration.py [--bot runs/demo/bot]
Needs a bot with a partner retriever (make demo builds one). The last line printed is a
JSON object with every number and the targets: the default (pair + BM25) no more
concentrated than the sentence retriever alone, and no fewer exact golds.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np

from rolecall.jsonl import read_jsonl
from rolecall.records import Example
from rolecall.serve.bot import Bot
from rolecall.serve.selection import ResponseSelector, last_user_text

ROOT = Path(__file__).resolve().parents[1]


def stages(selector: ResponseSelector) -> dict[str, ResponseSelector]:
    index, partner, weight = selector.index, selector.partner, selector.lexical_weight
    return {
        "sentence": ResponseSelector(index, k=1, rerank=False),
        "e5": ResponseSelector(partner, k=1, rerank=False),
        "pair": ResponseSelector(index, k=1, rerank=False, partner=partner),
        "sentence + BM25": ResponseSelector(index, k=1, rerank=False, lexical_weight=weight),
        "pair + BM25 (default)": ResponseSelector(
            index, k=1, rerank=False, lexical_weight=weight, partner=partner
        ),
    }


def concentration(served: list[str], gold: list[str]) -> dict:
    counts = Counter(served)
    return {
        "distinct": len(counts),
        "top5_share": round(sum(n for _, n in counts.most_common(5)) / len(served), 4),
        "exact_gold": sum(s == g for s, g in zip(served, gold)),
        "most_served": counts.most_common(3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bot", type=Path, default=ROOT / "runs" / "demo" / "bot")
    args = parser.parse_args()
    bot = Bot.load(args.bot)
    selector = bot.selector
    if selector is None or selector.partner is None:
        raise SystemExit(f"{args.bot}: needs a retriever and a partner retriever (make demo)")
    held = [
        e
        for e in read_jsonl(args.bot / "held_out.jsonl", Example)
        if e.history and e.history[-1].role == "user"
    ]
    gold = [e.response for e in held]
    rows = {}
    for name, stage in stages(selector).items():
        served = [stage.retrieve(e.history, 1)[0].text for e in held]
        rows[name] = concentration(served, gold)
    texts = selector.index.texts
    lexical = selector.lexical
    bm25 = [texts[int(np.argmax(lexical.scores(last_user_text(e.history))))] for e in held]
    rows["BM25 alone"] = concentration(bm25, gold)
    for name, row in rows.items():
        print(
            f"{name:24s} distinct {row['distinct']:3d}/{len(held)}  top-5 share "
            f"{row['top5_share']:.2f}  exact gold {row['exact_gold']}"
        )
        for text, count in row["most_served"]:
            print(f"    {count:3d}  {text[:70]}")
    default, alone = rows["pair + BM25 (default)"], rows["sentence"]
    print(
        json.dumps(
            {
                "bench": "first_stage_concentration",
                "bot": str(args.bot),
                "contexts": len(held),
                "candidates": len(texts),
                "rows": rows,
                "targets": {
                    "default_top5_share": {
                        "value": default["top5_share"],
                        "target": f"<= {alone['top5_share']}",
                        "met": default["top5_share"] <= alone["top5_share"],
                    },
                    "default_exact_gold": {
                        "value": default["exact_gold"],
                        "target": f">= {alone['exact_gold']}",
                        "met": default["exact_gold"] >= alone["exact_gold"],
                    },
                },
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
