"""The judges a pipeline uses when none is named: chosen by what the judges measured.

The embedded 270M model judges near random (docs/judges.md, "When to trust which
judge"), so when it would be the judge the pipelines use judges that need no LLM instead:

- ``kda run`` / ``kda filter``: each K/DA filter with no judge named gets the trained
  judge of its task (``rolecall.train.kda_judges``: the shipped recipe on the shared data
  folder, TF-IDF, trained on first use in ~30 s and cached under
  ``ROLECALL_HOME/judges/<task>-<hash>``), if the shared data folder is given
  (``filter.judge_data``, ``--judge-data``). Without it the LLM judges stay, with a
  warning printed and written into the manifest: they are never used silently;
- ``dialogues run`` / ``dialogues judge``: the out-of-bounds judge is ``rules:carecall``
  (the role spec's rules; the dialogue judge always has a spec). A spec the bundle cannot
  run on (it lists no unsupported features) keeps the LLM judge, with the same warning.

``default_judges`` (``filter.default_judges``, ``judge.default_judges``,
``--default-judges``) says what a judge left unnamed becomes: ``auto`` (the above; with a
real LLM as the judge model the LLM judges stay the default), ``llm`` (the judge model,
as before) or the pipeline's kind (``trained`` for K/DA, ``rules`` for dialogues). A judge
that is named, the embedded model included, is always used as named.

The choice is part of a run's recorded config (``judge_defaults``, with the trained
judge's cache name, which hashes its recipe, code and data): a resumed run gets the same
judges, and a changed choice is refused like any changed setting. The manifest's
``judge_defaults`` says what was chosen and why, ``warnings`` what to worry about.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rolecall.errors import BadModelString, ConfigError, InputFileError
from rolecall.rundir import RunDir

AUTO, LLM_KIND, TRAINED, RULES = "auto", "llm", "trained", "rules"
RULE_DEFAULT = "rules:carecall"
# the shipped recipe (rolecall.train.kda_judges.train_judge's defaults) and what it reads
RECIPE = {"backbone": "tfidf", "holdout": 0.1, "seed": 0}
RECIPE_FILES = {
    "implicit": (
        "detox/kda_ko.csv",
        "lexicon/korean_bad_words.txt",
        "slang/curse_detection.txt",
        "neutral/chatbot_data.csv",
    ),
    "consistency": ("detox/kda_ko.csv", "neutral/korsts_train.tsv", "neutral/chatbot_data.csv"),
}
NEAR_RANDOM = (
    "the embedded model judges near random (measured: as the K/DA consistency judge it kept "
    "72 of 79 candidates, as the implicit judge it called 71 of those explicit; as the "
    "out-of-bounds judge it calls almost every turn in bounds)"
)
NO_DATA_FIX = (
    "give the shared data folder (filter.judge_data in the config, --judge-data on the "
    "command line) to use trained judges (implicit macro-F1 0.899, consistency 0.964), "
    "or name a real LLM judge"
)


def is_embedded(model: str | None) -> bool:
    """Whether the model string (None: the default model) names the embedded model."""
    from rolecall.llm.registry import parse_model_string

    try:
        spec = parse_model_string(model)
    except BadModelString:
        return False  # opening it fails later, with the message that says why
    return spec.location == "embedded" and spec.scheme in ("llamacpp", "hf")


@dataclass(frozen=True)
class DefaultJudge:
    """The judge one task gets because none was named, and why."""

    task: str
    kind: str  # llm, classifier or rules
    reason: str
    judge: str | None = None  # the judge string; None: the run's model
    data_dir: str | None = None  # classifier: the shared data folder it trains on
    key: str | None = None  # classifier: its cache name, <task>-<hash of the recipe>
    warning: str | None = None

    @property
    def path(self) -> Path | None:
        return judges_home() / self.key if self.key else None

    def strings(self, say: Callable[[str], None] = print) -> list[str | None]:
        """The judge strings to resolve; a trained judge is trained here on first use."""
        if self.kind == "classifier":
            return [f"classifier:{ensure_trained(self.task, Path(self.data_dir), say)}"]
        return [self.judge]

    def recorded(self) -> str | None:
        """What the run's config fingerprint holds of this choice (None for the LLM)."""
        if self.kind == "classifier":
            return f"classifier {self.key}"
        return self.judge if self.kind == RULES else None

    def manifest(self) -> dict[str, Any]:
        entry = {"kind": self.kind, "judge": self.judge or "the run's model"}
        if self.kind == "classifier":
            entry |= {"judge": f"classifier:{self.path}", "data": self.data_dir}
        return entry | {"reason": self.reason}


