"""``rolecall bot run BOT.yaml``: a served bot directory built from example sources, in
stages, resumable (issue 47; the config and the sources: ``bot_sources.py``).

1. ``examples``: the sources merged, exact duplicates dropped, counted per source, split by
   dialogue into ``examples.jsonl`` (training) and ``held_out.jsonl``;
2. ``guard``: each out-of-bounds classifier the config names (``tfidf``: character
   TF-IDF + LR, seconds; ``sentence``: a head over the frozen sentence encoder with
   TF-IDF beside it; ``embedded``: over the frozen embedded Gemma, slow on a CPU) fitted
   on the training examples and scored on the dialogues its job holds out; the best ROC
   AUC (ties: F1 at its held-out threshold, then the config's order) is the bot's
   ``classifier/``, every candidate's numbers in the card;
3. ``retriever``: the retriever of the config's backbone and its candidate index, and the
   partner backbone's (``partner_retriever/``; by default e5 beside the sentence encoder:
   the served first stage sums the two retrievers' scores, then fuses BM25's);
4. ``reranker``: on hard negatives the index mines;
5. ``unanswerable``: each detector (``serve/unanswerable.METHODS``: MC dropout, each
   encoder's cosine alone and with the reranker) calibrated on the held-out dialogues (max
   F1); the best ROC AUC is kept;
6. ``checks``: the user-turn checks (``train/user_checks.py``), when the config gives
   their training turns and the spec declares them;
7. ``bot``: the served candidate pool (the held-out dialogues' replies join it, as a bot
   built for use would serve them), a copy of the spec, ``bot.json`` and the model card
   (``card.md``, ``card.json``: sources and counts, settings, every part's held-out
   numbers, the rolecall version).

A stage whose results are in the manifest is not run again: a run killed in any stage and
run again finishes with the same bot. With ``versions`` (the default) ``out`` holds the
bot's versions, ``v1``, ``v2`` ...: a run resumes the newest when it has the same settings,
spec and source files, and starts the next one otherwise, so a version is never
overwritten. Without, ``out`` is the bot directory, and one started with other settings
is refused unless the caller replaces it (``replace_stale``: the demo, whose examples
change with its options).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rolecall.errors import ChangedSettings, ConfigError, InputFileError
from rolecall.pipelines.bot_sources import (
    BotRunConfig,
    merged_examples,
    partner_of,
    sources_digest,
)
from rolecall.pipelines.steps import check_until, run_steps
from rolecall.rundir import (
    MANIFEST,
    OWN_DIRECTORY,
    RunDir,
    changed_settings,
    made_by,
    other_kind,
    write_json,
)
from rolecall.serve.bot import PARTNER

COMMAND = "bot run"
STAGES = ("examples", "guard", "retriever", "reranker", "unanswerable", "checks", "bot")
MIN_AUC = 0.6  # below this the unanswerable threshold is no better than a coin
TRAIN_FILE, HELD_OUT_FILE = "examples.jsonl", "held_out.jsonl"
CANDIDATES = "candidates"  # the guard's candidates, each in its own folder
SPEC_COPY = "spec.yaml"


@dataclass
class _Run:
    config: BotRunConfig
    run: RunDir
    spec: Any
    progress: bool
    say: Callable[[str], None]

    @property
    def out(self) -> Path:
        return self.run.path

    def done(self, stage: str) -> dict | None:
        """The stage's recorded results when it finished in an earlier run."""
        return (self.run.manifest["stages"].get(stage) or {}).get("counts")

    @property
    def features(self) -> Path:
        from rolecall.train.jobs import features_cache

        return features_cache(Path(self.config.features) if self.config.features else None)

    def job(self, name: str):
        from rolecall.train import jobs

        return jobs.Job(
            self.out / TRAIN_FILE, self.out / name, self.features, self.progress,
            checkpoint_every=None,
        )  # fmt: skip


def run_settings(config: BotRunConfig) -> dict[str, Any]:
    """What makes this bot: the config, the bytes of its spec and sources, and the
    library's training defaults (a change of any is another bot)."""
    from rolecall.rundir import text_hash
    from rolecall.train import jobs
    from rolecall.train.classifier import ClassifierSettings
    from rolecall.train.reranker import RerankerSettings
    from rolecall.train.retriever import RetrieverSettings
    from rolecall.train.settings import RERANKER_TRAINING

    choice = jobs.BackboneChoice(config.backbone)
    defaults = [
        ClassifierSettings(),
        RetrieverSettings(),
        RerankerSettings(),
        RERANKER_TRAINING,
        jobs.retriever_config(choice),
        jobs.classifier_config(jobs.BackboneChoice(config.backbone, frozen=True)),
    ]
    partner = partner_of(config)
    if partner is not None:
        defaults.append(jobs.retriever_config(jobs.BackboneChoice(partner)))
    return config.model_dump(mode="json") | {
        "sources_digest": sources_digest(config),
        "defaults": text_hash(json.dumps([d.model_dump(mode="json") for d in defaults])),
    }


