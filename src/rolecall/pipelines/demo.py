"""``rolecall demo``: the main job end to end, small, on the embedded model.

In one run directory (``runs/demo`` by default):

1. the role spec is checked (``examples/carecall/spec.yaml``);
2. ``dialogues run examples/carecall/demo.yaml``: a handful of dialogues generated
   one-shot and judged turn by turn up to the first out-of-bounds one by the default judge
   (``rules:carecall`` on the embedded model); their examples join the shipped example
   dialogues (positives) and the spec's forbidden examples placed after real contexts
   (negatives);
3. ``rolecall bot run examples/carecall/bot.yaml`` into ``OUT/bot`` (``bot_run.py``),
   its sources the dialogue run's examples and the shipped example dialogues: the guard
   chosen on held-out dialogues, the retriever of the demo's backbone (the bundled
   sentence encoder by default) with its candidate index, the reranker on hard negatives
   the index mines, the unanswerable detectors calibrated on held-out dialogues, the
   user-turn checks that read the user's turn for a crisis, abuse or an off-role request
   (with the shared corpora when found), ``bot.json`` and the model card;
5. a scripted chat with the Retrieve-fail-Generate bot (the generator is the embedded
   model prompted with the spec), each reply with its path, scores and latency;
6. the safety suite put to the bot (``rolecall bot check``), its table printed;
7. ``kda run examples/kda/demo.yaml``: a small K/DA run (slang index, rewrites, both
   filters by the default judges, export) on the samples in ``examples/kda/sample``;
8. the paper's Table 2 statistics of the generated dialogues next to the examples;
9. ``OUT/report.html``: all of it on one page (``demo_report.py``).

Both pipeline runs keep their manifests (``OUT/dialogues``, ``OUT/kda``) and the summary
names each one's judges.

Every stage resumes: LLM calls come from the run's cache, backbone states from its feature
cache, and the bot run's finished stages from its manifest (a bot whose inputs changed is
built again). The embedded model
is a 270M *base* model: the data it makes is weak, and the summary says so.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rolecall.errors import InputFileError
from rolecall.pipelines.demo_report import write_report
from rolecall.pipelines.demo_safety import check_stage, default_data
from rolecall.rundir import write_json
from rolecall.train.backbones.base import DEFAULT_BACKBONE

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
    backbone: str = DEFAULT_BACKBONE["bot"]  # of the retriever and reranker (docs/models.md)
    dialogues: int = 4
    sentences: int = 4
    held_out_share: float = 0.15  # dialogues held out of the bot's training
    seed: int = 0
    progress: bool = True
    data: Path | None = None  # the shared corpora: user checks, K/DA judges (default: found)
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
    timed("spec", lambda: _spec_stage(spec, spec_path, out, say))
    llm = load_llm(out / "llm-cache.sqlite")
    data = timed("data", lambda: _data_stage(llm, spec, root, options, say))
    data_dir = options.data or default_data()
    timed("models", lambda: _bot_stage(root, data_dir, options, say))
    timed("chat", lambda: _chat_stage(llm, options, say))
    timed(
        "check", lambda: check_stage(out / "bot", spec_path, out / "check", options.progress, say)
    )
    timed("kda", lambda: _kda_stage(llm, root, data_dir, options, say))
    timed("stats", lambda: _stats_stage(Path(data["run"]), out, say))

    summary["seconds"] = {**timings, "total": round(time.perf_counter() - started, 1)}
    summary["model"] = llm.model_id
    (out / "summary.json").write_text(
        json.dumps(summary, ensure_ascii=False, indent=1), encoding="utf-8"
    )
    say(f"\nreport: {write_report(out)} (open it in a browser)")
    return summary


# ---- 1. spec ------------------------------------------------------------------------------


def _spec_stage(spec, path: Path, out: Path, say) -> dict:
    names = [c.name for c in spec.categories]
    forbidden = sum(len(c.forbidden_examples) for c in spec.categories)
    say(
        f"{path}: '{spec.name}', {len(names)} categories ({', '.join(names)}), "
        f"{forbidden} forbidden examples"
    )
    # relative to the run directory, which can then move with the examples beside it
    return {"path": os.path.relpath(path.resolve(), out.resolve()), "categories": names}


# ---- 2. data --------------------------------------------------------------------------------


def _data_stage(llm, spec, root: Path, options: DemoOptions, say) -> dict:
    """``rolecall dialogues run examples/carecall/demo.yaml`` into ``OUT/dialogues`` (its
    manifest, the default judge): the generated dialogues' examples."""
    from rolecall.pipelines.dialogues import load_dialogue_config, run_dialogues
    from rolecall.rundir import Files

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
    return {
        "run": str(out),
        "judge": run_judges(out),
        "dialogues": str(out / Files.DIALOGUES),
        "examples_file": str(out / Files.EXAMPLES),
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


# ---- 3. the bot ---------------------------------------------------------------------------


def _bot_stage(root: Path, data: Path | None, options: DemoOptions, say) -> dict:
    """``rolecall bot run examples/carecall/bot.yaml`` into ``OUT/bot``, its first source
    this run's dialogues; built again when its inputs changed."""
    from rolecall.llm.registry import default_model
    from rolecall.pipelines.bot_run import run_bot
    from rolecall.pipelines.bot_sources import Source, load_bot_config
    from rolecall.rundir import Files

    config = load_bot_config(root / "carecall" / "bot.yaml")
    generated = Source(
        examples=str(options.out / "dialogues" / Files.EXAMPLES), name="generated dialogues"
    )
    config = config.model_copy(
        update={
            "out": str(options.out / "bot"),
            "versions": False,  # the demo's bot is OUT/bot, built again when it changed
            "sources": [generated, *(s for s in config.sources if s.dialogues)],
            "held_out_share": options.held_out_share,
            "seed": options.seed,
            "backbone": options.backbone,
            "generator": options.model or default_model(),
            "features": str(options.out / "features"),
            "user_checks": config.user_checks.model_copy(
                update={"data": str(data) if data else None}
            ),
        }
    )
    return run_bot(config, progress=options.progress, say=say, replace_stale=True)


# ---- 4. chat --------------------------------------------------------------------------------


def _chat_stage(llm, options: DemoOptions, say) -> dict:
    from rolecall.records import Turn
    from rolecall.serve.bot import Bot

    bot_dir = options.out / "bot"
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


def _kda_stage(llm, root: Path, data: Path | None, options: DemoOptions, say) -> dict:
    """``kda run examples/kda/demo.yaml`` into ``OUT/kda``; with the shared data folder,
    the filters are the trained judges (the embedded model judges near random)."""
    from rolecall.errors import ChangedSettings
    from rolecall.pipelines.kda import load_kda_config, run_kda

    config = load_kda_config(root / "kda" / "demo.yaml")
    out = options.out / "kda"
    judge_data = str(data) if data is not None else None
    config = config.model_copy(
        update={
            "out": str(out),
            "slang": config.slang.model_copy(update={"index": str(options.out / "slang-index")}),
            "sentences": config.sentences.model_copy(update={"limit": options.sentences}),
            "filter": config.filter.model_copy(update={"judge_data": judge_data}),
        }
    )

    def run() -> dict:
        return run_kda(config, lambda model: llm, "export", options.progress,
                         say=lambda line: say(f"  {line}"))  # fmt: skip

    try:
        results = run()
    except ChangedSettings:  # the demo's own directory, from other settings: made again
        say(f"  {out}: made with other settings, made again")
        shutil.rmtree(out)
        results = run()
    filters = [{k: f[k] for k in ("filter", "in", "kept")} for f in
               results.get("filter", {}).get("filters", [])]  # fmt: skip
    judges = run_judges(out)
    summary = {"run": str(out), "judge": judges, "candidates": results.get("generate", {}),
               "filters": filters, "export": results.get("export", {})}  # fmt: skip
    empty = next((f for f in filters if f["in"] and not f["kept"]), None)
    if empty is not None:
        summary["empty_because"] = why_empty(empty, judges.get(empty["filter"]), data)
        say(f"  no pair kept: {summary['empty_because']}")
    return summary


def why_empty(step: dict, judge: str | None, data: Path | None) -> str:
    """Why the demo's K/DA dataset came out empty, in words a newcomer can act on."""
    which = f"the {step['filter']} filter passed none of the {step['in']} rewrites"
    if data is None:
        return (f"{which}, judged by the embedded model (near random): give the shared data "
                "folder (rolecall demo --data PATH) for the trained judges")  # fmt: skip
    return (f"{which} ({judge}): the embedded 270M model's rewrites are not offensive "
            "enough to keep; a real model writes them (-m, docs/kda.md)")  # fmt: skip


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


def honest_note(summary: dict) -> list[str]:
    trained = any(j.startswith("classifier") for j in summary["kda"]["judge"].values())
    kda = (
        "its K/DA rewrites are filtered by judges trained on the shared data"
        if trained
        else "its K/DA filters are the embedded model itself (no shared data folder: "
        "--data), which keeps or drops nearly at random"
    )
    return [
        "The embedded model is Gemma 3 270M, a small base model: its dialogues loop and "
        "drift, and it cannot judge: the dialogues are judged by the rule judge "
        f"rules:carecall instead, and {kda}. The demo shows the pipeline, not the quality.",
        "For real data point the same commands at a real model: -m openai:http://HOST:PORT/v1"
        "?model=NAME (vLLM, SGLang, llama.cpp's server, Ollama, a hosted API) or "
        "-m llamacpp:/path/to/bigger.gguf; see docs/models-and-servers.md ('Pointing "
        "rolecall at a real LLM server').",
    ]
