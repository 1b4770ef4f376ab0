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
    "command", [["redteam", "bot"], ["bot", "check", "bot"], ["detox", "export"]]
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
    run_kind = {"redteam": "redteam", "bot": "bot check", "detox": "detox run"}[command[0]]
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


def test_detox_generate_filter_export_commands(tmp_path):
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
    result = run_cli("detox", "filter", "--out", str(run), *common)
    assert result.returncode == 0, result.stderr
    result = run_cli("detox", "export", "--out", str(run))
    assert result.returncode == 0, result.stderr
    rows = (run / "kda.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == "neutral,implicit" and len(rows) - 1 == len(
        (run / "pairs.jsonl").read_text(encoding="utf-8").splitlines()
    )
    assert "neutral.csv:Q" in (run / "DATA_CARD.md").read_text(encoding="utf-8")
    result = run_cli(
        "detox", "generate", "--sentences", f"{sentences}:Q", "--out", str(run), *common
    )
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


def test_detox_run_against_a_dead_server_keeps_its_work_and_resumes(tmp_path):
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
        result = run_cli("detox", "run", str(path), "--no-progress")
        assert result.returncode == 3, result.stderr
        assert "generate: 4 LLM calls failed" in result.stderr and "503" in result.stderr
        assert "Traceback" not in result.stderr
        assert (tmp_path / "index" / "manifest.json").is_file()  # the index stays built
        failures = list(read_jsonl(tmp_path / "run" / "generate.failures.jsonl"))
        assert len(failures) == 4 and all("503" in f["error"] for f in failures)

        built = (tmp_path / "index" / "manifest.json").stat().st_mtime_ns
        server.default = "ok"  # the server is back: the same command finishes the job
        result = run_cli("detox", "run", str(path), "--no-progress")
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "index" / "manifest.json").stat().st_mtime_ns == built
        assert (tmp_path / "run" / "kda.csv").is_file()
        assert list(read_jsonl(tmp_path / "run" / "generate.failures.jsonl")) == []


