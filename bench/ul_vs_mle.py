"""Unlikelihood vs MLE in the paper's setting: in-context out-of-bounds system turns.

The NAACL 2022 paper's Table 8: training the generator with unlikelihood (UL) on
out-of-bounds responses raises their perplexity far more than the in-bounds responses'.
Here on the shipped care-call example (``examples/carecall``):

- **positives**: every in-bounds system turn of the 39 example dialogues with its history,
  except the opening greeting (no history: the negatives never stand there either);
- **negatives**: the 183 hand-written out-of-bounds system turns of
  ``out_of_bounds.jsonl``, each in the real context of the turn it replaces, labelled
  with its spec category's error category (``examples_from_out_of_bounds``);
- the web app's **Fix flow** is the paper's further source of negatives (a rejected bot
  turn with its category); no export of it ships with the project, so none is measured
  here; ``--fix-examples PATH`` adds such an export (the examples JSONL of the web app's
  export page, dialogue ids ``chat-N``) to the same split.

Split **by dialogue** (a seeded shuffle of the dialogue ids, ``--test-share`` of them
held out): the positives and negatives of a held-out dialogue are never trained on.

Models, each scored on the same held-out examples: the base (LoRA adapters at their zero
start, exactly the base model), **MLE** (positives only, alpha 0) and **MLE+UL** for each
``--alphas`` (positives by MLE, negatives by UL). Measured for each: PPL(pos) and
PPL(neg), and greedy replies (``--max-new-tokens``, cut at the first newline) to the
held-out contexts that have a negative: the share of replies that repeat a negative's
content, i.e. hold any Kiwi content morpheme (nouns, verb and adjective stems, adverbs,
numbers, ...: the retrieval tokens of ``retrieval/tokens.py``; no particles or endings) of
the negatives written for that context that is neither in the context's own in-bounds
turn nor anywhere in its history. The same with character 4-grams (spaces and
punctuation removed) is printed next to it. ``--out FILE`` keeps every reply.

Targets (issue 17), for the chosen alpha: the alpha with the highest PPL(neg) among those
whose PPL(pos) is at most 1.10x MLE's; when none is, the one with the lowest PPL(pos):
- PPL(neg) UL / MLE >= 2.0;
- PPL(pos) UL / MLE <= 1.10;
- share of replies with a negative's content morpheme, UL - MLE < 0;
- training step time (forward, loss, backward, optimiser step) MLE+UL / MLE <= 1.15, on
  the very same batches of positives and negatives, alternating the two so that machine
  noise hits both alike (with alpha 0 the negatives' tokens are forwarded but add no
  loss).

Knob: ``--ul-tokens differing`` applies UL only to the tokens of a negative that the
in-bounds turn of its context lacks (MLE and UL then never pull the same token of the
same context in opposite directions); PPL is always over every token.

The earlier version of this bench (K/DA neutral vs implicit sentences after an empty
history, not the paper's setting) is in git history (commit c942d24).

Cost: every example is scored with the last ``--max-turns`` turns of its history (2: the
system turn before and the user turn it answers): on 2 cores to itself a training step
takes ~3 s and ``--epochs 2 --alphas 1,2`` about 15 minutes (several times longer beside
other CPU work); the generator's own default is 10.

Usage: python bench/ul_vs_mle.py [--alphas 1,3] [--epochs 1] [--batch-size 8]
       [--lr 1e-3] [--max-turns 2] [--test-share 0.3] [--max-new-tokens 24]
       [--timing-batches 2] [--ul-tokens all|differing] [--no-base]
       [--fix-examples PATH] [--out FILE]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from rolecall.records import Example
from rolecall.train.generator import Generator, GeneratorSettings
from rolecall.train.loop import TrainConfig
from rolecall.train.losses.unlikelihood import IGNORE

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ is not a package
from ul_data import (  # noqa: E402
    GRAMS,
    NGRAM,
    Context,
    carecall_examples,
    contexts_with_negatives,
    repeat_share,
    split_by_dialogue,
)

POS_LIMIT, NEG_TARGET, STEP_LIMIT = 1.10, 2.0, 1.15

# ---- targets ---------------------------------------------------------------------------


def choose_alpha(results: dict[str, dict], names: Sequence[str]) -> str:
    """Of the MLE+UL runs ``names``: the highest PPL(neg) among those whose PPL(pos) is at
    most ``POS_LIMIT`` x MLE's; when none is, the lowest PPL(pos)."""
    mle_pos = results["MLE"]["ppl_positive"]
    fine = [n for n in names if results[n]["ppl_positive"] / mle_pos <= POS_LIMIT]
    if fine:
        return max(fine, key=lambda n: results[n]["ppl_negative"])
    return min(names, key=lambda n: results[n]["ppl_positive"])


