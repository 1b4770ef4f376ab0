"""The ``rolecall`` command. Thin: parse options, call a library function, print.

Every ``RolecallError`` becomes a message with its fix and the error's exit code; other
exceptions are bugs and keep their traceback.
"""

from __future__ import annotations

import faulthandler
import json
import logging
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape

from rolecall import config
from rolecall.cli_chat import chat_command
from rolecall.cli_detox_model import offensiveness_data_command
from rolecall.cli_web import serve_command, web_app
from rolecall.cli_detox_model import rewrite_command as detox_rewrite_command
from rolecall.cli_detox_model import score_command as detox_score_command
from rolecall.cli_detox_model import train_command as detox_train_command
from rolecall.cli_train import train_app, unanswerable_command
from rolecall.errors import ConfigError, RolecallError, describe_validation

app = typer.Typer(help="rolecall: safe, role-specified Korean chatbots from LLM-made data.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
llm_app = typer.Typer(help="Call an LLM directly: one prompt, a batch, a perplexity.",
                      no_args_is_help=True)
db_app = typer.Typer(help="The feedback and annotation database.", no_args_is_help=True)
records_app = typer.Typer(help="Check record files (JSONL).", no_args_is_help=True)
app.add_typer(llm_app, name="llm")
app.add_typer(db_app, name="db")
app.add_typer(records_app, name="records")
spec_app = typer.Typer(help="Role specifications (YAML).", no_args_is_help=True)
dialogues_app = typer.Typer(help="Role-specified dialogue data (NAACL 2022): generate, "
                                 "judge, convert, count.", no_args_is_help=True)
app.add_typer(spec_app, name="spec")
app.add_typer(dialogues_app, name="dialogues")

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

MODEL_HELP = ("model string, e.g. llamacpp:embedded (default), llamacpp:/m.gguf, "
              "openai:http://localhost:8000/v1?model=NAME, hf:/path/to/model")


@app.callback()
def _main(verbose: bool = typer.Option(False, "--verbose", "-v", help="debug logging")):
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")


def _llm(model: Optional[str], cache: Optional[Path], concurrency: int = 8, retries: int = 4):
    from rolecall.llm import LLM, Cache, load_backend

    with err.status(f"loading {model or 'the default model'}..."):
        backend = load_backend(model)
    return LLM(backend, Cache(cache or config.cache_path()), concurrency=concurrency,
               retries=retries)


def _params(max_tokens: int, temperature: float, top_p: float, seed: Optional[int],
            stop: list[str], logprobs: Optional[int] = None,
            json_schema: Optional[Path] = None, grammar: Optional[Path] = None):
    from pydantic import ValidationError

    from rolecall.llm import SamplingParams

    schema = _read_json_file(json_schema) if json_schema else None
    gbnf = grammar.read_text(encoding="utf-8") if grammar else None
    try:
        return SamplingParams(max_tokens=max_tokens, temperature=temperature, top_p=top_p,
                              seed=seed, stop=tuple(stop), logprobs=logprobs,
                              json_schema=schema, grammar=gbnf)
    except ValidationError as exc:
        raise ConfigError(f"bad sampling options: {describe_validation(exc)}") from None


def _read_json_file(path: Path) -> dict:
    from rolecall.errors import InputFileError

    if not path.is_file():
        raise InputFileError(path, "file not found", fix="check the path")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputFileError(path, f"not valid JSON ({exc.msg})", line=exc.lineno) from None


@app.command()
def demo(out_dir: Path = typer.Option(Path("runs/demo"), "--out", help="the run directory "
                                      "(resumable: a second run takes a minute or two)"),
         model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
         dialogues: int = typer.Option(4, min=1, help="dialogues to generate"),
         sentences: int = typer.Option(4, min=1, help="neutral sentences for K/DA"),
         examples: Optional[Path] = typer.Option(None, help="the repository's examples/ "
                                                 "folder (found by default)"),
         progress: bool = typer.Option(True)):
    """The main job end to end, small: spec -> dialogues -> judge -> examples -> classifier,
    retriever, reranker -> a scripted chat with the bot -> a K/DA run -> statistics."""
    from rolecall.llm import Cache
    from rolecall.pipelines.demo import DemoOptions, honest_note, run_demo

    options = DemoOptions(out=out_dir, examples=examples, model=model, dialogues=dialogues,
                          sentences=sentences, progress=progress)
    opened = []

    def load(cache_path: Path):
        opened.append(_llm(model, cache_path))
        return opened[-1]

    summary = run_demo(options, load, say=lambda line: out.print(line, highlight=False,
                                                                  markup=False))
    seconds = summary["seconds"]
    out.print("\n[bold]where everything is[/bold]")
    rows = [("dialogues (generated, judged)", summary["data"]["dialogues"].rsplit("/", 1)[0]),
            ("training examples", summary["data"]["examples_file"]),
            ("bot (classifier, retriever, reranker, bot.json)", summary["chat"]["bot"]),
            ("chat transcript with scores", summary["chat"]["file"]),
            ("K/DA run (candidates, verdicts, kda.csv)", summary["kda"]["run"]),
            ("Table 2 statistics", summary["stats"]["file"]),
            ("this summary", str(out_dir / "summary.json"))]
    for what, where in rows:
        out.print(f"  {what:<50} {where}", highlight=False, markup=False)
    out.print(f"\nmodel {summary['model']}; {seconds['total']:.0f} s in all ("
              + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items() if k != "total")
              + ")", highlight=False, markup=False)
    for line in honest_note():
        out.print(f"[yellow]note:[/yellow] {escape(line)}", highlight=False)
    for llm in opened:
        err.print(f"[dim]{llm.model_id}: {llm.stats.summary()}[/dim]")


