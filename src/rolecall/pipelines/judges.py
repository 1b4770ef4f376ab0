"""Judge strings: what a person names as a judge, and the panel member it becomes.

Wherever a judge is named (``kda filter -m``, ``filter.models`` of a K/DA config,
``dialogues judge -m``, ``judge.model`` of a dialogue config) a judge string is one of:

- ``classifier:PATH``: a trained rolecall judge, the model directory at PATH
  (``rolecall.train.judges.load_trained_judge``);
- ``rules:NAME``: a Korean rule judge shipped with the package
  (``rolecall.judge.rules.load_rule_judge``);
- anything else: an LLM model string, opened the way every model is opened (same cache,
  concurrency and retries), or nothing for the run's default model.

``resolve_judges`` turns the strings of one task into panel members (an ``LLM``, which
the task's ``make_panel`` gives its LLM judge, or a ``voting.DirectJudge``), and
``record_judges`` writes each judge's kind and model into the run manifest.

The trained and rule judges are imported only when a string names them: they pull in
their own dependencies (torch, Kiwi), and a run with LLM judges needs neither.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Union

from rolecall.errors import BadModelString, ConfigError, InputFileError
from rolecall.judge.voting import DirectJudge, Member, judge_of, task_of
from rolecall.llm import LLM
from rolecall.records import RoleSpec
from rolecall.rundir import RunDir

TASKS = ("consistency", "implicit", "out_of_bounds")
KINDS = ("classifier", "rules")  # the kinds beside "llm", each named by its prefix
JUDGE_HELP = (
    "a judge: an LLM model string, classifier:PATH (a trained rolecall judge) "
    "or rules:NAME (a Korean rule judge shipped with rolecall)"
)
Resolved = Union[LLM, DirectJudge]


def parse_judge(text: str | None) -> tuple[str, str | None]:
    """``("classifier", PATH)``, ``("rules", NAME)`` or ``("llm", model string)``; no string
    (None) is the run's default model."""
    kind, sep, rest = (text or "").partition(":")
    if not sep or kind not in KINDS:
        return "llm", text
    if not rest.strip():
        example = "classifier:runs/implicit-judge" if kind == "classifier" else "rules:carecall"
        raise ConfigError(f"'{text}' names no {kind} judge", fix=f"write e.g. {example}")
    return kind, rest.strip()


def relative_to(base: Path, text: str | None) -> str | None:
    """A judge string with a relative ``classifier:`` path made relative to ``base`` (the
    config file's directory), as every other path of a config is; others unchanged."""
    kind, value = parse_judge(text)
    if kind != "classifier" or Path(value).expanduser().is_absolute():
        return text
    return f"classifier:{base / value}"


def resolve_judges(
    strings: Sequence[str | None],
    task: str,
    open_llm: Callable[[str | None], LLM],
    spec: RoleSpec | None = None,
) -> list[Resolved]:
    """The panel members of ``task`` that ``strings`` name, each distinct string once;
    no strings: the default model. ``spec`` is the role spec (out-of-bounds judges)."""
    if task not in TASKS:
        raise ConfigError(f"unknown judging task '{task}'", fix=f"use one of {TASKS}")
    members: list[Resolved] = []
    for text in dict.fromkeys(strings or [None]):
        kind, value = parse_judge(text)
        if kind == "classifier":
            members.append(_checked(trained_judge(value, task, spec), kind, task))
        elif kind == "rules":
            members.append(_checked(_rules(value, task, spec), kind, task))
        else:
            members.append(_llm(value, open_llm))
    return members


def check_judges(texts: Iterable[str | None]) -> None:
    """Each judge string read now, before a run directory records it: a misspelt kind or
    backend ("classifer:...") is refused before anything is written, so the corrected
    command is not refused for "other settings"."""
    from rolecall.llm.registry import parse_model_string

    for text in texts:
        kind, value = parse_judge(text)
        if kind == "llm" and value:
            _llm(value, parse_model_string)


def _llm(model: str | None, open_llm: Callable[[str | None], Any]) -> Any:
    try:
        return open_llm(model)
    except BadModelString as exc:
        # subtle: a misspelt kind ("classifer:...") reads as an unknown backend
        raise BadModelString(
            exc.message, fix=f"{exc.fix}; or name {JUDGE_HELP.removeprefix('a judge: ')}"
        ) from None


def trained_judge(value: str, task: str, spec: RoleSpec | None) -> DirectJudge:
    """The trained judge in the model directory ``value`` (``classifier:VALUE``) for
    ``task``; a missing or wrong directory is an error naming the fix."""
    path = Path(value).expanduser()
    if not path.is_dir():
        raise InputFileError(
            path,
            "no trained judge here" if not path.exists() else "not a model directory",
            fix="train one (see docs/trained-judges.md) or check the path after 'classifier:'",
        )
    try:
        from rolecall.train.judges import load_trained_judge
    except ImportError as exc:
        raise ConfigError(
            f"trained judges are not available in this version of rolecall ({exc})",
            fix="use an LLM judge or a rules: judge",
        ) from None
    return load_trained_judge(path, task, spec)


def _rules(name: str, task: str, spec: RoleSpec | None) -> DirectJudge:
    try:
        from rolecall.judge.rules import load_rule_judge
    except ImportError as exc:
        raise ConfigError(
            f"rule judges are not available in this version of rolecall ({exc})",
            fix="use an LLM judge or a classifier: judge",
        ) from None
    return load_rule_judge(name, task, spec)


def _checked(judge: DirectJudge, kind: str, task: str) -> DirectJudge:
    """Loaders refuse a task they cannot do; this catches one that answered another."""
    if judge.kind != kind or judge.name != task:
        raise ConfigError(
            f"{judge.model} is a {judge.kind} judge of {judge.name}, not of {task}",
            fix=f"name a {kind} judge made for {task}",
        )
    return judge


def _llm_of(member: Member | Resolved) -> LLM | None:
    if isinstance(member, LLM):
        return member
    return member[0] if isinstance(member, tuple) else None


def describe(member: Member | Resolved) -> dict[str, str]:
    """``{"kind", "model"}`` of a panel member, as the manifest records it."""
    llm = _llm_of(member)
    if llm is not None:
        return {"kind": "llm", "model": llm.model_id}
    return {"kind": member.kind, "model": member.model}


def llms_of(panels: Iterable[Sequence[Member | Resolved]]) -> list[LLM]:
    """The distinct LLMs sitting on ``panels``, in order (their statistics are the stage's)."""
    found: dict[int, LLM] = {}
    for member in (m for panel in panels for m in panel):
        llm = _llm_of(member)
        if llm is not None:
            found.setdefault(id(llm), llm)
    return list(found.values())


def record_judges(run: RunDir, panels: Sequence[Sequence[Member]]) -> list[LLM]:
    """The manifest's record of ``panels``: every judge's kind and model per task
    (``judges``), the LLM judges also under ``models`` as before (``judge``, or
    ``judge 1``, ``judge 2``... for several) and their prompts. Returns their LLMs."""
    llms = llms_of(panels)
    for number, llm in enumerate(llms):
        run.record_model("judge" if len(llms) == 1 else f"judge {number + 1}", llm.model_id)
    judges = run.manifest.setdefault("judges", {})
    for panel in panels:
        judges[task_of(panel)] = [describe(member) for member in panel]
        for member in panel:
            template = getattr(judge_of(member), "template", None)
            if isinstance(member, tuple) and template is not None:
                run.record_prompt(template.name, template.source)
    return llms