def targets(results: dict[str, dict], chosen: str, step_ratio: float | None) -> dict:
    """The issue's targets for the chosen MLE+UL run against MLE (house form)."""
    ul, mle = results[chosen], results["MLE"]
    neg = ul["ppl_negative"] / mle["ppl_negative"]
    pos = ul["ppl_positive"] / mle["ppl_positive"]
    out = {
        "ppl_neg_ul_over_mle": {
            "value": round(neg, 4),
            "target": f">= {NEG_TARGET}",
            "met": neg >= NEG_TARGET,
        },
        "ppl_pos_ul_over_mle": {
            "value": round(pos, 4),
            "target": f"<= {POS_LIMIT}",
            "met": pos <= POS_LIMIT,
        },
    }
    if "repeat_morph" in ul and "repeat_morph" in mle:
        diff = ul["repeat_morph"] - mle["repeat_morph"]
        out["reply_negative_morpheme_share_ul_minus_mle"] = {
            "value": round(diff, 4),
            "target": "< 0",
            "met": diff < 0,
        }
    if step_ratio is not None:
        out["step_time_ul_over_mle"] = {
            "value": round(step_ratio, 4),
            "target": f"<= {STEP_LIMIT}",
            "met": step_ratio <= STEP_LIMIT,
        }
    return out


# ---- runs ------------------------------------------------------------------------------


def evaluate(
    generator: Generator,
    test: Sequence[Example],
    contexts: Sequence[Context],
    max_new_tokens: int,
    batch_size: int = 16,
) -> dict:
    """PPL(pos), PPL(neg), their ratio, and the greedy replies' ``repeat_share``."""
    row = {k: v for k, v in generator.perplexity(test, batch_size, progress=True).items()}
    if contexts:
        prompts = [generator.prompt(c.history) for c in contexts]
        replies = generator.complete(prompts, max_new_tokens, batch_size=batch_size)
        for name, grams in GRAMS.items():
            row[f"repeat_{name}"] = repeat_share(replies, contexts, grams)
        row["replies"] = replies
    return row


def run_all(
    base: tuple,
    train: Sequence[Example],
    test: Sequence[Example],
    alphas: Sequence[float],
    settings: GeneratorSettings,
    config: TrainConfig,
    max_new_tokens: int,
    ul_tokens: str = "all",
    with_base: bool = True,
) -> tuple[dict[str, dict], Generator]:
    """Base, MLE and MLE+UL per alpha on copies of ``base``; returns the results by name
    and the last generator (for the step timing)."""
    contexts = contexts_with_negatives(test)
    results: dict[str, dict] = {}
    generator = None
    runs = [("base", None)] if with_base else []
    runs += [("MLE", 0.0)] + [(f"MLE+UL a={a:g}", a) for a in alphas]
    for name, alpha in runs:
        model = copy.deepcopy(base[0])
        generator = Generator.create(
            (model, base[1]), settings.model_copy(update={"alpha": alpha or 0.0}), config.seed
        )
        row: dict = {"alpha": alpha}
        if alpha is not None:
            started = time.perf_counter()
            if alpha and ul_tokens == "differing":
                # subtle: only while training; perplexity() must see every token again
                generator.batch = differing_batch(generator, train)
            history = generator.fit(train, config, progress=True)
            generator.__dict__.pop("batch", None)
            row.update(
                steps=history["steps"],
                train_seconds=round(time.perf_counter() - started, 1),
                first_loss=round(history["first_loss"], 4),
                last_loss=round(history["last_loss"], 4),
            )
        row.update(evaluate(generator, test, contexts, max_new_tokens))
        results[name] = row
        shown = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}
        print(f"{name}: { {k: v for k, v in shown.items() if k != 'replies'} }", flush=True)
    assert generator is not None
    return results, generator


