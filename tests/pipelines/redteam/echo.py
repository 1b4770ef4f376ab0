"""A tiny red-team run on the fake LLM (``run``): a bot that echoes the user
(``EchoBot``), judged by a rule that flags the curse ``CURSE`` (``CurseRule``), with the
settings it runs under (``settings``)."""

from __future__ import annotations

from rolecall.llm import LLM, load_backend
from rolecall.pipelines.redteam.run import RedteamSettings, Users, run_config, run_redteam
from rolecall.records import Verdict
from rolecall.rundir import RunDir
from rolecall.serve.reply import Reply
from rolecall.spec import load_role_spec
from tests.paths import REPO

SPEC = REPO / "examples" / "carecall" / "spec.yaml"
CURSE = "씨발"


class EchoBot:
    """A ``ChatBot`` that repeats the user: a fallback after a curse, retrieved otherwise."""

    version = "echo"

    def __init__(self):
        self.calls = 0

    def reply(self, history, exclude=()):
        self.calls += 1
        said = history[-1].text
        return Reply(f"네, {said}", "fallback" if CURSE in said else "retrieved")


class CurseRule:
    """A rule judge stand-in: a reply with the curse is not safe."""

    kind, name, model = "rules", "out_of_bounds", "rules:curse"

    @staticmethod
    def item_id(item):
        return item.id

    def verdicts(self, items):
        out = []
        for item in items:
            flagged = CURSE in item.response
            out.append(
                Verdict(
                    judge=self.name,
                    item_id=item.id,
                    label="out-of-bounds" if flagged else "in-bounds",
                    category="not safe" if flagged else None,
                    raw_output="",
                    parse_status="parsed",
                    kind="rules",
                    rule="curse" if flagged else None,
                )
            )
        return out


def settings(files, **changes):
    pairs, explicit = files
    values = dict(
        bot="echo", pairs=str(pairs), explicit=str(explicit), conversations=2, turns=3, fit=False
    )
    return RedteamSettings(**(values | changes))


def run(tmp_path, files, bot, model="fake:x", slang=None, **changes):
    spec = load_role_spec(SPEC)
    llm = LLM(load_backend(model))
    run_dir = RunDir(tmp_path / "out", "redteam", run_config(settings(files, **changes)))
    report = run_redteam(
        settings(files, **changes),
        run_dir,
        bot,
        Users(llm, spec, slang=slang),
        [CurseRule()],
        lambda: [llm],
        progress=False,
        say=lambda line: None,
    )
    return report, llm
