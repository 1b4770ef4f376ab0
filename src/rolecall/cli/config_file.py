"""``--config FILE`` for a command: its options from a YAML file, for a training run that
is written down once and run again (every training command takes it).

The file is a mapping of the command's own option names (``epochs: 2``, ``backbone_lr``
or ``backbone-lr``; the arguments too: ``examples``) to values. They become the
command's defaults before its options are read (Click's ``default_map``), so an option
given on the command line wins, and each value is checked as the option checks it. A
relative path in the file is read from the file's folder, as in the pipeline configs.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Optional

import typer

from rolecall.errors import InputFileError
from rolecall.yaml_files import read_yaml_mapping

CONFIG_FIX = "keys are the command's option names, e.g. epochs: 2 (see the command's --help)"


def _defaults_from(ctx: typer.Context, value: Optional[Path]) -> Optional[Path]:
    if value is None or ctx.resilient_parsing:
        return value
    data = read_yaml_mapping(value, "command config", CONFIG_FIX)
    params = {p.name: p for p in ctx.command.params if p.name and p.name != "config_file"}
    defaults: dict[str, Any] = {}
    for key, given in data.items():
        name = str(key).replace("-", "_")
        if name not in params:
            close = difflib.get_close_matches(name, list(params), n=1)
            raise InputFileError(
                value,
                f"{key!r} is not an option of 'rolecall {ctx.command_path.split(' ', 1)[-1]}'",
                fix=f"did you mean {close[0]}?" if close else CONFIG_FIX,
            )
        if _is_path(params[name]) and isinstance(given, str):
            given = str(value.parent / Path(given).expanduser()) if given else given
        defaults[name] = given
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


def _is_path(param: Any) -> bool:
    descriptor = getattr(param, "type_descriptor", None)
    return getattr(descriptor, "annotation", None) is Path


CONFIG_FILE_OPTION = typer.Option(
    None,
    "--config",
    is_eager=True,
    callback=_defaults_from,
    help="a YAML file of this command's options (epochs: 2, ...); the command line wins",
    show_default=False,
)