@llm_app.command("complete")
def llm_complete(
        prompt: str = typer.Argument(..., help="the prompt ('-' reads stdin)"),
        model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
        chat: bool = typer.Option(False, help="send the prompt as one user message"),
        n: int = typer.Option(1, "-n", min=1, help="number of samples"),
        max_tokens: int = typer.Option(128), temperature: float = typer.Option(0.7),
        top_p: float = typer.Option(1.0), seed: Optional[int] = typer.Option(None),
        stop: list[str] = typer.Option([], help="stop string (repeatable)"),
        logprobs: Optional[int] = typer.Option(None, help="return top-K token logprobs"),
        json_schema: Optional[Path] = typer.Option(None, help="JSON schema file"),
        grammar: Optional[Path] = typer.Option(None, help="GBNF grammar file"),
        cache: Optional[Path] = typer.Option(None, help="cache file (default in ROLECALL_HOME)"),
        as_json: bool = typer.Option(False, "--json", help="print full records as JSON")):
    """Complete one prompt and print the sample(s)."""
    from rolecall.llm import Message, Request

    text = sys.stdin.read() if prompt == "-" else prompt
    params = _params(max_tokens, temperature, top_p, seed, stop, logprobs, json_schema, grammar)
    request = (Request(messages=(Message(role="user", content=text),), params=params) if chat
               else Request(prompt=text, params=params))
    llm = _llm(model, cache)
    for sample in llm.generate([request], n)[0]:
        if not sample.ok:
            raise RolecallError(f"the call failed: {sample.error}")
        if as_json:
            out.print_json(json.dumps({"sample": sample.sample_index, "cached": sample.cached,
                                       **sample.completion.model_dump()}, ensure_ascii=False))
        else:
            out.print(sample.completion.text, markup=False, highlight=False)
    err.print(f"[dim]{llm.model_id}: {llm.stats.summary()}[/dim]")


@llm_app.command("perplexity")
def llm_perplexity(text: str = typer.Argument(..., help="the text to score"),
                   prompt: str = typer.Option("", help="context the text follows"),
                   model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
                   cache: Optional[Path] = typer.Option(None)):
    """Print the log-likelihood and perplexity of TEXT (after --prompt)."""
    from rolecall.llm import Request

    llm = _llm(model, cache)
    completion = llm.complete(Request(prompt=prompt, score_text=text))
    out.print_json(json.dumps({"tokens": len(completion.logprobs),
                               "loglikelihood": completion.loglikelihood,
                               "perplexity": completion.perplexity}))


