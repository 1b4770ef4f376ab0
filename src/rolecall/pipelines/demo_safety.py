"""The demo's safety half: the user-turn checks trained into the bot, and the safety suite
put to the finished bot (``rolecall demo``'s stages ``checks`` and ``check``).

- ``checks``: ``rolecall train user-checks`` on the care-call spec, the project's training
  turns (``examples/carecall/user_turns.jsonl``), the example dialogues' user turns and,
  where the shared data is found, the corpora the spec's checks name; into ``bot/
  user_checks``, trained again only when one of those inputs changed;
- ``check``: ``rolecall bot check`` of the demo's bot into ``OUT/check``: the table of
  pass rates per category is printed, ``check.md`` lists every failed item.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[4] / "shared" / "data"


def default_data() -> Path | None:
    """``../shared/data`` beside the repository, when it is there."""
    return SHARED_DATA if (SHARED_DATA / "safety").is_dir() else None


def user_checks_stage(root: Path, out: Path, data: Path | None, seed: int, say) -> dict:
    """Train the bot's ``user_checks/`` unless its inputs are unchanged."""
    from rolecall.spec import load_role_spec
    from rolecall.train.user_checks import CHECKS_FILE, train_user_checks

    carecall = root / "carecall"
    inputs = [carecall / "spec.yaml", carecall / "user_turns.jsonl", carecall / "dialogues.jsonl"]
    digest = hashlib.sha256()
    for path in inputs:
        digest.update(path.read_bytes())
    key = f"{digest.hexdigest()[:16]}|{data}|{seed}"
    target = out / "bot" / "user_checks"
    marker = target / ".trained"
    if marker.is_file() and marker.read_text(encoding="utf-8") == key:
        say(f"user checks: up to date in {target}")
        saved = json.loads((target / CHECKS_FILE).read_text(encoding="utf-8"))
        return _short(saved["metrics"], target)
    say(
        "user checks (char + morpheme TF-IDF and sentence vectors, logistic regression; "
        + (
            f"corpora from {data})..."
            if data
            else "no shared data found: the spec's turns only)..."
        )
    )
    # the example dialogues' user turns are ordinary talk, but for those the turns file
    # labels (a question about the bot, a request it cannot do): its label comes first
    metrics = train_user_checks(
        load_role_spec(inputs[0]), target, inputs[1], inputs[2], data, seed=seed
    )
    for name, m in metrics["out_of_fold"].items():
        say(
            f"  {name:<20} threshold {m['threshold']:.2f}  precision {m['precision']:.2f}  "
            f"recall {m['recall']:.2f}  (out of fold, {m['turns']} turns)"
        )
    marker.write_text(key, encoding="utf-8")
    return _short(metrics, target)


def _short(metrics: dict, target: Path) -> dict:
    return {"dir": str(target), "turns": metrics["turns"], "out_of_fold": metrics["out_of_fold"]}


def check_stage(bot_dir: Path, spec_path: Path, out: Path, progress: bool, say) -> dict:
    """The shipped safety suite put to the demo's bot; the table printed."""
    from rolecall.pipelines.bot_check import rate_table, run_bot_check
    from rolecall.serve.bot import Bot
    from rolecall.serve.version import models_version
    from rolecall.spec import load_role_spec

    bot = Bot.load(bot_dir, progress=progress)
    bot.version = models_version(bot_dir)
    summary = run_bot_check(
        bot, load_role_spec(spec_path), out, None, progress, say=say, replace_stale=True
    )
    say(f"  {'category':<20} {'passed':>8}  rate  95% interval")
    for name, passed, rate, interval in rate_table(summary["rates"]):
        say(f"  {name:<20} {passed:>8}  {rate}  {interval}")
    control = summary["control"]
    say(
        f"  small talk: fallback {control['fallback_share']:.2f}, a check's reply "
        f"{control['checked_share']:.2f}, a crisis reply {control['crisis_share']:.2f}; "
        f"every failed item: {out / 'check.md'}"
    )
    return {"dir": str(out), "rates": summary["rates"], "control": control}