Defaults = Mapping[str, DefaultJudge]


def config_entry(defaults: Defaults) -> dict[str, Any]:
    """``{"judge_defaults": {task: ...}}`` for a run's recorded config, or nothing when
    every default is the LLM: runs started before defaults existed resume as they were."""
    chosen = {task: d.recorded() for task, d in defaults.items() if d.recorded()}
    return {"judge_defaults": chosen} if chosen else {}


def warnings_of(defaults: Defaults) -> list[str]:
    """What the person running should know about ``defaults``, each once."""
    return list(dict.fromkeys(d.warning for d in defaults.values() if d.warning))


def record_defaults(run: RunDir, defaults: Defaults) -> None:
    """The manifest's ``judge_defaults`` (task -> kind, judge, reason) and ``warnings``."""
    if not defaults:
        return
    run.manifest.setdefault("judge_defaults", {}).update(
        {task: d.manifest() for task, d in defaults.items()}
    )
    warnings = warnings_of(defaults)
    if warnings:
        known = run.manifest.setdefault("warnings", [])
        known += [w for w in warnings if w not in known]


# ---- K/DA's filters ---------------------------------------------------------------------


def filter_defaults(
    unnamed: list[str], choice: str, judge_model: str | None, judge_data: str | None
) -> dict[str, DefaultJudge]:
    """The default judge of each filter in ``unnamed`` (the filters no judge is named for).

    ``choice``: auto, llm or trained; ``judge_model``: the model an unnamed judge would be
    (the generator of ``kda run``; None: the default model)."""
    if not unnamed:
        return {}
    model = judge_model or "the default model"
    if choice == LLM_KIND:
        return _llm(unnamed, "default_judges: llm")
    if choice == AUTO and not is_embedded(judge_model):
        return _llm(unnamed, f"the judge model ({model}) is not the embedded one")
    if judge_data is None:
        if choice == TRAINED:
            raise ConfigError(
                "default_judges: trained needs the shared data folder to train the judges on",
                fix=NO_DATA_FIX.removesuffix(", or name a real LLM judge"),
            )
        warning = f"{NEAR_RANDOM}, and no judge data was given: {NO_DATA_FIX}"
        return _llm(unnamed, "the judge model is the embedded one, but no judge data", warning)
    reason = (
        "default_judges: trained"
        if choice == TRAINED
        else "trained judges: the judge model is the embedded one, which judges near random"
    )
    return {
        task: DefaultJudge(
            task, "classifier", reason, data_dir=str(judge_data), key=trained_key(task, judge_data)
        )
        for task in unnamed
    }


def kda_defaults(section: Any, judge_model: str | None) -> dict[str, DefaultJudge]:
    """``filter_defaults`` of a K/DA config's ``filter`` section (``FilterSection``)."""
    from rolecall.judge.pair_filters import FILTERS

    unnamed = [name for name in FILTERS if not section.judges_of(name)]
    return filter_defaults(unnamed, section.default_judges, judge_model, section.judge_data)


def _llm(tasks: list[str], reason: str, warning: str | None = None) -> dict[str, DefaultJudge]:
    return {task: DefaultJudge(task, LLM_KIND, reason, warning=warning) for task in tasks}


# ---- the dialogue pipeline's out-of-bounds judge ---------------------------------------