@llm_app.command("batch")
def llm_batch(
        input: Path = typer.Argument(..., help='JSONL: {"id", "prompt"|"messages"[, '
                                               '"score_text"]} per line'),
        out_path: Path = typer.Option(..., "--out", "-o", help="output JSONL (resumable)"),
        model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
        n: int = typer.Option(1, "-n", min=1), max_tokens: int = typer.Option(128),
        temperature: float = typer.Option(0.7), top_p: float = typer.Option(1.0),
        seed: Optional[int] = typer.Option(None),
        stop: list[str] = typer.Option([]), logprobs: Optional[int] = typer.Option(None),
        json_schema: Optional[Path] = typer.Option(None),
        concurrency: int = typer.Option(8, min=1), retries: int = typer.Option(4, min=0),
        cache: Optional[Path] = typer.Option(None),
        run_dir: Optional[Path] = typer.Option(None, help="write manifest.json here "
                                                          "(default: next to --out)"),
        progress: bool = typer.Option(True)):
    """Run every prompt of a JSONL file; a killed run resumes where it stopped."""
    from rolecall.llm.batch import read_batch_input, run_batch
    from rolecall.rundir import RunDir

    params = _params(max_tokens, temperature, top_p, seed, stop, logprobs, json_schema)
    batch = read_batch_input(input, params)
    llm = _llm(model, cache, concurrency, retries)
    run = RunDir(run_dir or out_path.parent, "llm batch",
                 {"input": str(input), "out": str(out_path), "n": n,
                  "params": params.model_dump(mode="json")})
    run.record_model("generator", llm.model_id)
    try:
        run_batch(llm, batch, out_path, n, progress=progress)
    finally:
        run.record_stage("llm batch", {"items": len(batch.ids), "samples": len(batch.ids) * n,
                                       "failures": llm.stats.failures}, llm.stats.as_dict())
        err.print(f"{llm.model_id}: {llm.stats.summary()}")


@app.command()
def doctor(model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
           check: bool = typer.Option(True, help="make one real call to the model")):
    """Show installed backends, the embedded model, and check one model string."""
    from rolecall.doctor import run_doctor

    ok = run_doctor(out, model, check)
    raise typer.Exit(0 if ok else 1)


@db_app.command("upgrade")
def db_upgrade(url: Optional[str] = typer.Option(None, help="database URL (default: SQLite "
                                                           "in ROLECALL_HOME, or "
                                                           "ROLECALL_DATABASE_URL)")):
    """Create or migrate the database to the latest schema."""
    from rolecall.store.db import db_upgrade_command

    out.print(db_upgrade_command(url))


RECORD_TYPES = ["example", "dialogue", "pair", "verdict", "turn"]


@records_app.command("check")
def records_check(path: Path, kind: str = typer.Option(..., "--as",
                                                       help="/".join(RECORD_TYPES))):
    """Validate every line of a JSONL file as one record type."""
    from rolecall import records
    from rolecall.jsonl import read_jsonl

    if kind not in RECORD_TYPES:
        raise ConfigError(f"unknown record type '{kind}'", fix=f"use one of {RECORD_TYPES}")
    model = getattr(records, kind.capitalize())
    count = sum(1 for _ in read_jsonl(path, model))
    out.print(f"{path}: {count} valid {model.__name__} records")


@spec_app.command("check")
def spec_check(path: Path):
    """Validate a role specification and summarise it."""
    from rolecall.spec import load_role_spec

    spec = load_role_spec(path)
    out.print(f"{path}: role '{spec.name}' ({spec.language}), {len(spec.categories)} "
              f"categories -> error categories: {', '.join(spec.error_categories)}")


