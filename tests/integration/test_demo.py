"""`rolecall demo` end to end on the embedded model, as `make demo` runs it, then again.

One run (the session's ``demo_run``, tests/integration/conftest.py) makes every stage
(dialogues, judge, examples, three models, the chat, a K/DA run, statistics); the tests
below read it. A second run must take everything from the run directory: no LLM call, no
training. Then the demo's trained bot, and the embedded model prompted with the same spec,
are red-teamed.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
import yaml

from rolecall.jsonl import read_jsonl
from tests.cli_runs import run_cli
from tests.integration.demo_run import DEMO_ARGS
from tests.paths import REPO, SHARED_DATA

pytest.importorskip("torch")
pytestmark = [pytest.mark.embedded, pytest.mark.timeout(3600)]

SPEC = REPO / "examples" / "carecall" / "spec.yaml"
CALLS = re.compile(r"(\d+) calls, (\d+) cache hits")


def test_every_stage_runs_and_the_bot_answers_every_scripted_turn(demo_run):
    summary, out, stdout = demo_run.summary, demo_run.out, demo_run.result.stdout
    for stage in ("spec", "data", "models", "chat", "check", "kda", "stats"):
        assert stage in summary and stage in summary["seconds"]
    spec = out / summary["spec"]["path"]  # relative to the run: it travels (#48)
    assert not Path(summary["spec"]["path"]).is_absolute() and spec.resolve() == SPEC.resolve()
    # the bot answered every scripted turn, and each reply says how it was made
    turns = demo_run.jsonl("chat.jsonl")
    assert len(turns) == 9 and all(t["text"].strip() for t in turns)
    assert all(t["path"] in ("retrieved", "generated", "fallback", "checked") for t in turns)
    assert all(t["latency_ms"] > 0 and t["stages"] for t in turns)
    assert stdout.count("  bot>  ") == 9
    for path, count in summary["chat"]["paths"].items():
        assert stdout.count(f"[{path}") == count == sum(t["path"] == path for t in turns)
    # the bot came from `rolecall bot run` (issue 47): the models were trained on examples
    # with both labels, the guard chosen on held-out dialogues, the threshold calibrated
    data, bot_run = summary["data"], summary["models"]
    examples = bot_run["examples"]
    assert examples["negatives"] > 0 and examples["train"] > examples["negatives"]
    assert set(examples["sources"]) == {"generated dialogues", "example dialogues"}
    guard = bot_run["guard"]
    assert set(guard["candidates"]) == {"tfidf", "sentence"}
    assert guard["candidates"][guard["chosen"]]["roc_auc"] == max(
        c["roc_auc"] for c in guard["candidates"].values()
    )
    assert guard["candidates"][guard["chosen"]]["roc_auc"] > 0.5
    assert bot_run["unanswerable"]["threshold"] is not None
    for part in ("classifier", "retriever", "reranker"):
        assert (out / "bot" / part / "model.json").is_file()
    card = json.loads((out / "bot" / "card.json").read_text(encoding="utf-8"))
    assert card["parts"]["guard"] == guard and "## The guard" in (
        out / "bot" / "card.md"
    ).read_text(encoding="utf-8")
    paths = [v for source in card["sources"] for k, v in source.items() if k != "name"]
    assert paths and not any(p.startswith("/") for p in paths)  # the card moves with the bot
    # the held-out dialogues were kept from training and calibration only: the served
    # pool holds their replies too
    served = {
        c["text"] for c in read_jsonl(out / "bot" / "retriever" / "candidates" / "candidates.jsonl")
    }
    held = {e["response"] for e in read_jsonl(out / "bot" / "held_out.jsonl")}
    assert held and held <= served and bot_run["bot"]["served_candidates"] == len(served)
    assert f"bot: {len(served)} served replies" in stdout
    assert (out / "stats.json").is_file() and "Table 2" in stdout
    # both halves are pipeline runs with their manifests; the dialogues' judge is the rule
    # judge on the embedded model, and the summary and the output say so
    for run in ("dialogues", "kda"):
        manifest = json.loads((out / run / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["command"] in ("dialogues run", "kda run")
    assert data["judge"] == {"out_of_bounds": "rules:carecall"}
    assert "judges: dialogues out_of_bounds rules:carecall" in stdout
    from rolecall.serve.bot import BotSettings

    bot = BotSettings.model_validate_json((out / "bot" / "bot.json").read_text(encoding="utf-8"))
    assert bot.generator_model and bot.spec and not bot.rerank
    # every servable detector calibrated on the held-out contexts; the bot serves the best
    from rolecall.serve.unanswerable import METHODS

    unanswerable = bot_run["unanswerable"]
    by_method = unanswerable["roc_auc_by_method"]
    assert set(by_method) == set(METHODS) >= {"cosine+reranker", "e5+reranker"}
    assert unanswerable["method"] == bot.unanswerable_method == max(by_method, key=by_method.get)
    # ... but not with the embedded model as the generator it would fall back to
    assert bot.unanswerable_threshold is None
    retrieved = [t for t in turns if t["path"] != "checked"]
    assert retrieved and all(t["stages"][1]["answerable"] for t in retrieved)
    if unanswerable["roc_auc"] >= 0.6:  # the demo's MIN_AUC
        assert "which answers worse than a retrieved candidate" in stdout
    assert "where everything is" in stdout and "base model" in stdout
    made = [int(calls) for calls, _ in CALLS.findall(demo_run.result.stderr)]
    assert made and sum(made) > 0


def test_the_bot_reads_the_users_turn_and_the_safety_suite_scores_it(demo_run):
    """Issue 46: the newcomer's nine turns; the sore knee, the off-role requests, the
    insult, the question about the bot and the possibly suicidal turn get the spec's
    replies, the ordinary turns are answered as before; the whole suite put to the bot."""
    out, stdout = demo_run.out, demo_run.result.stdout
    turns = demo_run.jsonl("chat.jsonl")
    checks = [t["stages"][0].get("check") for t in turns]
    assert checks[1:6] == ["discomfort", "identity", "investment", "opinion", "insult"]
    assert checks[7] == "self_harm" and turns[7]["stages"][0]["flagged"]
    assert "109" in turns[7]["text"] and "flagged for the operator" in stdout
    assert checks[0] is checks[6] is None and checks[8] == "goodbye"
    assert all(t["path"] == "retrieved" for i, t in enumerate(turns) if checks[i] is None)
    assert "감사" not in turns[5]["text"]
    trained = demo_run.summary["models"]["checks"]["out_of_fold"]
    assert set(trained) >= {"self_harm", "medical_emergency", "insult", "opinion"}
    check = demo_run.summary["check"]
    assert check["rates"]["all"]["n"] >= 250 and check["rates"]["crisis"]["n"] >= 60
    for name in ("check.md", "check.html", "check.jsonl", "summary.json"):
        assert (out / "check" / name).is_file()
    assert "small talk: fallback" in stdout and "crisis" in stdout


def test_the_kda_half_rewrites_filters_and_exports_the_sample(demo_run):
    """Every sample sentence rewritten at every n of examples/kda/demo.yaml, the consistency
    filter over every candidate, the implicit filter over what it kept, and kda.csv holding
    exactly the kept pairs of the sample's sentences."""
    kda, run = demo_run.summary["kda"], demo_run.out / "kda"
    config = yaml.safe_load((REPO / "examples" / "kda" / "demo.yaml").read_text(encoding="utf-8"))
    planned = 2 * len(config["generate"]["ns"])  # --sentences 2
    candidates = list(read_jsonl(run / "candidates.jsonl"))
    rejected = run / "rejected_candidates.jsonl"
    rejected = list(read_jsonl(rejected)) if rejected.exists() else []
    assert len(candidates) + len(rejected) == planned and candidates
    consistency, implicit = kda["filters"]
    assert (consistency["filter"], implicit["filter"]) == ("consistency", "implicit")
    assert consistency["in"] == len(candidates) and implicit["in"] == consistency["kept"]
    assert len(list(read_jsonl(run / "verdicts_consistency.jsonl"))) == len(candidates)
    assert len(list(read_jsonl(run / "verdicts_implicit.jsonl"))) == consistency["kept"]
    pairs = list(read_jsonl(run / "pairs.jsonl"))
    assert len(pairs) == implicit["kept"]
    with open(run / "kda.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows == [["neutral", "implicit"]] + [[p["neutral"], p["toxic"]] for p in pairs]
    sample = REPO / "examples" / "kda" / "sample" / "chatbot_data_sample.csv"
    with open(sample, encoding="utf-8", newline="") as handle:
        sentences = [row["Q"] for row in csv.DictReader(handle)]
    assert {c["neutral"] for c in candidates} <= set(sentences)
    # with the shared data the filters are the trained judges (#48 item 8), and an empty
    # dataset says why
    assert all(judge.startswith("classifier:") for judge in kda["judge"].values()), kda
    if not pairs:
        assert "rewrites are not offensive enough to keep" in kda["empty_because"]
        assert f"no pair kept: {kda['empty_because']}" in demo_run.result.stdout
    assert "filtered by judges trained on the shared data" in demo_run.result.stdout


def test_a_second_run_takes_everything_from_the_run_directory(demo_run):
    out, summary = demo_run.out, demo_run.summary
    turns = demo_run.jsonl("chat.jsonl")
    again = run_cli("demo", "--out", str(out), *DEMO_ARGS)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    # every stage of the bot run from its manifest: nothing trained again
    assert again.stdout.count("(from an earlier run)") == 7
    calls, _ = map(int, CALLS.findall(again.stderr)[-1])
    assert calls == 0, again.stderr  # (K/DA judged by trained judges: no cache hit either)
    # the same conversation, from the cache
    assert [t["text"] for t in demo_run.jsonl("chat.jsonl")] == [t["text"] for t in turns]
    rerun = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert rerun["seconds"]["total"] < summary["seconds"]["total"]


def readme_block(heading: str) -> list[str]:
    """The commands of the README's fenced block under ``## heading``, one per command
    (continued lines joined), without the ``.venv/bin/`` prefix and the comments."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split(f"## {heading}\n", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    joined = re.sub(r"\\\n\s*", " ", re.sub(r"\s+#[^\n\\]*(?=\\?\n)", "", block))
    return [line.replace(".venv/bin/", "") for line in joined.splitlines() if line.strip()]


def test_the_readme_people_in_the_loop_sequence_runs_as_written(demo_run, tmp_path):
    """#48: the README's web-app sequence on the demo's bot, each command as written
    (``serve`` aside: tests/test_cli_web.py starts it), the red-team run made small (#19: a
    K/DA sentence and a curse at the second turn, every reply judged): an annotator is
    in the project, so add-redteam has someone to send failures to."""
    commands = readme_block("People in the loop")
    assert [c.split()[1:3] for c in commands] == [
        ["web", "add-user"],
        ["web", "add-user"],
        ["web", "add-project"],
        ["serve"],
        ["redteam", "runs/demo/bot"],
        ["web", "add-redteam"],
    ]
    places = {
        "runs/demo/bot": str(demo_run.out / "bot"),
        "runs/rt": str(tmp_path / "rt"),
        "../shared/data": str(SHARED_DATA),
        "examples/": str(REPO / "examples") + "/",
    }
    small = ("-a", "kda", "-a", "explicit", "--no-fit", "--conversations", "1", "--turns", "2")
    env = {"ROLECALL_DATABASE_URL": f"sqlite:///{tmp_path / 'web.sqlite'}"}
    answers = {}
    for command in commands:
        words = command.split()[1:]
        if words == ["serve"]:
            continue
        words = [next((w.replace(a, b) for a, b in places.items() if a in w), w) for w in words]
        extra = (*small, "--no-progress") if words[0] == "redteam" else ()
        result = run_cli(*words, *extra, env_extra=env, input="long enough password\n" * 2)
        assert result.returncode == 0, (command, result.stdout[-3000:] + result.stderr[-3000:])
        answers[tuple(words[:2])] = result.stdout
    red = tmp_path / "rt"
    report = json.loads((red / "report.json").read_text(encoding="utf-8"))
    assert set(report["kinds"]) == {"kda", "explicit"}
    assert [v.startswith("rfg:") for v in report["bot_versions"]] == [True]
    records = [json.loads(line) for line in (red / "conversations.jsonl").open(encoding="utf-8")]
    judged = [t for r in records for t in r["turns"] if "verdict" in t]
    assert len(judged) == 2 and all(t["text"].strip() for t in judged)
    assert {t["path"] for t in judged} <= {"retrieved", "generated", "fallback", "checked"}
    assert (red / "report.html").is_file()
    added = json.loads(answers[("web", "add-redteam")].splitlines()[-1])
    assert added["project"] == "carecall" and added["conversations"] == 2
    assert json.loads(answers[("web", "add-project")].splitlines()[-1])["members"] == ["ann"]


def test_the_embedded_model_prompted_with_the_spec_red_teamed(tmp_path):
    prompted = run_cli(
        "redteam",
        *(
            "--model",
            "llamacpp:embedded",
            "--spec",
            str(REPO / "examples" / "carecall" / "spec.yaml"),
        ),
        *("-a", "explicit", "--conversations", "1", "--turns", "1", "--attack-turn", "1"),
        *("--out", str(tmp_path / "redteam-llm"), "--no-progress"),
    )
    assert prompted.returncode == 0, prompted.stdout[-3000:] + prompted.stderr[-3000:]
    report = json.loads((tmp_path / "redteam-llm" / "report.json").read_text(encoding="utf-8"))
    assert report["kinds"]["explicit"]["n"] == 1 and report["kinds"]["explicit"]["replies"] == 1
    assert [v.startswith("llm:") for v in report["bot_versions"]] == [True]


def test_bot_compare_reads_two_versions_on_the_same_items(demo_run, tmp_path):
    """#47: the demo's bot against a copy with its user checks off: the same retriever
    gives the same Hits@1/K on the same rows (a difference of 0), the suite's crisis pass
    rate drops with an interval below 0, and the copy answers nothing with a check."""
    import shutil

    copy = tmp_path / "no-checks"
    shutil.copytree(demo_run.out / "bot", copy)
    settings = json.loads((copy / "bot.json").read_text(encoding="utf-8"))
    (copy / "bot.json").write_text(json.dumps({**settings, "user_checks": False}), "utf-8")
    out = tmp_path / "compare"
    result = run_cli("bot", "compare", str(demo_run.out / "bot"), str(copy), "--out", str(out),
                     "--no-progress")  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    metrics = report["metrics"]
    hits = next(v for name, v in metrics.items() if name.startswith("first stage Hits@1/"))
    assert hits["values"][0] == hits["values"][1] and hits["differences"][0]["difference"] == 0
    crisis = metrics["suite: crisis"]
    assert crisis["values"][1] < crisis["values"][0] and crisis["differences"][0]["ci95"][1] < 0
    assert metrics["check share"]["values"][1] == 0.0 < metrics["check share"]["values"][0]
    assert "latency p95 (ms)" in metrics and "guard macro-F1" not in metrics  # no negatives
    assert "the held-out examples hold no out-of-bounds one" in result.stdout
    assert "<svg" in (out / "compare.html").read_text(encoding="utf-8")
    assert "suite: crisis" in result.stdout and (out / "check-2" / "check.md").is_file()


@pytest.mark.browser
def test_the_demos_report_opens_in_a_browser(demo_run, tmp_path):
    """#48 item 11: runs/demo/report.html, written from the run's own files, opens from
    the disk in a real headless Chromium: every section, the nine chat turns with how each
    reply was made, the safety table, the Korean text shown; nothing fetched."""
    from tests.web.browser import browser

    report = demo_run.out / "report.html"
    assert f"report: {report}" in demo_run.result.stdout
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": 1280, "height": 720})
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(report.as_uri())
        headings = page.locator("h2").all_inner_texts()
        assert headings[:3] == ["Role spec", "Generated and judged dialogues",
                                "Table 2: generated vs example dialogues"]  # fmt: skip
        assert "The scripted chat" in headings and "K/DA on a small sample" in headings
        chat = page.locator("table", has_text="decided by").locator("tr")
        assert chat.count() == 1 + len(demo_run.jsonl("chat.jsonl"))
        said = page.locator("td", has_text="무릎이 너무 아파서").first
        assert said.is_visible() and said.bounding_box()["width"] > 50
        assert page.locator("td", has_text="user check self_harm").count() == 1
        assert page.locator("table", has_text="95% interval").locator("td").count() > 20
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert requests == [report.as_uri()]


def test_a_copied_bot_directory_chats_as_the_original(demo_run, tmp_path):
    """#48 item 5: the demo's bot copied elsewhere (and the run around it gone from the
    copy's reach) chats, with the same replies to the demo's script: every path in it is
    relative to itself."""
    import shutil

    copy = tmp_path / "moved" / "bot"
    shutil.copytree(demo_run.out / "bot", copy)
    script = tmp_path / "script.txt"
    turns = demo_run.jsonl("chat.jsonl")
    script.write_text("".join(t["user"] + "\n" for t in turns), encoding="utf-8")
    chatted = run_cli("chat", str(copy), "--script", str(script), "--no-progress")
    assert chatted.returncode == 0, chatted.stdout[-3000:] + chatted.stderr[-3000:]
    replies = [json.loads(line) for line in chatted.stdout.splitlines() if line.startswith("{")]
    assert [r["text"] for r in replies] == [t["text"] for t in turns]
