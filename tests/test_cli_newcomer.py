"""Newcomers' tries (issue 48): each mistake gets a clear error that names the fix, no
traceback, and nothing half-made; in-process CLI runs on the fake backend."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.cli_runs import run_cli

REPO = Path(__file__).resolve().parents[1]
SPEC, EXAMPLES = REPO / "examples/carecall/spec.yaml", REPO / "examples/carecall/dialogues.jsonl"


def failed(result, code: int, says: str) -> None:
    """The command failed with ``code``, no traceback, and its message holds ``says``
    (spaces and rich's box lines aside)."""
    flat = re.sub(r"[\s│]", "", result.stderr)
    assert result.returncode == code and "Traceback" not in result.stderr, result.stderr
    assert re.sub(r"\s", "", says) in flat, result.stderr


def test_newcomer_mistakes_get_a_message_and_change_nothing(tmp_path):
    """Tries from issue 48's re-run: each a clear error, no traceback, nothing half-made."""
    spec, examples = SPEC, EXAMPLES
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
        json.dumps({"command": "kda generate", "runs": [], "config": {}, "stages": {}}), "utf-8"
    )
    before = (kda / "manifest.json").read_bytes()
    typo = ["kda", "filter", "--out", str(kda), "--implicit-model", "classifer:/x"]
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
    failed(run_cli("kda", "export", "--out", str(kda)), 1, "retention.json: file not found")
    filters = [{"filter": f, "in": 2, "kept": 0, "unparsed": 0, "retention": 0.0, "by_n": {}}
               for f in ("consistency", "implicit")]  # fmt: skip
    (kda / "retention.json").write_text(json.dumps({"filters": filters}), "utf-8")
    exported = run_cli("kda", "export", "--out", str(kda))
    assert exported.returncode == 0 and "warning: 0 pairs exported" in exported.stderr
    # refused before a run directory is made: filter before generate, a folder as --pairs
    failed(run_cli("kda", "filter", "--out", str(tmp_path / "f")), 1, "no candidates")
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
        run_cli("kda", "generate", "--sentences", str(corpus), "--ns", "0,30", "-m", "fake:a",
                "--index", str(tmp_path / "idx"), "--out", str(tmp_path / "gen30")),
        2,
        "--ns asks for 30 retrieved comments but the index holds 2",
    )  # fmt: skip
    assert not (tmp_path / "gen30").exists()
    # a file of another record type: the fix names the --as it reads as
    failed(
        run_cli("records", "check", str(examples), "--as", "example"),
        1,
        "the line is a valid dialogue record: --as dialogue",
    )


def test_the_third_rerun_of_the_tries(tmp_path):
    """The findings of issue 48's third re-run (64 tries): the fix of each now says what the
    mistake was."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    failed(
        run_cli("records", "check", str(empty), "--as", "dialogue"), 1, "give a file with records"
    )
    failed(run_cli("dialogues", "stats", str(empty)), 1, "holds no dialogue (it is empty)")
    # a JSON list written across lines, and a CSV, given where JSON lines are read
    shots = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    listed = tmp_path / "dialogues.jsonl"
    listed.write_text(json.dumps(shots, ensure_ascii=False, indent=2), encoding="utf-8")
    failed(
        run_cli("records", "check", str(listed), "--as", "dialogue"), 1, "the file is a JSON list"
    )
    table = tmp_path / "kda.csv"
    table.write_text("neutral,implicit\n회의가 취소됐어요.,회의 취소라니\n", encoding="utf-8")
    failed(run_cli("records", "check", str(table), "--as", "pair"), 1, "this is a CSV file")
    # examples given to stats; stats' CareCall export checked back as dialogues
    examples = tmp_path / "examples.jsonl"
    examples.write_text(
        json.dumps({"history": [], "response": "안녕하세요", "label": "positive"}) + "\n",
        encoding="utf-8",
    )
    failed(run_cli("dialogues", "stats", str(examples)), 1, "stats reads dialogues")
    carecall = tmp_path / "cc.json"
    assert run_cli("dialogues", "export-carecall", str(EXAMPLES), str(carecall)).returncode == 0
    checked = run_cli("records", "check", str(carecall), "--as", "dialogue")
    assert checked.returncode == 0 and f"{len(shots)} valid Dialogue" in checked.stdout
    # a dialogue file given as a role spec
    failed(run_cli("spec", "check", str(EXAMPLES)), 1, "this is JSON lines, not a role spec")
    # a config moved away from its inputs; a misspelt key
    config = tmp_path / "moved" / "pipeline.yaml"
    config.parent.mkdir()
    shutil.copy(REPO / "examples/carecall/pipeline.yaml", config)
    failed(run_cli("dialogues", "run", str(config)), 1, "spec: ")
    failed(run_cli("dialogues", "run", str(config)), 1, "read from the config's folder")
    typo = tmp_path / "typo.yaml"
    typo.write_text(
        json.dumps(
            {"spec": str(SPEC), "examples": str(EXAMPLES), "out": "r", "generate": {"cont": 3}}
        ),
        encoding="utf-8",
    )
    failed(run_cli("dialogues", "run", str(typo)), 1, "did you mean generate.count?")
    # an export to a run directory that is not one: refused, nothing made
    failed(
        run_cli("kda", "export", "--out", str(tmp_path / "x" / "pairs.jsonl")),
        2,
        "holds no filtered pairs",
    )
    assert not (tmp_path / "x").exists()
    # -k 0 asks for nothing
    assert run_cli("slang", "search", str(tmp_path), "오늘", "-k", "0").returncode == 2
    # human labels in CP949: the iconv line
    labels = tmp_path / "labels.csv"
    labels.write_bytes("item_id,filter,label\n1,consistency,유지\n".encode("cp949"))
    failed(
        run_cli("eval", "agreement", "--labels", str(labels), "--run", str(tmp_path)), 1, "iconv"
    )