def run_bot(
    config: BotRunConfig,
    until: str = "bot",
    progress: bool = True,
    say: Callable[[str], None] = print,
    replace_stale: bool = False,
) -> dict[str, Any]:
    """Run the stages up to ``until``; the results by stage."""
    from rolecall.spec import load_role_spec

    check_until(STEPS, until)
    spec = load_role_spec(config.spec)
    settings = run_settings(config)
    if config.versions:
        mixed = other_kind(COMMAND, made_by(Path(config.out)))  # out holds the versions
        if mixed:
            raise InputFileError(Path(config.out), mixed, fix=OWN_DIRECTORY)
        out, resumed = version_dir(Path(config.out), settings)
        say(f"version: {out} ({'resumed' if resumed else 'new'})")
        config = config.model_copy(update={"out": str(out)})
    try:
        run = RunDir(config.out, COMMAND, settings)
    except ChangedSettings:
        if not replace_stale:
            raise
        say(f"{config.out}: built from other settings or examples, built again")
        shutil.rmtree(config.out)
        run = RunDir(config.out, COMMAND, settings)
    state = _Run(config, run, spec, progress, say)
    return {**run_steps(STEPS, state, until, say), "dir": config.out}


def version_dir(home: Path, settings: dict[str, Any]) -> tuple[Path, bool]:
    """``(directory, resumed)``: the version of ``home`` a run with ``settings`` writes:
    the newest (``v3``) when it was started with these settings, else the next one (``v4``;
    ``v1`` in a new home). A version is never written by other settings."""
    numbered = sorted(
        (int(p.name[1:]), p) for p in home.glob("v*") if p.is_dir() and p.name[1:].isdigit()
    )
    if not numbered:
        return home / "v1", False
    number, newest = numbered[-1]
    try:
        manifest = json.loads((newest / MANIFEST).read_text(encoding="utf-8"))
        started = manifest["config"][COMMAND]
    except (OSError, ValueError, KeyError, TypeError):
        started = None
    if isinstance(started, dict) and not changed_settings(started, settings, newest):
        return newest, True
    return home / f"v{number + 1}", False


EARLIER = " (from an earlier run)"


def _stage(name: str, work: Callable[[_Run], dict], line: Callable[[dict], str]):
    """A step that runs ``work`` unless the manifest holds its results; records them."""

    def step(state: _Run):
        found = state.done(name)
        if found is not None:
            return found, line(found) + EARLIER
        found = work(state)
        state.run.record_stage(name, found)
        return found, line(found)

    return step


# ---- 1. examples --------------------------------------------------------------------------


def _examples(state: _Run) -> dict:
    from rolecall.jsonl import write_jsonl

    train, held, counts = merged_examples(state.config, state.spec)
    if not any(e.label == "negative" for e in train):
        raise ConfigError(
            "the sources hold no negative example for the guard to learn from",
            fix="add a dialogue run's examples.jsonl or set forbidden_examples above 0",
        )
    write_jsonl(state.out / TRAIN_FILE, train)
    write_jsonl(state.out / HELD_OUT_FILE, held)
    return counts


# ---- 2. guard -----------------------------------------------------------------------------


def _guard(state: _Run) -> dict:
    from rolecall.train import jobs
    from rolecall.train.classifier import ClassifierSettings
    from rolecall.train.lexical_classifier import train_lexical_classifier

    seed = state.config.seed
    scores = {}
    for name in state.config.guard:
        folder = state.out / CANDIDATES / f"guard-{name}"
        state.say(f"  guard candidate {name}...")
        if name == "tfidf":
            metrics = train_lexical_classifier(state.out / TRAIN_FILE, folder, seed=seed)
        else:
            choice = jobs.BackboneChoice(name, frozen=True)
            config = jobs.classifier_config(choice, seed=seed)
            job = state.job(f"{CANDIDATES}/guard-{name}")
            metrics = jobs.classifier(job, choice, ClassifierSettings(), config)
        scores[name] = _guard_score(metrics)
        state.say(f"    {json.dumps(scores[name])}")
    order = list(state.config.guard)
    best = max(
        order,
        key=lambda n: (scores[n]["roc_auc"] or 0.0, scores[n]["f1"] or 0.0, -order.index(n)),
    )
    target = state.out / "classifier"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(state.out / CANDIDATES / f"guard-{best}", target)
    return {"chosen": best, "candidates": scores}