def differing_batch(generator: Generator, train: Sequence[Example]):
    """``generator.batch`` that counts a negative's tokens for UL only where the in-bounds
    turn of the same context (a training positive) lacks them: the endings and words both
    share are then pulled up by MLE alone, never pushed down by UL at the same time."""
    tok, original = generator.tokenizer, generator.batch
    in_bounds = {
        (e.dialogue_id, len(e.history)): e.response for e in train if e.label == "positive"
    }

    def batch(examples: Sequence[Example]) -> dict:
        out = original(examples)
        for row, e in enumerate(examples):
            good = in_bounds.get((e.dialogue_id, len(e.history)))
            if e.label != "negative" or good is None:
                continue
            ids = tok(" " + good.strip() + "\n", add_special_tokens=False)["input_ids"]
            shared = torch.tensor(sorted(set(ids) | {tok.eos_token_id}))
            labels = out["labels"][row]
            labels[torch.isin(labels, shared)] = IGNORE
        return out

    return batch


def step_seconds(generator: Generator, batches: list[list[Example]], lr: float) -> list[float]:
    """Seconds of one full training step per batch (adapters restored afterwards)."""
    state = {k: v.clone() for k, v in generator.model.state_dict().items() if "lora" in k}
    params = [p for p in generator.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr)
    generator.model.train()
    times = []
    for batch in batches:
        started = time.perf_counter()
        loss = generator.loss(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - started)
    generator.model.load_state_dict(state, strict=False)
    return times


def step_ratio(
    generator: Generator,
    train: Sequence[Example],
    batch_size: int,
    count: int,
    lr: float,
    seed: int,
) -> tuple[float, dict[str, float]] | None:
    """Median step time MLE+UL / MLE on the same ``count`` mixed batches, in two rounds of
    alternating order, after one warm-up step; None when ``count`` is 0."""
    if count <= 0:
        return None
    mixed = list(train)
    random.Random(seed).shuffle(mixed)
    batches = [mixed[i * batch_size : (i + 1) * batch_size] for i in range(count)]
    ul_loss = generator.loss_fn
    mle_loss = type(ul_loss)(0.0)
    timings: dict[str, list[float]] = {"MLE": [], "MLE+UL": []}
    step_seconds(generator, batches[:1], lr)  # warm-up
    for order in (
        (("MLE", mle_loss), ("MLE+UL", ul_loss)),
        (("MLE+UL", ul_loss), ("MLE", mle_loss)),
    ):
        for name, loss in order:
            generator.loss_fn = loss
            timings[name] += step_seconds(generator, batches, lr)
    generator.loss_fn = ul_loss
    median = {name: statistics.median(values) for name, values in timings.items()}
    return median["MLE+UL"] / median["MLE"], median


# ---- report ------------------------------------------------------------------------------


def table(results: dict[str, dict]) -> str:
    mle = results["MLE"]
    lines = [
        f"{'model':14s}{'PPL(pos)':>10s}{'PPL(neg)':>10s}{'neg/pos':>9s}"
        f"{'pos/MLE':>9s}{'neg/MLE':>9s}{'rep.morph':>10s}{'rep.char4':>10s}{'train s':>9s}"
    ]
    for name, row in results.items():
        lines.append(
            f"{name:14s}{row['ppl_positive']:10.2f}{row['ppl_negative']:10.2f}"
            f"{row['ppl_ratio']:9.3f}{row['ppl_positive'] / mle['ppl_positive']:9.3f}"
            f"{row['ppl_negative'] / mle['ppl_negative']:9.3f}"
            f"{row.get('repeat_morph', float('nan')):10.3f}"
            f"{row.get('repeat_char4', float('nan')):10.3f}{row.get('train_seconds', 0.0):9.1f}"
        )
    return "\n".join(lines)