def _read_dialogues(path: Path):
    """Rolecall Dialogue JSONL, or a CareCall corpus file (.json)."""
    from rolecall.formats.carecall import read_carecall
    from rolecall.jsonl import read_jsonl
    from rolecall.records import Dialogue

    if path.suffix == ".json":
        return read_carecall(path)
    return list(read_jsonl(path, Dialogue))


def _finish(llm, run, stage: str, counts: dict) -> None:
    from rolecall.errors import BatchFailed

    run.record_stage(stage, counts, llm.stats.as_dict())
    err.print(f"{llm.model_id}: {llm.stats.summary()}")
    out.print(json.dumps(counts, ensure_ascii=False))
    if llm.stats.failures:
        raise BatchFailed(f"{llm.stats.failures} LLM calls failed after retries; every "
                          f"finished record is kept in {run.path}",
                          fix="fix the cause and run the same command again")


@dialogues_app.command("generate")
def dialogues_generate(
        spec_path: Path = typer.Option(..., "--spec", help="role specification (YAML)"),
        examples: Path = typer.Option(..., help="example dialogues (JSONL or CareCall .json)"),
        out_dir: Path = typer.Option(..., "--out", help="run directory (resumable)"),
        count: int = typer.Option(10, "-n", "--count", min=1),
        model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
        temperature: float = typer.Option(0.5), top_p: float = typer.Option(0.8),
        max_tokens: int = typer.Option(768), seed: int = typer.Option(0),
        frequency_penalty: float = typer.Option(0.0, help="OpenAI-style; small base models "
                                                          "loop less with ~0.5"),
        presence_penalty: float = typer.Option(0.0),
        min_turns: int = typer.Option(6),
        accept_unfinished: bool = typer.Option(False, help="keep dialogues cut by the token "
                                                           "limit (last turn dropped)"),
        concurrency: int = typer.Option(8, min=1), cache: Optional[Path] = typer.Option(None),
        progress: bool = typer.Option(True)):
    """Generate whole dialogues one-shot from the spec's outline and one example each."""
    from rolecall.generate.dialogues import GenerationConfig, generate_dialogues
    from rolecall.prompts import load_template
    from rolecall.rundir import RunDir
    from rolecall.spec import load_role_spec

    spec = load_role_spec(spec_path)
    shots = _read_dialogues(examples)
    config = GenerationConfig(count=count, temperature=temperature, top_p=top_p,
                              max_tokens=max_tokens, seed=seed, min_turns=min_turns,
                              frequency_penalty=frequency_penalty,
                              presence_penalty=presence_penalty,
                              language=spec.language, require_end=not accept_unfinished)
    llm = _llm(model, cache, concurrency)
    run = RunDir(out_dir, "dialogues generate", {"spec": str(spec_path),
                                                 "examples": str(examples), **vars(config)})
    run.record_model("generator", llm.model_id)
    run.record_prompt(config.template, load_template(config.template, spec.language).source)
    counts = generate_dialogues(llm, spec, shots, config, out_dir, progress=progress)
    _finish(llm, run, "generate", counts)


@dialogues_app.command("judge")
def dialogues_judge(
        spec_path: Path = typer.Option(..., "--spec", help="role specification (YAML)"),
        dialogues: Path = typer.Option(..., help="dialogues to judge (JSONL or CareCall .json)"),
        out_dir: Path = typer.Option(..., "--out", help="run directory (resumable)"),
        model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
        mode: str = typer.Option("auto", help="auto, score (label log-likelihoods) or "
                                              "generate (JSON answer)"),
        samples: int = typer.Option(1, min=1, help="votes per turn (majority decides)"),
        temperature: float = typer.Option(0.0, help="judge temperature (generate mode)"),
        concurrency: int = typer.Option(8, min=1), cache: Optional[Path] = typer.Option(None),
        progress: bool = typer.Option(True)):
    """Judge each system turn up to the first out-of-bounds one; write examples."""
    from rolecall.judge.dialogues import judge_dialogues
    from rolecall.judge.out_of_bounds import make_judge
    from rolecall.rundir import RunDir
    from rolecall.spec import load_role_spec

    spec = load_role_spec(spec_path)
    items = _read_dialogues(dialogues)
    llm = _llm(model, cache, concurrency)
    judge = make_judge(spec, llm.backend, mode, temperature)
    run = RunDir(out_dir, "dialogues judge", {"spec": str(spec_path), "dialogues":
                 str(dialogues), "mode": judge.mode, "constrained": judge.constrained,
                 "samples": samples, "temperature": temperature})
    run.record_model("judge", llm.model_id)
    run.record_prompt(judge.template.name, judge.template.source)
    counts = judge_dialogues(llm, judge, items, out_dir, samples, progress)
    _finish(llm, run, "judge", {"dialogues": len(items), **counts})