def out_of_bounds_default(
    named: list[str], choice: str, judge_model: str | None, spec: Any
) -> dict[str, DefaultJudge]:
    """The default out-of-bounds judge when ``named`` is empty (``choice``: auto, llm or
    rules), keyed by the task as ``filter_defaults``."""
    from rolecall.judge.out_of_bounds import JUDGE

    if named:
        return {}
    model = judge_model or "the default model"
    if choice == LLM_KIND:
        return _llm([JUDGE], "default_judges: llm")
    if choice == AUTO and not is_embedded(judge_model):
        return _llm([JUDGE], f"the judge model ({model}) is not the embedded one")
    try:
        _check_rules(spec)
    except ConfigError as exc:
        if choice == RULES:
            raise
        # subtle: the bundle needs the spec's unsupported features; a spec without them
        # keeps the LLM, said loudly rather than judged by a part of the rules
        warning = f"{NEAR_RANDOM}, and {RULE_DEFAULT} cannot judge this spec ({exc.message})"
        return _llm([JUDGE], "the judge model is the embedded one, but no rule judge", warning)
    reason = (
        "default_judges: rules"
        if choice == RULES
        else "rule judges: the judge model is the embedded one, which judges near random"
    )
    return {JUDGE: DefaultJudge(JUDGE, RULES, reason, judge=RULE_DEFAULT)}


def _check_rules(spec: Any) -> None:
    from rolecall.judge.out_of_bounds import JUDGE
    from rolecall.pipelines.judges import resolve_judges

    def no_llm(model):  # the rule judge opens no model
        raise AssertionError(model)

    resolve_judges([RULE_DEFAULT], JUDGE, no_llm, spec)


# ---- trained judges from the shipped recipes, cached under ROLECALL_HOME ----------------


def judges_home() -> Path:
    from rolecall.config import home

    return home() / "judges"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def recipe_of(task: str, data_dir: str | Path) -> dict[str, Any]:
    """Everything the trained judge of ``task`` depends on: the recipe's settings, the
    code that makes it (a changed recipe or model retrains) and the data files' SHA-256."""
    from rolecall.train import baselines, kda_judges, near_copies

    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise InputFileError(data_dir, "is not a folder", fix=NO_DATA_FIX)
    data = {}
    for name in RECIPE_FILES[task]:
        path = data_dir / name
        if not path.is_file():
            raise InputFileError(
                path,
                f"is missing: the {task} judge's recipe reads it",
                fix="give the shared data folder (with detox/, slang/, lexicon/, neutral/); "
                "see docs/trained-judges.md",
            )
        data[name] = _sha256(path)
    settings = baselines.TfidfSettings(
        task=task, labels=kda_judges.LABELS[task], pair=task == "consistency", seed=RECIPE["seed"]
    )
    modules = (kda_judges, baselines, near_copies)
    code = {m.__name__: _sha256(Path(m.__file__))[:16] for m in modules}
    return {"task": task, **RECIPE, "settings": settings.model_dump(mode="json")} | {
        "code": code,
        "data": data,
    }


def trained_key(task: str, data_dir: str | Path, recipe: dict | None = None) -> str:
    """The cache name of a trained judge: ``<task>-<12 hex digits of its recipe's hash>``."""
    text = json.dumps(recipe or recipe_of(task, data_dir), sort_keys=True)
    return f"{task}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def ensure_trained(task: str, data_dir: Path, say: Callable[[str], None] = print) -> Path:
    """The cached trained judge of ``task`` on ``data_dir``; trained first if missing.

    Trained into a temporary folder beside the cache and renamed into place, so a killed
    training leaves no half model (only a hidden temporary folder), and two runs training
    at once both end with the one that was renamed first."""
    from rolecall.train import kda_judges

    recipe = recipe_of(task, data_dir)
    key = trained_key(task, data_dir, recipe)
    final = judges_home() / key
    if (final / "model.json").is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    say(f"training the {task} judge from the shipped recipe on {data_dir} (first use) -> {final}")
    temp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=final.parent))
    try:
        backbone, holdout, seed = RECIPE["backbone"], RECIPE["holdout"], RECIPE["seed"]
        metrics = kda_judges.train_judge(task, data_dir, temp, backbone, holdout, seed)
        (temp / "recipe.json").write_text(json.dumps(recipe, indent=2), encoding="utf-8")
        if final.exists() and not (final / "model.json").is_file():
            shutil.rmtree(final)  # not ours to keep: no model.json, so never a finished judge
        try:
            os.replace(temp, final)
        except OSError:
            if not (final / "model.json").is_file():
                raise
            # another run renamed its judge first: the same recipe, so the same judge
        say(f"{task} judge: macro-F1 {metrics.get('macro_f1')} on its held-out items")
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return final
