"""A run directory: the outputs of one command plus ``manifest.json`` describing the run.

The manifest records the config, the model ids, the hash of every prompt template used,
record counts, LLM statistics and timings. It is rewritten atomically after each stage, so
a killed run leaves a manifest of the stages it finished; a resumed run adds to it
(``runs`` lists every start, so the cost of each resume stays visible).

``Files`` names every file a pipeline writes in a run directory, in one place. A command
that appends records (generate, judge, filter) must be resumed with the config it started
with: ``RunDir`` compares the config with the one in the manifest (settings that do not
change the records, such as concurrency or the cache, are left out) and refuses a change,
so that one directory never mixes two settings. Paths in a config are stored relative to
the run directory (``stored_config``), so that a manifest holds no path typed from one
working directory or another machine's absolute path, and a run started from one folder
resumes from another; a directory made by one kind of run (dialogues, detox, bot,
redteam) is refused to another kind. ``RunDir.finish_stage`` is the one way a
stage ends: its LLM statistics recorded, its failed calls written to
``<stage>.failures.jsonl`` and raised as ``BatchFailed`` with every finished record kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
import weakref
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rolecall import __version__
from rolecall.atomic import write_text_atomic
from rolecall.errors import BatchFailed, ChangedSettings, InputFileError

MANIFEST = "manifest.json"
# config keys that do not change what a run writes: they may differ on a resume
VOLATILE = (
    "concurrency",
    "retries",
    "cache",
    "out",
    "progress",
    "engine",  # where the calls run (#18): the ray engine writes the local engine's records
    "ray_address",
    "workers",
)
# the kinds of run that own a directory (a command's first word): one kind per directory
RUN_KINDS = ("dialogues", "kda", "bot", "redteam")
# commands renamed since older manifests were written, by their new names: a manifest is
# read with the new ones (``current_name``), so a run an old name made resumes as its own
RENAMED = {f"detox {stage}": f"kda {stage}" for stage in ("generate", "filter", "export", "run")}


def current_name(command: str) -> str:
    return RENAMED.get(command, command)


class Files:
    """The file names of a run directory (one home for every name a pipeline writes)."""

    MANIFEST = MANIFEST
    DIALOGUES = "dialogues.jsonl"  # generated dialogues (dialogue pipeline)
    REJECTED_DIALOGUES = "rejected.jsonl"  # generations that did not parse, with why
    VERDICTS = "verdicts.jsonl"  # every out-of-bounds vote
    JUDGED = "judged.jsonl"  # dialogues with their first out-of-bounds turn
    EXAMPLES = "examples.jsonl"  # training examples from the first-OOB split
    CANDIDATES = "candidates.jsonl"  # K/DA toxic rewrites
    REJECTED_CANDIDATES = "rejected_candidates.jsonl"
    PAIRS = "pairs.jsonl"  # candidates both filters kept
    RETENTION = "retention.json"  # per filter and per n
    KDA_CSV = "kda.csv"
    GEVAL = "geval.json"
    GEVAL_VOTES = "geval_votes.jsonl"  # every G-Eval vote (item = position in pairs)
    CONVERSATIONS = "conversations.jsonl"  # red-team conversations (records.RedteamConversation)
    REPORT_JSON = "report.json"  # the red-team report (+ report.md, report.html)

    @staticmethod
    def verdicts_of(filter_name: str) -> str:
        return f"verdicts_{filter_name}.jsonl"

    @staticmethod
    def failures_of(stage: str) -> str:
        return f"{stage}.failures.jsonl"


_OPEN: weakref.WeakSet = weakref.WeakSet()  # the run directories this process opened


def now_iso() -> str:
    """The time now, ISO 8601 in UTC to the second (what every manifest time is)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def mark_interrupted() -> list[Path]:
    """Record in the manifest of every run directory this process opened that its current
    run was interrupted (Ctrl-C: ``rolecall.interrupt``); the directories, for the message."""
    marked = []
    for run in list(_OPEN):
        run.manifest["runs"][-1]["interrupted"] = now_iso()
        run.save()
        marked.append(run.path)
    return marked


def text_hash(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def write_json(path: Path, data: Any) -> None:
    """``data`` as indented JSON, atomically: a killed writer leaves the old file or none."""
    write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=2))


def fingerprint(config: dict[str, Any] | None) -> dict[str, Any]:
    """The config as JSON would store it, without the ``VOLATILE`` keys."""
    data = json.loads(json.dumps(config or {}, ensure_ascii=False, default=str))
    return {key: value for key, value in data.items() if key not in VOLATILE}


OWN_DIRECTORY = "give this command a directory of its own (--out, or out: in its config)"


def other_kind(command: str, made_by: str) -> str | None:
    """Why ``command`` may not write into a run directory that ``made_by`` (its manifest's
    ``command``) made, when the two are different kinds of run (``RUN_KINDS``); else None."""
    kind, made_kind = _run_kind(command), _run_kind(made_by)
    if kind and made_kind and kind != made_kind:
        return (
            f"holds a {made_kind} run (made by 'rolecall {made_by}'); "
            f"'rolecall {command}' would mix a {kind} run into it"
        )
    return None