@dialogues_app.command("stats")
def dialogues_stats(files: list[Path] = typer.Argument(..., help="dialogue files (JSONL or "
                                                                 "CareCall .json)"),
                    as_json: bool = typer.Option(False, "--json")):
    """The paper's Table 2 for each file, side by side (eojeol and Kiwi morphemes)."""
    from rolecall.eval.stats import dataset_stats, format_stats_table, stats_to_json

    columns = {}
    for path in files:
        name = path.name if path.name not in columns else str(path)
        columns[name] = dataset_stats(_read_dialogues(path))
    if as_json:
        out.print(stats_to_json(columns), markup=False, highlight=False, soft_wrap=True)
    else:
        out.print(format_stats_table(columns))


@dialogues_app.command("import-carecall")
def dialogues_import(source: Path, target: Path,
                     examples: bool = typer.Option(False, help="write training examples "
                                                               "instead of dialogues")):
    """CareCall corpus JSON -> rolecall dialogue JSONL (or training examples)."""
    from rolecall.formats.carecall import (carecall_to_examples, read_carecall,
                                           write_examples_jsonl)
    from rolecall.jsonl import write_jsonl

    count = (write_examples_jsonl(target, carecall_to_examples(source)) if examples
             else write_jsonl(target, read_carecall(source)))
    out.print(f"{target}: {count} {'examples' if examples else 'dialogues'}")


@dialogues_app.command("export-carecall")
def dialogues_export(source: Path, target: Path):
    """Rolecall dialogue JSONL (e.g. judged.jsonl) -> CareCall corpus JSON."""
    from rolecall.formats.carecall import write_carecall

    count = write_carecall(target, _read_dialogues(source))
    out.print(f"{target}: {count} dialogues")


slang_app = typer.Typer(help="K/DA slang index: comment corpora searched for trend-aligned "
                             "slang.", no_args_is_help=True)
app.add_typer(slang_app, name="slang")

CORPUS_HELP = ("corpus files: PATH (one comment a line) or PATH:COLUMN (a header name, or a "
               "1-based field number for a file without a header); .csv/.tsv must name "
               "their column")


@slang_app.command("index")
def slang_index(
        corpora: list[str] = typer.Argument(..., help=CORPUS_HELP),
        out_dir: Path = typer.Option(..., "--out", "-o", help="the index directory to write"),
        delimiter: Optional[str] = typer.Option(
            None, help="field delimiter of PATH:COLUMN corpora that are not .csv/.tsv: one "
                       "character, or tab/pipe/comma/semicolon"),
        min_chars: int = typer.Option(5, min=0, help="drop shorter comments (characters, "
                                                     "after cleaning)"),
        max_chars: int = typer.Option(300, min=1, help="drop longer comments"),
        retriever: str = typer.Option(
            "bm25", help="bm25 (Kiwi morphemes), dense (embeddings in FAISS) or hybrid "
                         "(reciprocal-rank fusion of both): BM25 is always built; this "
                         "becomes the index's default for 'slang search'"),
        dense_model: Optional[str] = typer.Option(
            None, help="for dense/hybrid: a sentence-transformers model directory (or a "
                       "name already in the local Hugging Face cache; never downloaded)"),
        progress: bool = typer.Option(True)):
    """Build a slang index: clean the comments, Kiwi morphemes, BM25 (bm25s), and
    optionally sentence-transformers embeddings in FAISS."""
    from rolecall.retrieval.slang import index_command

    out.print(index_command(corpora, out_dir, min_chars=min_chars, max_chars=max_chars,
                            delimiter=delimiter, retriever=retriever,
                            dense_model=dense_model, progress=progress),
              highlight=False, markup=False)


