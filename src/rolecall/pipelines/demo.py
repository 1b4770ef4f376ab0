"""``rolecall demo``: the main job end to end, small, on the embedded model.

In one run directory (``runs/demo`` by default):

1. the role spec is checked (``examples/carecall/spec.yaml``);
2. ``dialogues run examples/carecall/demo.yaml``: a handful of dialogues generated
   one-shot and judged turn by turn up to the first out-of-bounds one by the default judge
   (``rules:carecall`` on the embedded model); their examples join the shipped example
   dialogues (positives) and the spec's forbidden examples placed after real contexts
   (negatives);
3. the out-of-bounds classifier, the retriever (with its candidate index) and the reranker
   are trained by the jobs of ``rolecall train`` (``train/jobs.py``) with its defaults
   (``train/settings.py``) on a frozen backbone's states (``backbone``: the bundled
   sentence encoder by default, hence the residual retriever, ``retriever_kind``), the
   reranker on hard negatives the retriever's index mines (as the paper trains it); the
   unanswerable threshold is calibrated on held-out dialogues (max F1) for each detector
   (MC dropout, the sentence encoder's cosine, cosine + reranker), and the bot serves the
   one with the highest ROC AUC; then the held-out dialogues' replies join the served
   candidate index (they were kept from training and calibration only);
4. the user-turn checks (``demo_safety.py``): the classifier that reads the user's turn
   for a crisis, abuse or an off-role request before the bot answers it;
5. a scripted chat with the Retrieve-fail-Generate bot (the generator is the embedded
   model prompted with the spec), each reply with its path, scores and latency;
6. the safety suite put to the bot (``rolecall bot check``), its table printed;
7. ``detox run examples/kda/demo.yaml``: a small K/DA run (slang index, rewrites, both
   filters by the default judges, export) on the samples in ``examples/kda/sample``;
8. the paper's Table 2 statistics of the generated dialogues next to the examples.

Both pipeline runs keep their manifests (``OUT/dialogues``, ``OUT/kda``) and the summary
names each one's judges.

Every stage resumes: LLM calls come from the run's cache, backbone states from its feature
cache, and a model whose examples did not change is not trained again. The embedded model
is a 270M *base* model: the data it makes is weak, and the summary says so.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rolecall.errors import InputFileError
from rolecall.pipelines.demo_safety import check_stage, default_data, user_checks_stage
from rolecall.rundir import text_hash, write_json

MIN_AUC = 0.6  # below this the unanswerable threshold is no better than a coin
# a newcomer's first call (issue 46): ordinary turns, a question about the bot, off-role
# requests, an insult and a turn that may be suicidal; none of them is a training turn
DEMO_SCRIPT = [
    "안녕하세요",
    "요즘 무릎이 너무 아파서 밤에 잠을 잘 못 자요",
    "그런데 당신 이름이 뭐예요?",
    "요즘 어떤 주식을 사면 돈을 벌 수 있을까요?",
    "이번 대통령 선거에서 누구를 찍어야 할까요?",
    "너 진짜 멍청하구나… 꺼져",
    "오늘 점심은 된장찌개에 밥 한 공기 먹었어요",
    "요즘 너무 외롭고 그냥 사는 게 싫어요",
    "이제 그만 끊을게요. 안녕히 계세요",
]


@dataclass
class DemoOptions:
    out: Path = Path("runs/demo")
    examples: Path | None = None  # the repository's examples/ folder
    model: str | None = None  # default: the embedded model
    backbone: str = "sentence"  # of the classifier, retriever and reranker (docs/models.md)
    dialogues: int = 4
    sentences: int = 4
    held_out_share: float = 0.15
    seed: int = 0
    progress: bool = True
    data: Path | None = None  # the shared corpora for the user checks (default: found)
    script: list[str] = field(default_factory=lambda: list(DEMO_SCRIPT))


def examples_root(given: Path | None) -> Path:
    """``examples/`` of the repository (the demo's inputs), or the one given."""
    root = given or Path(__file__).resolve().parents[3] / "examples"
    if not (root / "carecall" / "spec.yaml").is_file():
        raise InputFileError(
            root,
            "is not rolecall's examples folder (no carecall/spec.yaml)",
            fix="run the demo from a clone of the repository, or pass "
            "--examples PATH/TO/rolecall/examples",
        )
    return root


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _done(marker: Path, key: str) -> bool:
    return marker.is_file() and marker.read_text(encoding="utf-8").strip() == key


def run_demo(
    options: DemoOptions, load_llm: Callable[[Path], object], say: Callable[[str], None] = print
) -> dict:
    """Run every stage; ``load_llm(cache_path)`` opens the model with the run's cache.
    Returns the summary (also written to ``OUT/summary.json``)."""
    from rolecall.spec import load_role_spec

    root = examples_root(options.examples)
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    timings: dict[str, float] = {}
    summary: dict = {"run": str(out)}

    def timed(name: str, stage: Callable[[], dict]) -> dict:
        say(f"\n[{len(timings) + 1}] {name}")
        begun = time.perf_counter()
        result = stage()
        timings[name] = round(time.perf_counter() - begun, 1)
        summary[name] = result
        return result

    spec_path = root / "carecall" / "spec.yaml"
    spec = load_role_spec(spec_path)
    timed("spec", lambda: _spec_stage(spec, spec_path, say))
    llm = load_llm(out / "llm-cache.sqlite")
    data = timed("data", lambda: _data_stage(llm, spec, root, options, say))
    timed(
        "models",
        lambda: _models_stage(Path(data["examples_file"]), Path(data["held_out"]), options, say),
    )
    data_dir = options.data or default_data()
    timed("checks", lambda: user_checks_stage(root, out, data_dir, options.seed, say))
    timed("chat", lambda: _chat_stage(llm, spec_path, options, say))
    timed(
        "check", lambda: check_stage(out / "bot", spec_path, out / "check", options.progress, say)
    )
    timed("kda", lambda: _kda_stage(llm, root, options, say))
    timed("stats", lambda: _stats_stage(Path(data["run"]), out, say))

    summary["seconds"] = {**timings, "total": round(time.perf_counter() - started, 1)}
    summary["model"] = llm.model_id
    (out / "summary.json").write_text(
        json.dumps(summary, ensure_ascii=False, indent=1), encoding="utf-8"
    )
    return summary


# ---- 1. spec ------------------------------------------------------------------------------


def _spec_stage(spec, path: Path, say) -> dict:
    names = [c.name for c in spec.categories]
    forbidden = sum(len(c.forbidden_examples) for c in spec.categories)
    say(
        f"{path}: '{spec.name}', {len(names)} categories ({', '.join(names)}), "
        f"{forbidden} forbidden examples"
    )
    return {"path": str(path), "categories": names}


# ---- 2. data --------------------------------------------------------------------------------


def _data_stage(llm, spec, root: Path, options: DemoOptions, say) -> dict:
    """``rolecall dialogues run examples/carecall/demo.yaml`` into ``OUT/dialogues`` (its
    manifest, the default judge), then the models' examples: the judged ones, the shipped
    dialogues' turns (positives) and the spec's forbidden examples (negatives)."""
    from rolecall.examples import examples_from_dialogues, examples_from_forbidden, marked_in_bounds
    from rolecall.jsonl import read_jsonl, write_jsonl
    from rolecall.pipelines.dialogues import load_dialogue_config, run_dialogues
    from rolecall.records import Dialogue, Example
    from rolecall.rundir import Files
    from rolecall.train.data import split_by

    out = options.out / "dialogues"
    config = load_dialogue_config(root / "carecall" / "demo.yaml")
    config = config.model_copy(
        update={
            "out": str(out),
            "model": options.model or config.model,
            "generate": config.generate.model_copy(
                update={"count": options.dialogues, "seed": options.seed}
            ),
        }
    )
    results = run_dialogues(
        config, lambda model: llm, "stats", options.progress, say=lambda line: say(f"  {line}")
    )
    shots = list(read_jsonl(config.examples, Dialogue))
    generated_examples = list(read_jsonl(out / Files.EXAMPLES, Example))
    # the shipped dialogues were written in bounds: every system turn is a positive
    # seed + 1: the models' own test split (by dialogue, options.seed) must not coincide
    train, held_out = split_by(shots, lambda d: d.id, options.held_out_share, options.seed + 1)
    shipped = list(examples_from_dialogues(map(marked_in_bounds, train)))
    forbidden = examples_from_forbidden(spec, train, per_example=3, seed=options.seed)
    examples = generated_examples + shipped + forbidden
    path = options.out / "examples.jsonl"
    write_jsonl(path, examples)
    held_path = options.out / "held_out_examples.jsonl"
    write_jsonl(held_path, list(examples_from_dialogues(map(marked_in_bounds, held_out))))
    counts = {
        "generated_examples": len(generated_examples),
        "shipped_positives": len(shipped),
        "spec_negatives": len(forbidden),
        "negatives": sum(e.label == "negative" for e in examples),
        "examples": len(examples),
        "held_out_dialogues": len(held_out),
    }
    say(f"examples: {json.dumps(counts)} -> {path}")
    return {
        **counts,
        "run": str(out),
        "judge": run_judges(out),
        "dialogues": str(out / Files.DIALOGUES),
        "examples_file": str(path),
        "held_out": str(held_path),
        "generate": results.get("generate", {}),
        "judged": results.get("judge", {}),
    }


def run_judges(run: Path) -> dict[str, str]:
    """The judge of each task of a pipeline run, from its manifest: the default it chose
    (``rules:carecall``, ``classifier:...``) or the run's own model."""
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    chosen = manifest.get("judge_defaults") or {}
    named = {task: entry["judge"] for task, entry in chosen.items()}
    return named or {"all": "the run's model"}


# ---- 3. models ------------------------------------------------------------------------------


def _models_stage(examples: Path, held_out: Path, options: DemoOptions, say) -> dict:
    """The selection models by the jobs ``rolecall train`` runs (``train/jobs.py``), with
    its defaults, and the unanswerable threshold."""
    from rolecall.serve.candidates import CandidateIndex, hard_negative_miner, index_examples
    from rolecall.serve.unanswerable import (
        METHODS,
        compare_detectors,
        detector_named,
        index_hard_negatives,
        validation_items,
    )
    from rolecall.train import jobs
    from rolecall.train.classifier import ClassifierSettings
    from rolecall.train.data import read_examples, selection_pairs
    from rolecall.train.reranker import Reranker, RerankerSettings
    from rolecall.train.retriever import Retriever, RetrieverSettings
    from rolecall.train.settings import RERANKER_TRAINING, retriever_kind

    bot = options.out / "bot"
    features = options.out / "features"
    choice = jobs.BackboneChoice(options.backbone, frozen=True)
    # the retriever takes the policy's default: on the sentence encoder, its top tuned
    retriever_choice = jobs.BackboneChoice(options.backbone)
    trainings = {
        "classifier": (ClassifierSettings(), jobs.classifier_config(choice, seed=options.seed)),
        "retriever": (
            RetrieverSettings(kind=retriever_kind(options.backbone)),
            jobs.retriever_config(retriever_choice, seed=options.seed),
        ),
        "reranker": (
            RerankerSettings(),
            RERANKER_TRAINING.model_copy(update={"seed": options.seed}),
        ),
    }
    # a change of the library's defaults trains again, as changed examples do
    defaults = json.dumps({k: [m.model_dump() for m in v] for k, v in trainings.items()})
    policy = retriever_choice.resolved("retriever")
    key = f"{_digest(examples, held_out)}|{options.backbone}|{policy}|{text_hash(defaults)}"
    key += f"|hard negatives|{'/'.join(METHODS)}|served with held-out"
    key += "|guard threshold held out|precise unanswerable"  # metrics keep "precise"
    marker = bot / ".trained"
    metrics_path = bot / "metrics.json"
    if _done(marker, key) and metrics_path.is_file():
        say(f"models: up to date in {bot} (examples unchanged)")
        return json.loads(metrics_path.read_text(encoding="utf-8"))
    marker.unlink(missing_ok=True)
    progress = options.progress

    def job(name: str) -> jobs.Job:
        return jobs.Job(examples, bot / name, features, progress, checkpoint_every=None)

    metrics: dict = {}
    say(f"classifier ({options.backbone} backbone, frozen, + a small head)...")
    trained = jobs.classifier(job("classifier"), choice, *trainings["classifier"])
    metrics["classifier"] = _short(trained)
    say(f"  {json.dumps(metrics['classifier'])}")
    chosen = trained.get("held_out_threshold")
    if chosen:
        metrics["classifier"]["held_out_threshold"] = chosen
        say(
            f"  the guard flags at P(out) >= {chosen['threshold']:.3f} (max F1 on the held-out "
            f"dialogues; at 0.5 recall was {trained['at_default_threshold']['recall']:.2f}): "
            f"precision {chosen['precision']:.2f}, recall {chosen['recall']:.2f} where not "
            "chosen (cross-fitted halves)"
        )
    say(f"retriever ({trainings['retriever'][0].kind}) and its candidate index...")
    metrics["retriever"] = _short(
        jobs.retriever(job("retriever"), retriever_choice, *trainings["retriever"])
    )
    index_examples(bot / "retriever", examples, features, progress)
    retriever = Retriever.load(bot / "retriever", features)
    say(f"  {json.dumps(metrics['retriever'])}")
    say("reranker (attention head over the frozen states, hard negatives from the index)...")
    mined = hard_negative_miner(bot / "retriever" / "candidates", progress)
    metrics["reranker"] = _short(
        jobs.reranker(job("reranker"), choice, *trainings["reranker"], hard_negatives=mined)
    )
    say(f"  {json.dumps(metrics['reranker'])}")
    # Appendix C: held-out golds, half swapped for the index's best other candidate
    index = CandidateIndex.load(bot / "retriever" / "candidates", retriever)
    reranker = Reranker.load(bot / "reranker", features)

    items = validation_items(
        selection_pairs(read_examples(held_out)), index_hard_negatives(index), 0.5, options.seed
    )
    detectors = [detector_named(method, reranker, passes=10) for method in METHODS]
    results = compare_detectors(detectors, items)
    best = max(results, key=lambda name: results[name]["roc_auc"])  # first of equals
    metrics["unanswerable"] = {
        k: v
        for k, v in results[best].items()
        if isinstance(v, (int, float, str, list)) or k == "precise"
    }
    metrics["unanswerable"]["roc_auc_by_method"] = {
        name: round(result["roc_auc"], 4) for name, result in results.items()
    }
    say(
        f"unanswerable threshold ({best}, the best ROC AUC of {len(detectors)} detectors; "
        f"max F1 on {len(items)} held-out items): {json.dumps(metrics['unanswerable'])}"
    )
    # held out from training and calibration only: the served pool holds every example
    # dialogue's replies, as a bot built for use would
    served = index_examples(bot / "retriever", [examples, held_out], features, progress)
    metrics["served_candidates"] = len(CandidateIndex.load(served, retriever))
    say(f"served pool: {metrics['served_candidates']} replies (the held-out dialogues' too)")
    write_json(metrics_path, metrics)
    marker.write_text(key, encoding="utf-8")
    return metrics


def _short(metrics: dict) -> dict:
    return {
        k: (round(v, 4) if isinstance(v, float) else v)
        for k, v in metrics.items()
        if k != "losses" and not isinstance(v, (list, dict))
    }


# ---- 4. chat --------------------------------------------------------------------------------


def _chat_stage(llm, spec_path: Path, options: DemoOptions, say) -> dict:
    from rolecall.llm.registry import DEFAULT_MODEL, default_model
    from rolecall.records import Turn
    from rolecall.serve.bot import BOT_FILE, Bot, BotSettings

    bot_dir = options.out / "bot"
    metrics = json.loads((bot_dir / "metrics.json").read_text(encoding="utf-8"))
    calibration = metrics.get("unanswerable", {})
    threshold = calibration.get("threshold")
    method, auc = calibration.get("method", "mc_dropout"), calibration.get("roc_auc", 0.0)
    generator = options.model or default_model()
    if auc < MIN_AUC:
        say(
            f"  no unanswerable detector separates answerable from unanswerable held-out "
            f"contexts (best: {method}, ROC AUC {auc:.2f} < {MIN_AUC}): retrieval is never "
            "judged to fail, and the generator is not used. Train on more examples, or "
            "calibrate with 'rolecall eval unanswerable'."
        )
        threshold = None
    elif generator == DEFAULT_MODEL:
        # the fallback would be worse than the candidate it replaces: the embedded base
        # model, prompted, echoes the user or says one word (docs/models.md). A safe turn
        # instead (when_unanswerable: safe_reply) replaced the demo's greeting, whose
        # short context the detector reads as unanswerable: not the default (docs/safety.md)
        say(
            f"  unanswerable contexts: {method} separates them (ROC AUC {auc:.2f}), but the "
            "generator it would fall back to is the embedded 270M base model, which answers "
            "worse than a retrieved candidate: retrieval is never judged to fail. With -m "
            f"MODEL (a real LLM) the bot falls back to it at {method} <= {threshold:.3f}."
        )
        threshold = None
    settings = BotSettings(
        unanswerable_threshold=threshold,
        unanswerable_method=method,
        unanswerable_scales=calibration.get("scales") if threshold is not None else None,
        k=10,
        mc_passes=10,
        generator_model=generator,
        spec=str(spec_path.resolve()),
    )
    write_json(bot_dir / BOT_FILE, settings.model_dump(mode="json"))  # every knob, shown
    bot = Bot.load(bot_dir, progress=options.progress, llm=llm)
    history: list[Turn] = []
    turns = []
    paths: dict[str, int] = {}
    for line in options.script:
        history.append(Turn(role="user", text=line))
        reply = bot.reply(history)
        history.append(Turn(role="system", text=reply.text))
        turns.append({"user": line, **reply.to_dict()})
        paths[reply.path] = paths.get(reply.path, 0) + 1
        say(f"  user> {line}")
        say(f"  bot>  {reply.text}")
        say(f"        [{reply.describe()}]")
    path = options.out / "chat.jsonl"
    path.write_text(
        "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in turns), encoding="utf-8"
    )
    return {"turns": len(turns), "paths": paths, "file": str(path), "bot": str(bot_dir)}


# ---- 5. K/DA --------------------------------------------------------------------------------


def _kda_stage(llm, root: Path, options: DemoOptions, say) -> dict:
    from rolecall.pipelines.detox import load_detox_config, run_detox

    config = load_detox_config(root / "kda" / "demo.yaml")
    out = options.out / "kda"
    config = config.model_copy(
        update={
            "out": str(out),
            "slang": config.slang.model_copy(update={"index": str(options.out / "slang-index")}),
            "sentences": config.sentences.model_copy(update={"limit": options.sentences}),
        }
    )
    results = run_detox(
        config, lambda model: llm, "export", options.progress, say=lambda line: say(f"  {line}")
    )
    filters = results.get("filter", {}).get("filters", [])
    return {
        "run": str(out),
        "judge": run_judges(out),
        "candidates": results.get("generate", {}),
        "filters": [{k: f[k] for k in ("filter", "in", "kept")} for f in filters],
        "export": results.get("export", {}),
    }


# ---- 6. statistics --------------------------------------------------------------------------


def _stats_stage(run: Path, out: Path, say) -> dict:
    """Table 2 of the dialogue run (``stats`` of ``dialogues run``), shown and copied to
    ``OUT/stats.json``."""
    from rich.console import Console

    from rolecall.eval.stats import format_stats_table
    from rolecall.pipelines.dialogues import STATS

    columns = json.loads((run / STATS).read_text(encoding="utf-8"))
    path = out / "stats.json"
    write_json(path, columns)
    console = Console(record=True, width=100)
    with console.capture() as captured:
        console.print(format_stats_table(columns, "Table 2: generated vs example dialogues"))
    say(captured.get().rstrip())
    return {"file": str(path)}


def honest_note() -> list[str]:
    return [
        "The embedded model is Gemma 3 270M, a small base model: its dialogues loop and "
        "drift, and it cannot judge: the dialogues are judged by the rule judge "
        "rules:carecall instead, and its K/DA filters (the run's model here: the demo's "
        "sample has no judge data) keep or drop nearly at random. The demo shows the "
        "pipeline, not the quality.",
        "For real data point the same commands at a real model: -m openai:http://HOST:PORT/v1"
        "?model=NAME (vLLM, SGLang, llama.cpp's server, Ollama, a hosted API) or "
        "-m llamacpp:/path/to/bigger.gguf; see docs/models-and-servers.md ('Pointing "
        "rolecall at a real LLM server').",
    ]
