"""``rolecall eval``: G-Eval, filter-human agreement, unanswerable contexts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Optional

import typer

from rolecall.cli.common import (
    CACHE_OPTION,
    ENGINE_OPTION,
    FEATURES_CACHE_OPTION,
    LANGUAGE_OPTION,
    MODEL_HELP,
    PROGRESS_OPTION,
    RAY_ADDRESS_OPTION,
    WORKERS_OPTION,
    Engine,
    Language,
    command_models,
    err,
    out,
    output_file,
)
from rolecall.cli.train_options import print_metrics
from rolecall.errors import ConfigError

eval_app = typer.Typer(
    help="Evaluation: G-Eval, judge-human agreement, unanswerable contexts.", no_args_is_help=True
)


@eval_app.command("unanswerable")
def unanswerable_command(
    examples: Path = typer.Argument(..., help="held-out examples JSONL (positives used)"),
    reranker_dir: Path = typer.Option(..., "--reranker", help="from 'train reranker'"),
    index_dir: Path = typer.Option(
        ..., "--index", help="a candidate index (from 'train retriever') for hard negatives"
    ),
    methods: str = typer.Option(
        "mc-dropout,ppl",
        help="comma-separated: mc-dropout, ppl, cosine (the sentence encoder's, untrained), "
        "e5 (multilingual-e5-small's), cosine+reranker, e5+reranker (a cosine and the "
        "reranker standardised and summed; reports the scales a bot needs)",
    ),
    model: Optional[str] = typer.Option(
        None, "--model", "-m", help="the LM of the ppl method (default: the embedded model)"
    ),
    share: float = typer.Option(0.5, help="golds replaced by hard negatives (App. C)"),
    passes: int = typer.Option(20, min=2, help="MC dropout passes"),
    limit: Optional[int] = typer.Option(None, min=2, help="first N positives only"),
    roc: Optional[Path] = typer.Option(
        None, help="save the ROC curves here (PNG)", callback=output_file
    ),
    seed: int = typer.Option(0, help="random seed: the golds replaced and the MC dropout masks"),
    features_cache: Optional[Path] = FEATURES_CACHE_OPTION,
):
    """Unanswerable contexts: build the Appendix C validation set, calibrate each method's
    threshold at its max-F1 point, report F1 and ROC AUC (and plot the ROC curves)."""
    from rolecall.llm.opening import open_llm
    from rolecall.serve.candidates import CandidateIndex
    from rolecall.serve.unanswerable import (
        PerplexityDetector,
        compare_detectors,
        detector_named,
        index_hard_negatives,
        validation_items,
    )
    from rolecall.train.data import read_examples, selection_pairs
    from rolecall.train.jobs import features_cache as features_cache_dir
    from rolecall.train.reranker import Reranker

    wanted = [m.strip() for m in methods.split(",") if m.strip()]
    known = ("mc-dropout", "ppl", "cosine", "cosine+reranker", "e5", "e5+reranker")
    unknown = sorted(set(wanted) - set(known))
    if unknown or not wanted:
        raise ConfigError(
            f"unknown method(s) {unknown or methods!r}",
            fix=f"use one or more of {', '.join(known)} (comma-separated)",
        )
    pairs = selection_pairs(read_examples(examples))[:limit]
    index = CandidateIndex.load(index_dir)

    items = validation_items(pairs, index_hard_negatives(index), share, seed)
    reranker = None
    if {"mc-dropout", "cosine+reranker", "e5+reranker"} & set(wanted):
        reranker = Reranker.load(reranker_dir, features_cache_dir(features_cache))
    detectors = [
        PerplexityDetector(open_llm(model))
        if method == "ppl"
        else detector_named(method.replace("-", "_"), reranker, passes, seed=seed)
        for method in known
        if method in wanted
    ]
    results = compare_detectors(detectors, items, roc)
    print_metrics(
        {
            "items": len(items),
            "unanswerable": sum(i["label"] for i in items),
            "roc_png": str(roc) if roc else None,
            **results,
        }
    )


def _geval_input(path: Path, limit: Optional[int]):
    """(texts, neutrals or None): K/DA CSV or Pair JSONL give pairs, the JSONL of 'detox
    rewrite' its outputs (against the reference, else the input); other files sentences."""
    from rolecall.cli.detox import read_rewrites
    from rolecall.formats.kda import read_kda_csv
    from rolecall.jsonl import read_jsonl
    from rolecall.records import Pair
    from rolecall.textfiles import read_corpus

    if path.suffix == ".csv":
        pairs = read_kda_csv(path)
    elif path.suffix == ".jsonl" and "output" in next(read_jsonl(path), {}):
        rows = read_rewrites(path)[:limit] if limit else read_rewrites(path)
        return [r["output"] for r in rows], [r.get("reference", r["input"]) for r in rows]
    elif path.suffix == ".jsonl":
        pairs = list(read_jsonl(path, Pair))
    else:
        texts = [t.strip() for _, t in read_corpus(path) if t.strip()]
        return texts[:limit] if limit else texts, None
    pairs = pairs[:limit] if limit else pairs
    return [p.toxic for p in pairs], [p.neutral for p in pairs]