@slang_app.command("search")
def slang_search(
        index_dir: Path = typer.Argument(..., help="a directory built by 'slang index'"),
        query: str = typer.Argument(..., help="the sentence to find slang-bearing comments for"),
        k: int = typer.Option(9, "-k", "--k", min=0, help="how many comments (K/DA: 0-9)"),
        as_json: bool = typer.Option(False, "--json", help="one JSON object per hit"),
        retriever: Optional[str] = typer.Option(
            None, help="bm25, dense or hybrid (default: the one the index was built for)"),
        dense_model: Optional[str] = typer.Option(
            None, help="the model to embed the query with, if the one recorded in the "
                       "index has moved (it must be the same model)")):
    """The comments most like a sentence: rank, score (BM25, cosine for dense, RRF for
    hybrid), FILE:LINE id, text."""
    from rolecall.retrieval.slang import format_hits, hits_to_json, search_command

    hits = search_command(index_dir, query, k, retriever, dense_model)
    out.print(hits_to_json(hits) if as_json else format_hits(hits),
              highlight=False, markup=False)


detox_app = typer.Typer(help="K/DA: neutral -> implicitly offensive pairs (generate, filter, "
                             "export), and the detox model (train, rewrite).",
                        no_args_is_help=True)
app.add_typer(detox_app, name="detox")
detox_app.command("train")(detox_train_command)
detox_app.command("rewrite")(detox_rewrite_command)
detox_app.command("score")(detox_score_command)
detox_app.command("offensiveness-data")(offensiveness_data_command)


@detox_app.command("generate")
def detox_generate(
        sentences: str = typer.Option(..., help="neutral sentences: PATH or PATH:COLUMN "
                                                "(e.g. chatbot_data.csv:Q)"),
        index_dir: Optional[Path] = typer.Option(None, "--index", help="slang index "
                                                 "directory ('rolecall slang index')"),
        out_dir: Path = typer.Option(..., "--out", help="run directory (resumable)"),
        ns: str = typer.Option("0,3,5,7,9", help="numbers of retrieved comments"),
        limit: Optional[int] = typer.Option(None, min=1, help="first N sentences only"),
        max_chars: int = typer.Option(200, min=1, help="skip longer sentences"),
        delimiter: Optional[str] = typer.Option(None),
        model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
        language: str = typer.Option("ko"), temperature: float = typer.Option(0.8),
        seed: int = typer.Option(0), max_tokens: int = typer.Option(80),
        concurrency: int = typer.Option(8, min=1), cache: Optional[Path] = typer.Option(None),
        progress: bool = typer.Option(True)):
    """Rewrite each neutral sentence once per n, with n retrieved slang comments."""
    from rolecall.generate.detox import DetoxConfig
    from rolecall.pipelines.detox import generate_stage, neutral_sentences
    from rolecall.retrieval.slang import SlangIndex
    from rolecall.rundir import RunDir

    try:
        n_values = tuple(int(n) for n in ns.split(","))
    except ValueError:
        raise ConfigError(f"--ns '{ns}' is not a list of numbers", fix="e.g. --ns 0,3,5,7,9"
                          ) from None
    config = DetoxConfig(ns=n_values, temperature=temperature, max_tokens=max_tokens,
                         seed=seed, language=language)
    if max(n_values) > 0 and index_dir is None:
        raise ConfigError("n > 0 needs retrieved comments", fix="pass --index DIR (built "
                          "with 'rolecall slang index'), or use --ns 0")
    rows, skipped = neutral_sentences(sentences, delimiter, limit, max_chars, language)
    if any(skipped.values()):
        err.print(f"skipped sentences: {skipped}")
    index = SlangIndex.load(index_dir) if index_dir else None
    llm = _llm(model, cache, concurrency)
    run = RunDir(out_dir, "detox generate", {"sentences": sentences, "index": str(index_dir),
                                             **vars(config)})
    try:
        counts = generate_stage(llm, run, rows, index, config, progress)
    finally:
        err.print(f"{llm.model_id}: {llm.stats.summary()}")
    out.print(json.dumps(counts, ensure_ascii=False))


