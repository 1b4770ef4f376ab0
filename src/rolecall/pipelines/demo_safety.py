"""The demo's safety half: the safety suite put to the finished bot (``rolecall demo``'s
stage ``check``: ``rolecall bot check`` of the demo's bot into ``OUT/check``; the table of
pass rates per category is printed, ``check.md`` lists every failed item), and where the
shared corpora its user-turn checks train on are found."""

from __future__ import annotations

from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[4] / "shared" / "data"


def default_data() -> Path | None:
    """``../shared/data`` beside the repository, when it is there."""
    return SHARED_DATA if (SHARED_DATA / "safety").is_dir() else None


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