def _guard_score(metrics: dict) -> dict:
    """A guard candidate's held-out numbers: ROC AUC, and at its held-out threshold the
    precision, recall and F1 (cross-fitted)."""
    chosen = metrics.get("held_out_threshold") or {}
    return {
        "roc_auc": _round(metrics.get("roc_auc")),
        "threshold": _round(chosen.get("threshold", metrics.get("threshold"))),
        "precision": _round(chosen.get("precision", metrics.get("precision"))),
        "recall": _round(chosen.get("recall", metrics.get("recall"))),
        "f1": _round(chosen.get("f1", metrics.get("f1"))),
        "test_examples": metrics.get("test_examples"),
    }


def _round(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


# ---- 3-4. retriever and reranker ------------------------------------------------------------


def _retriever(state: _Run) -> dict:
    from rolecall.serve.candidates import index_examples
    from rolecall.train import jobs
    from rolecall.train.retriever import RetrieverSettings
    from rolecall.train.settings import retriever_kind

    found = {}
    partner = partner_of(state.config)
    for part, backbone in (("retriever", state.config.backbone), (PARTNER, partner)):
        if backbone is None:
            continue
        choice = jobs.BackboneChoice(backbone)  # the policy: on the sentence encoder, its top tuned
        settings = RetrieverSettings(kind=retriever_kind(backbone))
        config = jobs.retriever_config(choice, seed=state.config.seed)
        metrics = jobs.retriever(state.job(part), choice, settings, config)
        index_examples(state.out / part, state.out / TRAIN_FILE, state.features, state.progress)
        prefix = "" if part == "retriever" else f"{backbone}_"  # the partner's: e5_hits@1/...
        found |= {prefix + k: v for k, v in _short(metrics).items()}
    return found


def _reranker(state: _Run) -> dict:
    from rolecall.serve.candidates import hard_negative_miner
    from rolecall.train import jobs
    from rolecall.train.reranker import RerankerSettings
    from rolecall.train.settings import RERANKER_TRAINING

    choice = jobs.BackboneChoice(state.config.backbone, frozen=True)
    config = RERANKER_TRAINING.model_copy(update={"seed": state.config.seed})
    mined = hard_negative_miner(state.out / "retriever" / "candidates", state.progress)
    metrics = jobs.reranker(state.job("reranker"), choice, RerankerSettings(), config, mined)
    return _short(metrics)


def _short(metrics: dict) -> dict:
    """The numbers of a model's metrics (not its losses, nor where it was written)."""
    return {
        k: _round(v)
        for k, v in metrics.items()
        if k not in ("losses", "model_dir") and not isinstance(v, (list, dict))
    }


# ---- 5. unanswerable ----------------------------------------------------------------------


def _unanswerable(state: _Run) -> dict:
    from rolecall.serve.candidates import CandidateIndex
    from rolecall.serve.unanswerable import (
        METHODS,
        compare_detectors,
        detector_named,
        index_hard_negatives,
        validation_items,
    )
    from rolecall.train.data import read_examples, selection_pairs
    from rolecall.train.reranker import Reranker
    from rolecall.train.retriever import Retriever

    features = state.features
    retriever = Retriever.load(state.out / "retriever", features)
    index = CandidateIndex.load(state.out / "retriever" / "candidates", retriever)
    reranker = Reranker.load(state.out / "reranker", features)
    # Appendix C: held-out golds, half swapped for the index's best other candidate
    held = selection_pairs(read_examples(state.out / HELD_OUT_FILE))
    items = validation_items(held, index_hard_negatives(index), 0.5, state.config.seed)
    detectors = [detector_named(method, reranker, passes=10) for method in METHODS]
    results = compare_detectors(detectors, items)
    best = max(results, key=lambda name: results[name]["roc_auc"])  # first of equals
    found = {
        k: v
        for k, v in results[best].items()
        if isinstance(v, (int, float, str, list)) or k == "precise"
    }
    found["roc_auc_by_method"] = {name: round(r["roc_auc"], 4) for name, r in results.items()}
    found["items"] = len(items)
    return found


# ---- 6. checks ----------------------------------------------------------------------------


def _checks(state: _Run) -> dict:
    from rolecall.train.user_checks import train_user_checks

    section = state.config.user_checks
    if not section.turns or not state.spec.user_checks:
        return {"trained": False}
    dialogues = next((s.dialogues for s in state.config.sources if s.dialogues), None)
    metrics = train_user_checks(
        state.spec,
        state.out / "user_checks",
        Path(section.turns),
        Path(dialogues) if dialogues and section.dialogues else None,
        Path(section.data) if section.data else None,
        seed=state.config.seed,
    )
    return {"trained": True, "turns": metrics["turns"], "out_of_fold": metrics["out_of_fold"]}


# ---- 7. bot -------------------------------------------------------------------------------


def _bot(state: _Run) -> dict:
    from rolecall.pipelines.bot_card import write_card
    from rolecall.serve.bot import BOT_FILE, BotSettings
    from rolecall.serve.candidates import index_examples

    out = state.out
    # held out from training and calibration only: the served pool holds them too
    examples = [out / TRAIN_FILE, out / HELD_OUT_FILE]
    pool = len(index_examples(out / "retriever", examples, state.features, state.progress))
    if (out / PARTNER).is_dir():
        index_examples(out / PARTNER, examples, state.features, state.progress)
    calibration = state.done("unanswerable") or {}
    threshold, why = fallback_threshold(calibration, state.config.generator)
    settings = BotSettings(
        unanswerable_threshold=threshold,
        unanswerable_method=calibration.get("method", "mc_dropout"),
        unanswerable_scales=calibration.get("scales") if threshold is not None else None,
        generator_model=state.config.generator,
        spec=_copy_spec(Path(state.config.spec), out),
        user_checks=(out / "user_checks").is_dir(),
    )
    write_json(out / BOT_FILE, settings.model_dump(mode="json"))  # every knob, shown
    found = {"served_candidates": pool, "unanswerable_threshold": threshold, "fallback": why}
    write_card(state.run, state.config, {**_stages(state), "bot": found})
    return found


def _copy_spec(spec: Path, out: Path) -> str:
    """The spec copied into the bot directory (``spec.yaml``, what ``bot.json`` names): a
    bot copied or moved anywhere keeps the spec it was built with."""
    target = out / SPEC_COPY
    if spec.resolve() != target.resolve():
        shutil.copyfile(spec, target)
    return SPEC_COPY


def fallback_threshold(calibration: dict, generator: str | None) -> tuple[float | None, str]:
    """The unanswerable threshold the bot serves with (None: retrieval never fails) and
    why: none when no detector separates the held-out contexts, or when the generator it
    would fall back to is the embedded 270M base model (it answers worse than a retrieved
    candidate: docs/models.md)."""
    from rolecall.llm.registry import DEFAULT_MODEL, default_model

    method, auc = calibration.get("method", "mc_dropout"), calibration.get("roc_auc", 0.0)
    threshold = calibration.get("threshold")
    if threshold is None or auc < MIN_AUC:
        return None, (
            f"no detector separates answerable from unanswerable held-out contexts (best: "
            f"{method}, ROC AUC {auc:.2f} < {MIN_AUC}): retrieval is never judged to fail"
        )
    if (generator or default_model()) == DEFAULT_MODEL:
        return None, (
            f"{method} separates unanswerable contexts (ROC AUC {auc:.2f}), but the generator "
            "it would fall back to is the embedded 270M base model, which answers worse than "
            "a retrieved candidate: retrieval is never judged to fail. With a real LLM as "
            f"'generator' the bot falls back to it at {method} <= {threshold:.3f}"
        )
    return threshold, f"falls back to {generator} at {method} <= {threshold:.3f}"


def _checks_line(found: dict) -> str:
    if not found["trained"]:
        return "none (the config gives no training turns, or the spec declares no checks)"
    return f"{found['turns']} training turns; out of fold:" + "".join(
        f"\n  {name:<20} threshold {m['threshold']:.2f}  precision {m['precision']:.2f}  "
        f"recall {m['recall']:.2f}  ({m['turns']} turns)"
        for name, m in found["out_of_fold"].items()
    )


def _stages(state: _Run) -> dict:
    return {name: state.done(name) for name in STAGES if state.done(name) is not None}


STEPS = [
    (
        "examples",
        _stage(
            "examples",
            _examples,
            lambda c: (
                f"{c['train']} training and {c['held_out']} held-out examples "
                f"({c['negatives']} negatives) from {len(c['sources'])} sources"
            ),
        ),
    ),
    (
        "guard",
        _stage(
            "guard",
            _guard,
            lambda c: (
                f"{c['chosen']} (held-out ROC AUC "
                f"{c['candidates'][c['chosen']]['roc_auc']}; "
                + ", ".join(f"{n} {s['roc_auc']}" for n, s in c["candidates"].items())
                + ")"
            ),
        ),
    ),
    ("retriever", _stage("retriever", _retriever, lambda c: json.dumps(c))),
    ("reranker", _stage("reranker", _reranker, lambda c: json.dumps(c))),
    (
        "unanswerable",
        _stage(
            "unanswerable",
            _unanswerable,
            lambda c: (
                f"{c.get('method')} ROC AUC {c.get('roc_auc', 0):.2f} on {c['items']} "
                "held-out items"
            ),
        ),
    ),
    ("checks", _stage("checks", _checks, lambda c: _checks_line(c))),
    (
        "bot",
        _stage(
            "bot",
            _bot,
            lambda c: f"{c['served_candidates']} served replies; {c['fallback']}",
        ),
    ),
]
