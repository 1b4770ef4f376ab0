"""The embedded LLM's judges on bench/judges.py's sets: one pass of scoring calls per set,
read twice (as it is and calibrated on content-free inputs). A helper of bench/judges.py,
not a benchmark of its own."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rolecall.judge.labels import content_free_prior, label_requests, pick_label
from rolecall.judge.out_of_bounds import IN_BOUNDS, OUT_OF_BOUNDS, Item, make_judge
from rolecall.judge.pair_filters import CONTENT_FREE, calibrate, make_pair_judge
from rolecall.llm import LLM
from rolecall.records import Pair


@dataclass
class Row:
    """One judge's predictions on a set (all items, or the LLM's subset) and its speed."""

    predicted: list[str]
    seconds_per_item: float | None  # None: not measured (every LLM call was cached)
    note: str = ""


Reader = Callable[[Any, list], str]


def llm_pass(llm: LLM, requests: list[list], description: str, progress: bool):
    """Every item's scoring completions (None where a call failed) and the seconds per item
    of the uncached calls (None: all cached)."""
    flat = [r for per_item in requests for r in per_item]
    calls = llm.stats.calls
    started = time.perf_counter()
    results = llm.generate(flat, progress=progress, description=description)
    seconds, fresh = time.perf_counter() - started, llm.stats.calls - calls
    out, start = [], 0
    for per_item in requests:
        samples = [s[0] for s in results[start : start + len(per_item)]]
        start += len(per_item)
        out.append([s.completion for s in samples] if all(s.ok for s in samples) else None)
    per_item = seconds / fresh * len(flat) / max(len(requests), 1) if fresh else None
    return out, per_item


def llm_rows(llm, items, format_input, readers: dict[str, Reader], what: str, progress: bool):
    """One row per reader from one pass of scoring calls (the readings differ only in the
    prior they divide out); a failed call reads as ``failed`` (wrong for every gold)."""
    completions, per_item = llm_pass(llm, [format_input(x) for x in items], what, progress)
    failed = sum(c is None for c in completions)
    note = f"{failed} failed calls" if failed else ""
    return {
        key: Row(
            [read(x, c) if c else "failed" for x, c in zip(items, completions)], per_item, note
        )
        for key, read in readers.items()
    }


def pair_filter_rows(llm, name: str, inputs: list, mapping: dict, progress: bool) -> dict:
    judge = make_pair_judge(name, llm.backend, "ko", mode="score")
    calibrated = calibrate(llm, judge)
    pairs = [
        Pair(neutral=x[0], toxic=x[1]) if isinstance(x, tuple) else Pair(neutral=x, toxic=x)
        for x in inputs
    ]

    def reader(j) -> Reader:
        return lambda pair, comps: mapping.get(
            label := j.parse_output(pair, comps, llm.model_id).label, label
        )

    readers = {"llm": reader(judge), "llm_calibrated": reader(calibrated)}
    return llm_rows(llm, pairs, judge.format_input, readers, f"{name} filter", progress)


def out_of_bounds_rows(llm, spec, items: list[Item], progress: bool) -> dict:
    judge = make_judge(spec, llm.backend, mode="score")
    labels = judge.labels
    values = {"outline": spec.outline.strip(), "categories": spec.categories, "history": ()}
    prompts = [judge.template.render(**values, response=text) for text in CONTENT_FREE]
    requests = [r for prompt in prompts for r in label_requests(prompt, labels)]
    samples = [s[0] for s in llm.generate(requests)]
    if not all(s.ok for s in samples):
        raise SystemExit(f"calibrating the out-of-bounds judge failed: {samples[0].error}")
    prior = content_free_prior(prompts, labels, [s.completion for s in samples])

    def calibrated(item, comps) -> str:
        return IN_BOUNDS if pick_label(labels, comps, prior)[0] == labels[0] else OUT_OF_BOUNDS

    readers = {
        "llm": lambda item, comps: judge.parse_output(item, comps, llm.model_id).label,
        "llm_calibrated": calibrated,
    }
    return llm_rows(llm, items, judge.format_input, readers, "out-of-bounds judge", progress)