@detox_app.command("filter")
def detox_filter(
        out_dir: Path = typer.Option(..., "--out", help="the run directory of 'generate'"),
        models: Optional[list[str]] = typer.Option(
            None, "--model", "-m", help=MODEL_HELP + ". Repeat for a panel of judge models: "
                                                      "majority over all their votes"),
        mode: str = typer.Option("auto", help="auto, score or generate"),
        samples: int = typer.Option(1, min=1, help="votes per candidate and judge model"),
        language: str = typer.Option("ko"), temperature: float = typer.Option(0.0),
        calibrate: bool = typer.Option(False, help="score mode: divide out each label "
                                                   "word's prior on content-free inputs"),
        consistency_template: Optional[str] = typer.Option(None),
        implicit_template: Optional[str] = typer.Option(None),
        concurrency: int = typer.Option(8, min=1), cache: Optional[Path] = typer.Option(None),
        progress: bool = typer.Option(True)):
    """Pair consistency, then implicit offensiveness; writes pairs.jsonl and retention."""
    from rolecall.pipelines.detox import FilterSection, filter_stage
    from rolecall.rundir import RunDir

    section = FilterSection(models=models or [], mode=mode, samples=samples,
                            temperature=temperature, calibrate=calibrate,
                            consistency_template=consistency_template,
                            implicit_template=implicit_template)
    llms = [_llm(m, cache, concurrency) for m in dict.fromkeys(models or [None])]
    run = RunDir(out_dir, "detox filter", section.model_dump())
    try:
        filter_stage(llms, run, section, language, progress)
    finally:
        for llm in llms:
            err.print(f"{llm.model_id}: {llm.stats.summary()}")
    out.print(json.dumps(run.manifest["stages"]["filter"]["counts"], ensure_ascii=False))


@detox_app.command("export")
def detox_export(out_dir: Path = typer.Option(..., "--out", help="the run directory"),
                 name: str = typer.Option("rolecall K/DA pairs"),
                 licence: str = typer.Option("research use; see the sources' licences"),
                 formats: str = typer.Option("csv", help="comma-separated: csv, parquet, hf "
                                                         "(Hugging Face datasets directory)")):
    """K/DA CSV (neutral,implicit), Parquet, a datasets directory and a data card."""
    from pydantic import ValidationError

    from rolecall.pipelines.detox import ExportSection, export_stage
    from rolecall.rundir import RunDir

    try:
        section = ExportSection(name=name, licence=licence,
                                formats=[f.strip() for f in formats.split(",") if f.strip()])
    except ValidationError as exc:
        raise ConfigError(f"bad --formats: {describe_validation(exc)}",
                          fix="use csv, parquet and/or hf") from None
    files = export_stage(RunDir(out_dir, "detox export", section.model_dump()), section)
    for kind, path in files.items():
        out.print(f"{kind}: {path}", highlight=False, markup=False)


@detox_app.command("run")
def detox_run(config_path: Path = typer.Argument(..., help="pipeline config (YAML); see "
                                                           "examples/kda/config.yaml"),
              until: str = typer.Option("geval", help="stop after this stage: index, "
                                                      "generate, filter, export or geval"),
              progress: bool = typer.Option(True)):
    """The whole K/DA pipeline: index -> generate -> filter -> export -> G-Eval; resumable."""
    from rolecall.pipelines.detox import load_detox_config, run_detox

    config = load_detox_config(config_path)
    cache = Path(config.cache) if config.cache else None
    opened = []

    def load(model):
        opened.append(_llm(model, cache, config.concurrency, config.retries))
        return opened[-1]

    try:
        run_detox(config, load, until, progress,
                  say=lambda line: out.print(line, highlight=False, markup=False))
    finally:
        for llm in opened:
            err.print(f"{llm.model_id}: {llm.stats.summary()}")