@eval_app.command("geval")
def eval_geval(
    files: list[Path] = typer.Argument(
        ..., help="K/DA CSV (neutral,implicit), Pair JSONL, or sentences one a line"
    ),
    criteria: str = typer.Option(
        "overall,implicit,consistency,fluency",
        help="comma-separated: overall, implicit, consistency (pairs only: skipped for a file "
        "of sentences), fluency",
    ),
    model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
    mode: Literal["auto", "score", "logprobs", "sample"] = typer.Option(
        "auto", help="how the LLM rates: auto, score, logprobs or sample"
    ),
    samples: int = typer.Option(5, min=1, help="answers per item in sample mode"),
    limit: Optional[int] = typer.Option(None, min=1, help="first N items of each file"),
    language: Language = LANGUAGE_OPTION,
    cache: Optional[str] = CACHE_OPTION,
    as_json: bool = typer.Option(False, "--json", help="every item's score as JSON"),
    progress: bool = PROGRESS_OPTION,
    engine_name: Engine = ENGINE_OPTION,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    workers: int = WORKERS_OPTION,
):
    """Score datasets 1-5 per criterion and compare them in one table."""
    from dataclasses import asdict

    from rich.table import Table

    from rolecall.eval.geval import geval, summarise

    wanted = [c.strip() for c in criteria.split(",") if c.strip()]
    opened = command_models(
        engine_name, cache, ray_address=ray_address, workers=workers, progress=progress
    )
    llm = opened.judge_llm(model)
    table = Table(title=f"G-Eval ({llm.model_id})")
    table.add_column("dataset")
    for criterion in wanted:
        table.add_column(criterion, justify="right")
    everything = {}
    for path in files:
        texts, neutrals = _geval_input(path, limit)
        usable = [c for c in wanted if c != "consistency" or neutrals is not None]
        results = geval(llm, texts, neutrals, usable, mode, samples, language, progress)
        summary = summarise(results)
        everything[str(path)] = {"summary": summary, "items": [asdict(r) for r in results]}
        cells = [
            f"{summary[c]['mean']:.2f} ({summary[c]['mode']}, n={summary[c]['scored']})"
            if c in summary and summary[c]["mean"] is not None
            else "-"
            for c in wanted
        ]
        table.add_row(path.name, *cells)
    if as_json:
        out.print(json.dumps(everything, ensure_ascii=False), markup=False, highlight=False)
    else:
        out.print(table)
    err.print(f"{llm.model_id}: {llm.stats.summary()}")


@eval_app.command("agreement")
def eval_agreement(
    run_dir: Path = typer.Option(..., "--run", help="a filtered kda run"),
    labels: Path = typer.Option(..., help="CSV: item_id,filter,label[,annotator]"),
):
    """Agreement %, Cohen's kappa and majority-vote agreement of people with each filter,
    and with each judge kind (llm, classifier, rules) of a panel that mixes kinds."""
    from rolecall.eval.agreement import agreement_report, read_human_labels
    from rolecall.jsonl import read_jsonl
    from rolecall.records import Verdict
    from rolecall.rundir import Files

    human = read_human_labels(labels)
    verdicts = {}
    for name in human:
        path = run_dir / Files.verdicts_of(name)
        verdicts[name] = list(read_jsonl(path, Verdict)) if path.exists() else []
    out.print(
        json.dumps(agreement_report(verdicts, human), ensure_ascii=False, indent=2),
        markup=False,
        highlight=False,
    )