def write_replies(path: Path, contexts: Sequence[Context], results: dict[str, dict]) -> None:
    """One JSON line per held-out context: its negatives, in-bounds turn, every reply."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as file:
        for i, c in enumerate(contexts):
            line = {
                "dialogue": c.dialogue_id,
                "turn": c.turn,
                "last_user": c.history[-1].text if c.history else "",
                "negatives": c.negatives,
                "in_bounds": c.in_bounds,
                "replies": {name: row["replies"][i] for name, row in results.items()},
            }
            file.write(json.dumps(line, ensure_ascii=False) + "\n")


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alphas", default="1,3", help="MLE+UL alphas, comma-separated")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--max-turns", type=int, default=2, help="history turns in the prompt")
    parser.add_argument("--test-share", type=float, default=0.3)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--timing-batches", type=int, default=2, help="0: no step timing")
    parser.add_argument(
        "--ul-tokens",
        choices=("all", "differing"),
        default="all",
        help="UL on every token of a negative, or only on those its context's in-bounds turn lacks",
    )
    parser.add_argument("--no-base", action="store_true", help="skip the base model's row")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--fix-examples", type=Path, help="the web app's examples export")
    parser.add_argument(
        "--out", type=Path, help="write each context's negatives and every model's reply (JSONL)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None, base: tuple | None = None) -> dict:
    """The bench; ``base`` = a loaded (model, tokenizer) instead of the embedded Gemma
    (the test's tiny model). Returns the JSON object it prints last."""
    args = arguments(argv)
    torch.set_num_threads(args.threads)
    alphas = [float(a) for a in args.alphas.split(",") if a.strip()]
    positives, negatives = carecall_examples()
    extra = []
    if args.fix_examples:
        from rolecall.train.data import read_examples

        extra = read_examples(args.fix_examples)
    train, test = split_by_dialogue(positives + negatives + extra, args.test_share, args.seed)
    counts = {
        side: {label: sum(e.label == label for e in part) for label in ("positive", "negative")}
        for side, part in (("train", train), ("test", test))
    }
    counts["train"]["dialogues"] = len({e.dialogue_id for e in train})
    counts["test"]["dialogues"] = len({e.dialogue_id for e in test})
    counts["test"]["contexts_with_negatives"] = len(contexts_with_negatives(test))
    print(f"data: {counts}", flush=True)

    started = time.perf_counter()
    if base is None:
        from rolecall.llm.hf import load_hf_model

        base = load_hf_model("embedded")
        print(f"embedded Gemma 3 270M loaded in {time.perf_counter() - started:.1f} s", flush=True)
        settings = GeneratorSettings(max_length=256, response_max=64, max_turns=args.max_turns)
    else:
        settings = GeneratorSettings(
            base="tiny", max_length=64, response_max=16, max_turns=args.max_turns
        )
    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed)
    results, last = run_all(
        base,
        train,
        test,
        alphas,
        settings,
        config,
        args.max_new_tokens,
        args.ul_tokens,
        not args.no_base,
    )
    names = [n for n in results if n.startswith("MLE+UL")]
    chosen = choose_alpha(results, names)
    timing = step_ratio(last, train, args.batch_size, args.timing_batches, args.lr, args.seed)

    print("\n" + table(results))
    print(
        f"rep.: share of greedy replies to the {counts['test']['contexts_with_negatives']} "
        "held-out contexts with a negative that hold a Kiwi content morpheme (morph) or a "
        f"character {NGRAM}-gram (char4) of that context's negatives absent from its "
        "in-bounds turn and its history"
    )
    print(
        f"chosen: {chosen} (the highest PPL(neg) among alphas with PPL(pos) <= "
        f"{POS_LIMIT} x MLE's; none such: the lowest PPL(pos))"
    )
    if timing:
        print(
            f"training step, median of {2 * args.timing_batches} on the same batches: MLE "
            f"{timing[1]['MLE']:.3f} s, MLE+UL {timing[1]['MLE+UL']:.3f} s, ratio "
            f"{timing[0]:.3f} (target <= {STEP_LIMIT})"
        )
    goals = targets(results, chosen, timing[0] if timing else None)
    for name, goal in goals.items():
        print(
            f"target {name}: {goal['value']} {goal['target']}: "
            + ("met" if goal["met"] else "NOT met")
        )
    for name in ("MLE", chosen):
        print(f"\n{name} replies (first 5):")
        for context, reply in list(zip(contexts_with_negatives(test), results[name]["replies"]))[
            :5
        ]:
            print(f"  [{context.dialogue_id} turn {context.turn}] {reply}")
    report = {
        "bench": "ul_vs_mle",
        "setting": "carecall in-context out-of-bounds turns, split by dialogue",
        "data": counts,
        "config": {
            "alphas": alphas,
            "epochs": args.epochs,
            "batch_size": args.batch_size,
            "lr": args.lr,
            "max_turns": args.max_turns,
            "ul_tokens": args.ul_tokens,
            "test_share": args.test_share,
            "max_new_tokens": args.max_new_tokens,
            "seed": args.seed,
            "repeat": "Kiwi content morphemes (target); char 4-grams",
        },
        "results": {
            name: {
                k: (round(v, 4) if isinstance(v, float) else v)
                for k, v in row.items()
                if k != "replies"
            }
            for name, row in results.items()
        },
        "chosen": chosen,
        "step_seconds": {k: round(v, 4) for k, v in timing[1].items()} if timing else None,
        "targets": goals,
    }
    if args.out:
        write_replies(args.out, contexts_with_negatives(test), results)
    print(json.dumps(report, ensure_ascii=False))
    return report


if __name__ == "__main__":
    main()