def test_newcomer_mistakes_get_a_message_and_change_nothing(tmp_path):
    """Tries from issue 48's re-run: each a clear error, no traceback, nothing half-made."""
    repo = Path(__file__).resolve().parents[1]
    spec, examples = (
        repo / "examples/carecall/spec.yaml",
        repo / "examples/carecall/dialogues.jsonl",
    )

    def failed(result, code, says):
        flat = re.sub(r"[\s│]", "", result.stderr)
        assert result.returncode == code and "Traceback" not in result.stderr, result.stderr
        assert re.sub(r"\s", "", says) in flat, result.stderr

    # one-shot generation from an empty examples file: no run directory is left to refuse
    # the corrected command
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    gen = ["dialogues", "generate", "--spec", str(spec), "-n", "1", "-m", "fake:x"]
    failed(
        run_cli(*gen, "--examples", str(empty), "--out", str(tmp_path / "g")),
        1,
        "holds no dialogue",
    )
    assert not (tmp_path / "g" / "manifest.json").exists()
    # an unknown stage leaves an existing run as it was
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(
        json.dumps({"command": "dialogues run", "runs": [], "config": {}}), "utf-8"
    )
    before = (run / "manifest.json").read_bytes()
    config = tmp_path / "run.yaml"
    config.write_text(f"spec: {spec}\nexamples: {examples}\nout: {run}\n", encoding="utf-8")
    failed(run_cli("dialogues", "run", str(config), "--until", "bogus"), 2, "unknown stage 'bogus'")
    assert (run / "manifest.json").read_bytes() == before
    # a turns file in CP949, and a folder given for it
    cp949 = tmp_path / "turns.jsonl"
    cp949.write_bytes('{"text": "안녕", "check": "none"}\n'.encode("cp949"))
    checks = ["train", "user-checks", str(spec), "--out", str(tmp_path / "uc")]
    failed(run_cli(*checks, "--turns", str(cp949)), 1, "is not UTF-8 text")
    failed(run_cli(*checks, "--turns", str(tmp_path)), 1, "is a directory, not a file")
    # a model string that is not one: the folders --out would have needed are not left
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"id": "a", "prompt": "안녕"}\n', encoding="utf-8")
    batch = ["llm", "batch", str(prompts), "-m", "embedded"]
    failed(run_cli(*batch, "--out", str(tmp_path / "b" / "c" / "o.jsonl")), 2, "not a model string")
    assert not (tmp_path / "b").exists()
    # a CareCall export to a folder; a judge mode that does not exist
    failed(
        run_cli("dialogues", "export-carecall", str(examples), str(tmp_path)), 2, "is a directory"
    )
    judge = ["dialogues", "judge", "--spec", str(spec), "--dialogues", str(examples)]
    failed(
        run_cli(*judge, "--out", str(tmp_path / "j"), "--mode", "bogus"),
        2,
        "Invalid value for '--mode': 'bogus' is not one of",  # not pydantic's "Value error, "
    )
    assert not (tmp_path / "j").exists()
    # a JSON line without its final "}" is placed at the line's end, not "column 1"
    unclosed = tmp_path / "unclosed.jsonl"
    unclosed.write_text('{"text": "안녕", "check": "none"\n', encoding="utf-8")
    failed(
        run_cli("records", "check", str(unclosed), "--as", "turn"),
        1,
        "unclosed.jsonl:1: not valid JSON (Expecting ',' delimiter at the end of the line)",
    )
    # an account made without a terminal to type the password on
    db = f"sqlite:///{tmp_path / 'web.db'}"
    failed(
        run_cli("web", "add-user", "ann", "--admin", "--db", db),
        2,
        f"rolecall web add-user ann --admin --db {db} --password-stdin",  # the same account
    )
    # a misspelt judge kind is refused before the run records it: the corrected command
    # is then not refused for "other settings"
    kda = tmp_path / "kda"
    kda.mkdir()
    (kda / "candidates.jsonl").write_text("", encoding="utf-8")
    (kda / "manifest.json").write_text(
        json.dumps({"command": "detox generate", "runs": [], "config": {}, "stages": {}}), "utf-8"
    )
    before = (kda / "manifest.json").read_bytes()
    typo = ["detox", "filter", "--out", str(kda), "--implicit-model", "classifer:/x"]
    failed(run_cli(*typo), 2, "unknown backend 'classifer'")
    assert (kda / "manifest.json").read_bytes() == before
    # empty inputs are errors where nothing can come out, before any model loads
    failed(run_cli("records", "check", str(empty), "--as", "turn"), 1, "holds no record")
    failed(run_cli("dialogues", "stats", str(empty)), 1, "holds no dialogue")
    failed(
        run_cli("chat", str(tmp_path / "no-bot"), "--script", str(empty)), 1, "holds no user turn"
    )
    # a JSON output over a file that is not JSON (notes, a mistyped name) is refused, kept
    notes = tmp_path / "notes.txt"
    notes.write_text("important notes\n", encoding="utf-8")
    for command in (
        ["dialogues", "export-carecall", str(examples), str(notes)],
        ["llm", "batch", str(empty), "-m", "fake:a", "--out", str(notes)],
    ):
        failed(run_cli(*command), 2, "exists and is not JSON")
    assert notes.read_text(encoding="utf-8") == "important notes\n"
    assert not (tmp_path / "manifest.json").exists()
    # an export of no pairs says so
    (kda / "pairs.jsonl").write_text("", encoding="utf-8")
    failed(run_cli("detox", "export", "--out", str(kda)), 1, "retention.json: file not found")
    filters = [{"filter": f, "in": 2, "kept": 0, "unparsed": 0, "retention": 0.0, "by_n": {}}
               for f in ("consistency", "implicit")]  # fmt: skip
    (kda / "retention.json").write_text(json.dumps({"filters": filters}), "utf-8")
    exported = run_cli("detox", "export", "--out", str(kda))
    assert exported.returncode == 0 and "warning: 0 pairs exported" in exported.stderr
    # refused before a run directory is made: filter before generate, a folder as --pairs
    failed(run_cli("detox", "filter", "--out", str(tmp_path / "f")), 1, "no candidates")
    failed(
        run_cli("redteam", "--model", "fake:a", "--spec", str(spec), "--pairs", str(tmp_path),
                "--out", str(tmp_path / "rt")),
        1,
        "not a file",
    )  # fmt: skip
    assert not (tmp_path / "f").exists() and not (tmp_path / "rt").exists()
    # the web commands' fixes reach the same database, and a misspelt project is named
    made = run_cli(
        "web", "add-project", "carecall", "--spec", str(spec), "-m", "fake:a", "--db", db
    )
    assert made.returncode == 0, made.stderr
    failed(
        run_cli("web", "add-member", "carecal", "ann", "--db", db), 2, "did you mean 'carecall'?"
    )
    failed(
        run_cli("web", "add-member", "carecall", "nosuch", "--db", db),
        2,
        f"rolecall web add-user nosuch --db {db}",
    )
    # more retrieved comments than the slang index holds: refused, not recorded as none
    corpus = tmp_path / "comments.txt"
    corpus.write_text("오늘 회의 또 취소됐네 진짜\n점심 메뉴가 영 별로였다\n", encoding="utf-8")
    assert run_cli("slang", "index", str(corpus), "--out", str(tmp_path / "idx")).returncode == 0
    failed(
        run_cli("detox", "generate", "--sentences", str(corpus), "--ns", "0,30", "-m", "fake:a",
                "--index", str(tmp_path / "idx"), "--out", str(tmp_path / "gen30")),
        2,
        "--ns asks for 30 retrieved comments but the index holds 2",
    )  # fmt: skip
    assert not (tmp_path / "gen30").exists()
    # a file of another record type: the fix names the --as it reads as
    failed(
        run_cli("records", "check", str(examples), "--as", "example"),
        1,
        "the line reads as a dialogue record: --as dialogue",
    )
