"""The house's floors: every import inside rolecall points down (or stays in its package).

This is the picture of the imports that the README's architecture section draws; a new
import that runs back up fails here with the file and line to move.

    floor 9  cli                              what a person types
    floor 8  pipelines, web, doctor           whole runs; the web app; the health check
    floor 7  serve                            response selection, the bot, its reply
    floor 6  train                            models, losses, features
    floor 5  generate, eval                   LLM stages; measurements
    floor 4  retrieval, judge, engines        K/DA slang search; label scoring; where stages run
    floor 3  llm, formats                     backends, cache; corpus formats
    floor 2  textfiles, examples, spec, prompts, store
    floor 1  jsonl, yaml_files, korean, vectors, records, rundir
    floor 0  the package itself (version), errors, config, progress
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "src" / "rolecall"
FLOORS = [
    ["rolecall", "errors", "config", "progress"],
    ["jsonl", "yaml_files", "korean", "vectors", "records", "rundir"],
    ["textfiles", "examples", "spec", "prompts", "store"],
    ["llm", "formats"],
    ["retrieval", "judge", "engines"],
    ["generate", "eval"],
    ["train"],
    ["serve"],
    ["pipelines", "web", "doctor"],
    ["cli"],
]
FLOOR = {unit: level for level, units in enumerate(FLOORS) for unit in units}


def unit_of(module: str) -> str:
    """``rolecall.train.loop`` -> ``train``; ``rolecall`` -> ``rolecall``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def rolecall_imports(path: Path) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [
            (name, node.lineno)
            for name in names
            if name == "rolecall" or name.startswith("rolecall.")
        ]
    return found


def module_units() -> dict[Path, str]:
    units = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        units[path] = "rolecall" if parts == ("__init__",) else parts[0]
    return units


def test_every_package_and_module_has_a_floor():
    missing = sorted({unit for unit in module_units().values()} - set(FLOOR))
    assert not missing, f"give these a floor in FLOORS (and the README picture): {missing}"


def test_every_import_points_down():
    upward = []
    for path, unit in module_units().items():
        for module, line in rolecall_imports(path):
            target = unit_of(module)
            if target != unit and FLOOR[target] >= FLOOR[unit]:
                upward.append(
                    f"{path.relative_to(REPO)}:{line} imports {module} "
                    f"(floor {FLOOR[unit]} -> {FLOOR[target]})"
                )
    assert not upward, "imports that run sideways or up:\n" + "\n".join(upward)


def test_test_helpers_do_not_ship_in_the_package():
    shipped = [
        path for path in PACKAGE.rglob("*.py") if "def tiny_" in path.read_text(encoding="utf-8")
    ]
    assert not shipped, f"test-only code belongs in tests/: {shipped}"


def test_the_command_line_and_the_settings_import_without_torch_or_numpy():
    """``rolecall --help`` stays fast: the CLI reads its training defaults from
    ``train/settings.py``, and neither it nor the CLI may pull in torch or numpy."""
    code = (
        "import sys, rolecall.cli.app, rolecall.train.settings; "
        "print(sorted({'torch', 'numpy'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", f"imported at startup: {done.stdout.strip()}"