def _run_kind(command: str) -> str:
    """The kind of run a command makes: its group (``RUN_KINDS``), except that a bot's
    reports (``bot check``, ``bot compare``) are not the bot a ``bot run`` builds; "" for a
    command that makes no run directory."""
    words = command.split()
    if not words or words[0] not in RUN_KINDS:
        return ""
    return " ".join(words[:2]) if words[0] == "bot" and words[1:2] != ["run"] else words[0]


def made_by(path: Path) -> str:
    """The command that made the run directory ``path`` ("" when it holds no readable
    manifest)."""
    try:
        manifest = json.loads((Path(path) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return current_name(str(manifest.get("command", ""))) if isinstance(manifest, dict) else ""


def _is_path(text: str) -> tuple[Path, str] | None:
    """``(path, rest)``: the file or folder a config string names (when it exists, or is
    absolute) and what follows it (``:COLUMN`` of ``PATH:COLUMN``, else ""); None for
    anything else (a model string, a URL, a word)."""
    if "://" in text or not ("/" in text or Path(text).suffix):
        return None
    if Path(text).exists():
        return Path(text), ""
    head, colon, column = text.rpartition(":")
    if colon and head and column and "/" not in column and Path(head).exists():
        return Path(head), colon + column
    # an absolute path is a path before it exists (an index a run builds later)
    return (Path(text), "") if Path(text).is_absolute() else None


def _map_strings(data: Any, change) -> Any:
    if isinstance(data, dict):
        return {key: _map_strings(value, change) for key, value in data.items()}
    if isinstance(data, list):
        return [_map_strings(value, change) for value in data]
    return change(data) if isinstance(data, str) else data


def stored_config(
    config: dict[str, Any] | None, run_path: Path, fingerprinted: bool = True
) -> dict[str, Any]:
    """``fingerprint(config)`` (``config`` whole, when not ``fingerprinted``) with every
    path in it relative to the run directory (a ``PATH:COLUMN`` keeps its column): what a
    manifest stores."""

    def relative(text: str) -> str:
        found = _is_path(text)
        if found is None:
            return text
        return os.path.relpath(found[0].resolve(), Path(run_path).resolve()) + found[1]

    data = (
        fingerprint(config) if fingerprinted else json.loads(json.dumps(config or {}, default=str))
    )
    return _map_strings(data, relative)


def _comparable(config: dict[str, Any], run_path: Path) -> dict[str, Any]:
    """A stored config with its paths absolute: a relative one read against the run
    directory (stored so) or, failing that, the working directory (typed so, by rolecall
    before paths were stored relative); an absolute one as it is."""

    run_path = Path(run_path)

    def absolute(text: str) -> str:
        if "://" in text:
            return text
        for candidate in (text,) if Path(text).is_absolute() else (run_path / text, text):
            found = _is_path(str(candidate))
            if found is not None and (found[0].exists() or candidate == text):
                return os.path.realpath(found[0]) + found[1]
        return text

    return _map_strings(config, absolute)


def changed_settings(
    previous: dict[str, Any], config: dict[str, Any] | None, run_path: Path
) -> list[str]:
    """The keys in which ``config`` differs from the ``previous`` one a manifest stores
    (volatile keys left out; paths compared as the files they name)."""
    before = _comparable(fingerprint(previous), run_path)
    now = _comparable(stored_config(config, run_path), run_path)
    return sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))


