"""Options declared once, for every training command that takes them (#51 item 4).

A settings field becomes an option with the field's type, default, bounds and description
(``setting_options``); the optimisation options come from ``TrainConfig`` with a model's
own defaults (``training_options``); the backbone's and the training job's options are
groups too. ``with_options(*groups)`` gives a command its own parameters, then every
group's (a parameter the command declares itself wins over a group's), and hands the
groups' values to it in ``**given``; ``settings_of``, ``config_of``, ``choice_of`` and
``job_of`` turn them into the records the training functions take. The first group that
names an option gives it, so a command puts a group of its own first where its default
or meaning differs (the classifier's passes, the retriever's backbone learning rate).

Typer reads a command's parameters from its signature; the wrapper states its signature
(``__signature__``) and the type of each parameter (``__annotations__``), so the help,
``--config FILE`` and the checks see one parameter list.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import typer

from rolecall.cli.common import (
    CHECKPOINT_EVERY,
    FEATURES_CACHE_OPTION,
    PROGRESS_OPTION,
    RAY_ADDRESS_OPTION,
    Engine,
    validated,
)
from rolecall.cli.config_file import CONFIG_FILE_OPTION
from rolecall.cli.train_options import FEATURE_WORKERS, FEATURES_ENGINE, FROZEN, LAYER, TUNE_LAYERS
from rolecall.train.settings import TrainConfig

Group = list[inspect.Parameter]
TRAINING = ("epochs", "batch_size", "lr", "backbone_lr", "max_steps", "seed")
JOB = ("features_cache", "progress", "engine_name", "ray_address", "workers", "checkpoint_every")


def group(**options: tuple[Any, Any]) -> Group:
    """Parameters from ``name=(type, typer option)``."""
    return [
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=o, annotation=t)
        for name, (t, o) in options.items()
    ]


def _bounds(field: Any) -> dict[str, Any]:
    """The option's ``min`` and ``max`` from the field's ``ge`` and ``le``."""
    found: dict[str, Any] = {}
    for rule in field.metadata:
        if getattr(rule, "ge", None) is not None:
            found["min"] = rule.ge
        if getattr(rule, "le", None) is not None:
            found["max"] = rule.le
    return found


def setting_options(settings: Any, *names: str, **types: Any) -> Group:
    """An option per field of ``settings`` (a settings type, or an instance whose values are
    the defaults): the field's type (or ``types[name]``), default, bounds and description."""
    kind = settings if isinstance(settings, type) else type(settings)
    options = {}
    for name in names:
        field = kind.model_fields[name]
        default = getattr(settings, name) if not isinstance(settings, type) else field.default
        option = typer.Option(default, help=field.description, **_bounds(field))
        options[name] = (types.get(name, field.annotation), option)
    return group(**options)


def training_options(defaults: TrainConfig, *names: str) -> Group:
    """``TrainConfig``'s options (all of ``TRAINING`` unless ``names``) with a model's own
    defaults."""
    return setting_options(defaults, *(names or TRAINING), max_steps=Optional[int])


def backbone_options(default: str, help: str, tune: bool = True) -> Group:
    """``--backbone`` (the command's default and text), ``--frozen/--trainable``,
    ``--layer`` and, where the top layers can be tuned, ``--tune-layers``."""
    options = {
        "backbone": (str, typer.Option(default, help=help)),
        "frozen": (Optional[bool], FROZEN),
        "layer": (Optional[int], LAYER),
    }
    if tune:
        options["tune_layers"] = (Optional[int], TUNE_LAYERS)
    return group(**options)


JOB_OPTIONS = group(
    features_cache=(Optional[Path], FEATURES_CACHE_OPTION),
    progress=(bool, PROGRESS_OPTION),
    engine_name=(Engine, FEATURES_ENGINE),
    ray_address=(Optional[str], RAY_ADDRESS_OPTION),
    workers=(int, FEATURE_WORKERS),
    checkpoint_every=(float, CHECKPOINT_EVERY),
)
CONFIG_FILE = group(config_file=(Optional[Path], CONFIG_FILE_OPTION))


def with_options(*groups: Group) -> Callable[[Callable], Callable]:
    """The command with every group's parameters after its own (its own win)."""

    def wrap(command: Callable) -> Callable:
        own = [
            p
            for p in inspect.signature(command, eval_str=True).parameters.values()
            if p.kind is not inspect.Parameter.VAR_KEYWORD
        ]
        taken = {p.name for p in own}
        extra = []
        for p in (p for g in (*groups, CONFIG_FILE) for p in g):
            if p.name not in taken:  # the first group that names an option gives it
                extra.append(p)
                taken.add(p.name)
        params = [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in own + extra]

        def run(**values: Any) -> Any:
            return command(**values)

        run.__name__, run.__qualname__ = command.__name__, command.__qualname__
        run.__doc__, run.__module__ = command.__doc__, command.__module__
        run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return wrap


def pick(given: dict[str, Any], names: tuple[str, ...] | list[str]) -> dict[str, Any]:
    return {name: given[name] for name in names if name in given}


def settings_of(settings_type: Any, options: Group, given: dict[str, Any], **more: Any) -> Any:
    """The model's settings from the values of ``options`` (its ``setting_options``) and
    ``more`` (checked: a bad value names its option)."""
    return validated(settings_type, **pick(given, [p.name for p in options]), **more)


def config_of(given: dict[str, Any], make: Callable[..., TrainConfig] = TrainConfig):
    """The ``TrainConfig`` of the options, made by ``make`` (checked)."""
    return validated(make, **pick(given, TRAINING))


def choice_of(given: dict[str, Any]):
    from rolecall.train.jobs import BackboneChoice

    return BackboneChoice(
        given["backbone"], given.get("frozen"), given.get("layer"), given.get("tune_layers")
    )


def job_of(examples: Path, out_dir: Path, given: dict[str, Any]):
    from rolecall.train.jobs import Job

    return Job(examples, out_dir, *(given[name] for name in JOB))
