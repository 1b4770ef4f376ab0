"""The tables bench/judges.py prints: per set, every judge's accuracy, macro-F1 and speed,
on all items and on the LLM's items; recall per spec category (out_of_bounds) and accuracy
per kind of edit (the hard consistency set). A helper of bench/judges.py, not a benchmark
of its own."""

from __future__ import annotations

from typing import Any

NAMES = {
    "trained": "trained judge (its default views)",
    "tfidf": "baseline (tfidf chars)",
    "kda_implicit": "K/DA implicit judge (info)",
    "sentence": "trained judge + sentence (info)",
    "e5": "trained judge + e5 (info)",
    "ngrams": "trained judge, n-grams only (info)",
    "no_content": "trained judge, no content view (info)",
    "rules": "rules:carecall",
    "llm": "LLM score",
    "llm_calibrated": "LLM score, calibrated",
}

LINE = "{:40s}{:>7}{:>10}{:>10}{:>12}{:>12}  {}"


def print_table(judge_set: Any, result: dict) -> None:
    """The set's table: every judge on all items (and on the LLM's items), then per spec
    category or per kind of edit where the set has them."""
    print(f"\n== {judge_set.name}: {judge_set.title}")
    print(LINE.format("judge", "items", "accuracy", "macro-F1", "s/1k items", "items/min", ""))
    parts = [("all items", result["judges"])]
    if "llm_subset" in result:
        subset = result["llm_subset"]
        parts.append((f"the LLM's {subset['items']} items", subset["judges"]))
    for where, judges in parts:
        print(f"-- {where}")
        for key, m in judges.items():
            fast = "items_per_min" in m
            print(
                LINE.format(
                    NAMES[key],
                    m["items"],
                    f"{m['accuracy']:.3f}",
                    f"{m['macro_f1']:.3f}",
                    f"{m['seconds_per_1000']:.2f}" if fast else "cached",
                    f"{m['items_per_min']:,}" if fast else "",
                    m.get("note", ""),
                )
            )
    if judge_set.categories is not None:
        print_recall(parts)
    if judge_set.kinds is not None:
        print("accuracy per kind of edit (n)")
        for name, judges in parts[:1]:
            for key, found in judges.items():
                cells = [
                    f"{k} {v['accuracy']:.3f} ({v['n']})" for k, v in found["kind_accuracy"].items()
                ]
                print(f"  {NAMES.get(key, key):40s}" + "  ".join(cells))


def print_recall(parts: list[tuple[str, dict]]) -> None:
    rows = [
        (f"{NAMES[key]}{'' if where == 'all items' else ' (LLM items)'}", m["category_recall"])
        for where, judges in parts
        for key, m in judges.items()
    ]
    categories = sorted({c for _, recall in rows for c in recall})
    print("recall of the out-of-bounds turns, per spec category: share flagged (n)")
    widths = [max(len(c), 11) + 2 for c in categories]
    print(f"{'judge':44s}" + "".join(f"{c:>{w}s}" for c, w in zip(categories, widths)))
    for name, recall in rows:
        cells = [
            f"{recall[c]['recall']:.2f} ({recall[c]['n']})" if c in recall else ""
            for c in categories
        ]
        print(f"{name:44s}" + "".join(f"{cell:>{w}s}" for cell, w in zip(cells, widths)))