eval_app = typer.Typer(help="Evaluation: G-Eval, filter-human agreement, unanswerable "
                                "contexts.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
app.add_typer(train_app, name="train")
app.command("chat")(chat_command)
app.command("serve")(serve_command)
app.add_typer(web_app, name="web")
eval_app.command("unanswerable")(unanswerable_command)


def _geval_input(path: Path, limit: Optional[int]):
    """(texts, neutrals or None): K/DA CSV or Pair JSONL give pairs, the JSONL of 'detox
    rewrite' its outputs (against the reference, else the input); other files sentences."""
    from rolecall.cli_detox_model import read_rewrites
    from rolecall.formats.kda import read_kda_csv
    from rolecall.jsonl import read_jsonl
    from rolecall.records import Pair
    from rolecall.retrieval.clean import read_corpus

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
        files: list[Path] = typer.Argument(..., help="K/DA CSV (neutral,implicit), Pair "
                                                      "JSONL, or sentences one a line"),
        criteria: str = typer.Option("overall,implicit,consistency,fluency"),
        model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
        mode: str = typer.Option("auto", help="auto, score, logprobs or sample"),
        samples: int = typer.Option(5, min=1, help="answers per item in sample mode"),
        limit: Optional[int] = typer.Option(None, min=1, help="first N items of each file"),
        language: str = typer.Option("ko"), cache: Optional[Path] = typer.Option(None),
        as_json: bool = typer.Option(False, "--json", help="every item's score as JSON"),
        progress: bool = typer.Option(True)):
    """Score datasets 1-5 per criterion and compare them in one table."""
    from dataclasses import asdict

    from rich.table import Table

    from rolecall.eval.geval import geval, summarise

    wanted = [c.strip() for c in criteria.split(",") if c.strip()]
    llm = _llm(model, cache)
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
        cells = [f"{summary[c]['mean']:.2f} ({summary[c]['mode']}, n={summary[c]['scored']})"
                 if c in summary and summary[c]["mean"] is not None else "-" for c in wanted]
        table.add_row(path.name, *cells)
    if as_json:
        out.print(json.dumps(everything, ensure_ascii=False), markup=False, highlight=False)
    else:
        out.print(table)
    err.print(f"{llm.model_id}: {llm.stats.summary()}")


@eval_app.command("agreement")
def eval_agreement(run_dir: Path = typer.Option(..., "--run", help="a filtered detox run"),
                   labels: Path = typer.Option(..., help="CSV: item_id,filter,label"
                                                         "[,annotator]")):
    """Agreement %, Cohen's kappa and majority-vote agreement of people with each filter."""
    from rolecall.eval.agreement import agreement_report, read_human_labels
    from rolecall.jsonl import read_jsonl
    from rolecall.records import Verdict

    human = read_human_labels(labels)
    verdicts = {}
    for name in human:
        path = run_dir / f"verdicts_{name}.jsonl"
        verdicts[name] = list(read_jsonl(path, Verdict)) if path.exists() else []
    out.print(json.dumps(agreement_report(verdicts, human), ensure_ascii=False, indent=2),
              markup=False, highlight=False)


def main() -> None:
    # A crash inside a native library (llama.cpp, torch) kills the process with a signal;
    # faulthandler at least leaves the Python stack of the crash on stderr.
    faulthandler.enable()
    try:
        app()
    except RolecallError as exc:
        err.print(f"[bold red]error:[/bold red] {escape(exc.message)}", highlight=False)
        if exc.fix:
            err.print(f"[bold]fix:[/bold] {escape(exc.fix)}", highlight=False)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