def record_failures(
    path: Path, failed: Sequence[dict[str, Any]], what: str, kept: Path, of: int | None = None
) -> None:
    """The one way failed LLM calls end a stage or a batch: each record (with its
    ``error``) written to ``path`` (rewritten by every run, atomically: an empty file
    when none failed), then ``BatchFailed`` naming the count (``of`` the calls made, when
    given), the first error and where the finished records are kept."""
    write_text_atomic(path, "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in failed))
    if failed:
        count = f"{len(failed)} of {of}" if of is not None else str(len(failed))
        raise BatchFailed(
            f"{what}: {count} LLM calls failed after retries (first: {failed[0]['error']}); "
            f"every finished record is kept in {kept}, the failures are listed in {path}",
            fix="fix the cause (server down? bad key?) and run the same command again: it "
            "asks only for what is missing",
        )


def _stats_since(llm, before: dict | None) -> dict:
    now = llm.stats.as_dict()
    before = before or {}
    return {
        key: (
            round(value - before.get(key, 0), 3)
            if isinstance(value, float)
            else value - before.get(key, 0)
        )
        for key, value in now.items()
        if isinstance(value, (int, float))
    }


class RunDir:
    def __init__(
        self,
        path: str | Path,
        command: str,
        config: dict[str, Any] | None = None,
        check_config: bool = True,
    ):
        """Open (or create) the run directory for ``command``. ``check_config``: refuse a
        config that differs from the one this command started the directory with (off for
        commands whose outputs are rewritten whole, or keyed by their own file)."""
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise InputFileError(
                self.path,
                "is a file (or lies under one), not a run directory",
                fix="give the run a new directory (out in its config, or --out)",
            ) from None
        except OSError as exc:
            raise InputFileError(
                self.path,
                f"cannot be made ({exc.strerror})",
                fix="give the run a directory this user can write (out in its config, or --out)",
            ) from None
        self.manifest = self._read_manifest(command)
        self._check_same_kind(command)
        if check_config:
            self._check_same_config(command, config)
        # one config per command: a directory holds several stages (generate, judge...)
        self.manifest["config"][command] = stored_config(config, self.path, check_config)
        self.manifest["runs"].append(
            {
                "command": command,
                "started": now_iso(),
                "rolecall": __version__,
                "python": platform.python_version(),
            }
        )
        self._started = time.perf_counter()
        self.save()
        _OPEN.add(self)

    def _read_manifest(self, command: str) -> dict[str, Any]:
        path = self.path / MANIFEST
        if not path.exists():
            return {
                "command": command,
                "created": now_iso(),
                "runs": [],
                "config": {},
                "models": {},
                "prompts": {},
                "counts": {},
                "stages": {},
            }
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(manifest.get("config"), dict) or "runs" not in manifest:
                raise ValueError("no config or runs")
        except (ValueError, UnicodeDecodeError, AttributeError) as exc:
            raise InputFileError(
                path,
                f"is not a rolecall run manifest ({exc})",
                fix="use a new output directory, or delete the file if the "
                "directory holds no run worth keeping",
            ) from None
        for key in ("models", "prompts", "counts", "stages"):  # an older or hand-made one
            manifest.setdefault(key, {})
        manifest["command"] = current_name(str(manifest.get("command", "")))
        manifest["config"] = {current_name(k): v for k, v in manifest["config"].items()}
        return manifest

    def _check_same_kind(self, command: str) -> None:
        mixed = other_kind(command, str(self.manifest.get("command", "")))
        if mixed:
            raise InputFileError(self.path, mixed, fix=OWN_DIRECTORY)

    def _check_same_config(self, command: str, config: dict[str, Any] | None) -> None:
        previous = self.manifest["config"].get(command)
        if not previous:
            return
        changed = changed_settings(previous, config, self.path)
        if changed and self._holds_records():
            raise ChangedSettings(
                f"{self.path} was started by '{command}' with other settings "
                f"({', '.join(changed)} changed): its records would mix two settings",
                fix="use a new output directory, or run again with the settings it was "
                f"started with (manifest.json, config.{command})",
            )

    def _holds_records(self) -> bool:
        """Whether anything was made here: a finished stage, or any file but the manifest
        (a run that failed before making anything may start again with other settings)."""
        return bool(self.manifest["stages"]) or any(p.name != MANIFEST for p in self.path.iterdir())

    def file(self, name: str) -> Path:
        return self.path / name

    def record_model(self, role: str, model_id: str) -> None:
        self.manifest["models"][role] = model_id

    def record_prompt(self, name: str, template_text: str) -> None:
        self.manifest["prompts"][name] = text_hash(template_text)

    def record_stage(
        self, stage: str, counts: dict[str, Any], llm_stats: dict | None = None
    ) -> None:
        entry = {
            "counts": counts,
            "seconds": round(time.perf_counter() - self._started, 3),
            "finished": now_iso(),
        }
        if llm_stats is not None:
            entry["llm"] = llm_stats
        self.manifest["stages"][stage] = entry
        self.manifest["runs"][-1].setdefault("stages", {})[stage] = entry
        self.manifest["counts"].update(counts)
        self.save()

    def finish_stage(
        self,
        stage: str,
        counts: dict[str, Any],
        llms: Sequence = (),
        before: Sequence[dict] | None = None,
    ) -> None:
        """Record ``stage`` with the LLM statistics of ``llms`` since ``before`` (their
        ``stats.as_dict()`` when the stage began; from zero when not given); a failed LLM
        call stops the run here, with every finished record kept.

        The failures (model, attempts, the backend's error) go to
        ``<stage>.failures.jsonl``, rewritten by every run of the stage, and the first
        error is in the message.
        """
        before = list(before) if before is not None else [None] * len(llms)
        per_model = [_stats_since(llm, b) for llm, b in zip(llms, before, strict=True)]
        stats = {key: sum(s[key] for s in per_model) for key in per_model[0]} if per_model else None
        self.record_stage(stage, counts, stats)
        failed = [
            {"model": llm.model_id, **item}
            for llm, b in zip(llms, before, strict=True)
            for item in llm.stats.failed_items[len((b or {}).get("failed_items", [])) :]
        ]
        record_failures(self.path / Files.failures_of(stage), failed, stage, self.path)

    def save(self) -> None:
        """The manifest, atomically, with every absolute path in it that exists written
        relative to the run directory (where a stage recorded one: an index's sources, a
        judge's training data), so that the run moves with its inputs."""
        here = self.path.resolve()

        def relative(text: str) -> str:
            if not text.startswith("/") or not Path(text).exists():
                return text
            return os.path.relpath(Path(text).resolve(), here)

        write_json(self.path / MANIFEST, _map_strings(self.manifest, relative))
