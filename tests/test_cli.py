"""The CLI as a user meets it: real subprocesses, exit codes, messages without tracebacks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rolecall.jsonl import read_jsonl
from tests.cli_runs import run_cli

HANGUL = re.compile("[\uac00-\ud7a3]")


@pytest.mark.embedded
def test_version_is_printed():
    from rolecall import __version__

    shown = run_cli("--version")
    assert shown.returncode == 0 and shown.stdout.strip() == f"rolecall {__version__}"


@pytest.mark.parametrize(
    "command",
    [
        ["train", "classifier", "ex.jsonl", "--backbone", "tfidf"],
        ["slang", "index", "corpus.txt"],
        ["redteam", "bot"],
        ["bot", "check", "bot"],
        ["demo"],
    ],
)
def test_an_out_that_is_a_file_is_a_usage_error_and_the_file_is_kept(tmp_path, command):
    taken = tmp_path / "taken"
    taken.write_text("keep me", encoding="utf-8")
    for out in (taken, taken / "below"):
        failed = run_cli(*command, "--out", str(out))
        assert failed.returncode == 2 and "Traceback" not in failed.stdout + failed.stderr
        flat = re.sub(r"[\s│]", "", failed.stderr)  # rich boxes and wraps the message
        assert re.sub(r"\s", "", f"{taken} is a file, not a directory") in flat
    assert taken.read_text(encoding="utf-8") == "keep me"


@pytest.mark.parametrize(
    "command", [["redteam", "bot"], ["bot", "check", "bot"], ["kda", "export"]]
)
def test_an_out_made_by_another_kind_of_run_is_a_usage_error_before_any_work(tmp_path, command):
    run = tmp_path / "run"
    run.mkdir()
    manifest = json.dumps({"command": "dialogues run", "runs": [], "config": {}})
    (run / "manifest.json").write_text(manifest, encoding="utf-8")
    failed = run_cli(*command, "--out", str(run))
    flat = re.sub(r"[\s│]", "", failed.stderr)
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert "holdsadialoguesrun(madeby'rolecalldialoguesrun')" in flat
    assert "adirectoryofitsown" in flat
    assert sorted(p.name for p in run.iterdir()) == ["manifest.json"]  # nothing written
    # a run of its own kind is taken (it resumes)
    run_kind = {"redteam": "redteam", "bot": "bot check", "kda": "kda run"}[command[0]]
    (run / "manifest.json").write_text(manifest.replace("dialogues run", run_kind), "utf-8")
    assert "holds a" not in run_cli(*command, "--out", str(run)).stderr
    if command[:2] == ["bot", "check"]:  # a bot's report is not written into the bot
        (run / "manifest.json").write_text(manifest.replace("dialogues run", "bot run"), "utf-8")
        flat = re.sub(r"[\s│]", "", run_cli(*command, "--out", str(run)).stderr)
        assert "holdsabotrun(madeby'rolecallbotrun')" in flat


def test_an_out_this_user_cannot_write_is_a_usage_error(tmp_path, monkeypatch):
    import os

    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != tmp_path and real(p, mode))
    failed = run_cli("slang", "index", "corpus.txt", "--out", str(tmp_path / "index"))
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert "isnotwritablebythisuser" in re.sub(r"[\s│]", "", failed.stderr)


def test_doctor_checks_the_default_model():
    result = run_cli("doctor")
    assert result.returncode == 0, result.stderr
    assert "model llamacpp:embedded: OK" in result.stdout
    assert "gemma-3-270m-q4_k_m.gguf" in result.stdout


def test_doctor_reports_a_bad_model_and_fails():
    result = run_cli("doctor", "-m", "openai:http://127.0.0.1:9/v1?model=x&timeout=1")
    assert result.returncode == 1
    assert "FAILED" in result.stdout and "127.0.0.1:9" in result.stdout


@pytest.mark.embedded
def test_json_schema_and_perplexity_commands(tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"answer": {"type": "string", "enum": ["예", "아니오"]}},
                "required": ["answer"],
            }
        )
    )
    result = run_cli(
        "llm",
        "complete",
        "질문: 오늘 식사하셨어요?\n답:",
        "--json-schema",
        str(schema),
        "--temperature",
        "0",
        "--max-tokens",
        "20",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["answer"] in ("예", "아니오")
    result = run_cli("llm", "perplexity", "오늘은 날씨가 맑습니다.")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["perplexity"] > 1


def test_records_check_counts_valid_records_and_names_bad_lines(tmp_path):
    good = tmp_path / "examples.jsonl"
    good.write_text(
        json.dumps(
            {
                "history": [{"role": "user", "text": "안녕하세요"}],
                "response": "네, 안녕하세요 어르신.",
                "label": "positive",
            },
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    result = run_cli("records", "check", str(good), "--as", "example")
    assert result.returncode == 0 and "1 valid Example records" in result.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        good.read_text(encoding="utf-8")
        + '{"history": [], "response": "x", "label": "negative"}\n',
        encoding="utf-8",
    )
    result = run_cli("records", "check", str(bad), "--as", "example")
    assert result.returncode == 1 and "bad.jsonl:2:" in result.stderr
    assert "error category" in result.stderr and "Traceback" not in result.stderr
    result = run_cli("records", "check", str(good), "--as", "speech")
    assert result.returncode == 2 and "'speech' is not one of 'example'" in result.stderr


def test_every_option_has_a_help_text():
    import typer

    from rolecall.cli.app import app

    missing = []

    def walk(command, path):
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])
        missing.extend(
            f"{' '.join(path)} {param.opts[0]}"
            for param in command.params
            if param.param_type_name == "option" and not param.help
        )

    walk(typer.main.get_command(app), [])
    assert not missing, f"options without a help text: {', '.join(missing)}"


def test_help_shows_every_option_name_whole_at_80_and_at_rich_width():
    """Below ``RICH_HELP_COLUMNS`` the help is click's plain text, which wraps; rich's
    option table, from that width up, cut "--consistency-model" to "--consistency-…" at
    80 columns."""
    import typer

    from rolecall.cli.app import RICH_HELP_COLUMNS, app

    commands = []

    def walk(command, path):
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])
        if not getattr(command, "commands", None):
            names = [o for p in command.params for o in p.opts if o.startswith("--")]
            commands.append((path, names))

    walk(typer.main.get_command(app), [])
    assert len(commands) > 40
    cut = []
    for columns in (80, RICH_HELP_COLUMNS):
        for path, names in commands:
            result = run_cli(*path, "--help", env_extra={"COLUMNS": str(columns)})
            assert result.returncode == 0, (path, result.stderr)
            cut += [(columns, *path, n) for n in names if n not in result.stdout]
            assert "…" not in result.stdout, (columns, path)
            assert "<bool>" not in result.stdout, (columns, path)  # an on/off flag takes no value
            assert max(map(len, result.stdout.splitlines())) <= columns, (columns, path)
    assert not cut, cut


def test_every_out_is_a_directory_or_one_file_and_says_which_before_any_work():
    """``--out`` is where a command writes its product: a directory (a run, a model, an
    index, a report) or, for the commands whose product is one JSONL file, that file; its
    help says which, and its check runs before any work (docs/setup.md)."""
    import typer

    from rolecall.cli.app import app

    seen, wrong = 0, []

    def walk(command, path):
        nonlocal seen
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])
        for param in command.params:
            if "--out" not in param.opts:
                continue
            seen += 1
            check = getattr(param.callback, "__name__", None) or getattr(
                getattr(param.callback, "func", None), "__name__", None
            )
            says = {
                "out_directory": "director",
                "output_file": "JSONL",
                "json_output_file": "JSONL",
            }.get(check)
            if says is None or says not in param.help:
                wrong.append(f"{' '.join(path)}: {check} {param.help!r}")

    walk(typer.main.get_command(app), [])
    assert seen > 15 and not wrong, wrong


def test_bad_sampling_options_are_clear():
    result = run_cli("llm", "complete", "x", "-m", "fake:a", "--temperature", "5")
    assert result.returncode == 2 and "temperature" in result.stderr
    assert "Traceback" not in result.stderr


def test_slang_index_and_search_commands(tmp_path):
    corpus = tmp_path / "comments.txt"
    corpus.write_text(
        "\n".join(
            [
                "오늘 날씨 진짜 좋네 산책 가야지",
                "이 드라마 작가 진짜 노답이다 ㅋㅋ",
                "점심 메뉴 추천 좀 해줘요 배고파",
                "주식 또 떨어졌네 개미들 곡소리 난다",
                "오늘 날씨 진짜 좋네 산책 가야지",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    index = tmp_path / "index"
    result = run_cli("slang", "index", str(corpus), "--out", str(index), "--no-progress")
    assert result.returncode == 0, result.stderr
    result = run_cli("slang", "search", str(index), "주식이 많이 떨어졌어요", "-k", "2", "--json")
    assert result.returncode == 0, result.stderr
    hits = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert hits[0]["id"] == "comments.txt:4" and "개미" in hits[0]["text"]
    result = run_cli("slang", "search", str(tmp_path), "x")
    assert result.returncode != 0 and "Traceback" not in result.stderr


def test_kda_generate_filter_export_commands(tmp_path):
    sentences = tmp_path / "neutral.csv"
    sentences.write_text(
        "Q,A\n오늘 회의가 취소되었습니다.,네\n주식이 떨어졌어요.,저런\n"
        "오늘 회의가 취소되었습니다.,중복\n",
        encoding="utf-8",
    )
    run = tmp_path / "run"
    common = ["-m", "fake:x", "--no-progress", "--cache", str(tmp_path / "c.sqlite")]
    result = run_cli(
        "detox",
        "generate",
        "--sentences",
        f"{sentences}:Q",
        "--ns",
        "0",
        "--out",
        str(run),
        *common,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1])["planned"] == 2  # the duplicate went
    result = run_cli("kda", "filter", "--out", str(run), *common)
    assert result.returncode == 0, result.stderr
    result = run_cli("kda", "export", "--out", str(run))
    assert result.returncode == 0, result.stderr
    rows = (run / "kda.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == "neutral,implicit" and len(rows) - 1 == len(
        (run / "pairs.jsonl").read_text(encoding="utf-8").splitlines()
    )
    assert "neutral.csv:Q" in (run / "DATA_CARD.md").read_text(encoding="utf-8")
    result = run_cli("kda", "generate", "--sentences", f"{sentences}:Q", "--out", str(run), *common)
    assert result.returncode == 2 and "--index" in result.stderr
    # resumed step by step with another setting: refused, nothing in the run changes
    before = (run / "candidates.jsonl").read_bytes()
    result = run_cli(
        "detox",
        "generate",
        "--sentences",
        f"{sentences}:Q",
        "--ns",
        "0",
        "--seed",
        "7",
        "--out",
        str(run),
        *common,
    )
    assert result.returncode == 2 and "(seed changed)" in result.stderr
    assert "Traceback" not in result.stderr and (run / "candidates.jsonl").read_bytes() == before


def test_geval_command_compares_datasets(tmp_path):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(
        "neutral,implicit\n회의가 취소됐어요.,회의 취소라니 윗분들 또 땡땡이네\n", encoding="utf-8"
    )
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("오늘 날씨가 좋네요.\n", encoding="utf-8")
    result = run_cli(
        "eval", "geval", str(pairs), str(sentences), "-m", "fake:x", "--json", "--no-progress"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report[str(pairs)]["summary"]) == {"overall", "implicit", "consistency", "fluency"}
    assert "consistency" not in report[str(sentences)]["summary"]  # no pairs, no consistency
    assert report[str(pairs)]["summary"]["overall"]["mode"] == "score"
    rewrites = tmp_path / "rewrites.jsonl"  # what 'rolecall detox rewrite --jsonl' writes
    rewrites.write_text(
        json.dumps(
            {
                "input": "회의 취소라니 또 땡땡이네",
                "output": "회의가 취소됐네요.",
                "reference": "회의가 취소됐어요.",
            },
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    result = run_cli(
        "eval",
        "geval",
        str(rewrites),
        "-m",
        "fake:x",
        "--json",
        "--no-progress",
        "--criteria",
        "consistency,fluency",
    )
    report = json.loads(result.stdout)[str(rewrites)]
    assert report["summary"]["consistency"]["scored"] == 1  # the output against the reference
    assert [item["criterion"] for item in report["items"]] == ["consistency", "fluency"]


def test_kda_run_against_a_dead_server_keeps_its_work_and_resumes(tmp_path):
    from tests.llm.flaky_server import FakeOpenAIServer

    (tmp_path / "comments.txt").write_text(
        "회의 또 취소냐 ㅋㅋ\n주식 떡락 개미들 곡소리\n", encoding="utf-8"
    )
    (tmp_path / "neutral.txt").write_text(
        "오늘 회의가 취소되었습니다.\n주식이 떨어졌어요.\n", encoding="utf-8"
    )
    with FakeOpenAIServer(default=503) as server:
        config = {
            "out": "run",
            "cache": "cache.sqlite",
            "model": f"openai:{server.url}?model=m&timeout=2",
            "retries": 0,
            "slang": {"index": "index", "corpora": ["comments.txt"]},
            "sentences": {"path": "neutral.txt"},
            "generate": {"ns": [0, 1]},
            "export": {"formats": ["csv"]},
            "geval": {"enabled": False},
        }
        path = tmp_path / "config.yaml"
        path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
        result = run_cli("kda", "run", str(path), "--no-progress")
        assert result.returncode == 3, result.stderr
        assert "generate: 4 LLM calls failed" in result.stderr and "503" in result.stderr
        assert "Traceback" not in result.stderr
        assert (tmp_path / "index" / "manifest.json").is_file()  # the index stays built
        failures = list(read_jsonl(tmp_path / "run" / "generate.failures.jsonl"))
        assert len(failures) == 4 and all("503" in f["error"] for f in failures)

        built = (tmp_path / "index" / "manifest.json").stat().st_mtime_ns
        server.default = "ok"  # the server is back: the same command finishes the job
        result = run_cli("kda", "run", str(path), "--no-progress")
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "index" / "manifest.json").stat().st_mtime_ns == built
        assert (tmp_path / "run" / "kda.csv").is_file()
        assert list(read_jsonl(tmp_path / "run" / "generate.failures.jsonl")) == []
