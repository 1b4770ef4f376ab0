"""The house's floors: every import inside rolecall points down (or stays in its package),
no import circle at run time, even inside one package, and no package code that only the
tests use.

This is the picture of the imports that the README's architecture section draws; a new
import that runs back up fails here with the file and line to move.

    floor 9  cli                              what a person types
    floor 8  pipelines, web, doctor           whole runs; the web app; the health check
    floor 7  serve                            response selection, the bot, its reply
    floor 6  train                            models, losses, features
    floor 5  generate, eval                   LLM stages; measurements
    floor 4  slang, judge, engines            K/DA slang search; label scoring; where stages run
    floor 3  llm, formats, retrieval          backends, cache; corpus formats; search parts
    floor 2  textfiles, examples, spec, prompts, store
    floor 1  jsonl, yaml_files, korean, vectors, records, rundir
    floor 0  the package itself (version), errors, config, progress, atomic
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.paths import REPO

PACKAGE = REPO / "src" / "rolecall"
FLOORS = [
    ["rolecall", "errors", "config", "progress", "secrets", "interrupt", "atomic"],
    ["jsonl", "yaml_files", "korean", "vectors", "records", "rundir"],
    ["textfiles", "examples", "spec", "prompts", "store"],
    ["llm", "formats", "retrieval"],
    ["slang", "judge", "engines"],
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


def module_name(path: Path) -> str:
    """``src/rolecall/train/loop.py`` -> ``rolecall.train.loop``; a package's
    ``__init__.py`` -> the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, path: Path) -> str:
    """The module an ``ImportFrom`` names, relative imports (``from .x import y``) resolved."""
    if node.level == 0:
        return node.module or ""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def rolecall_imports(path: Path, runtime_only: bool = False) -> list[tuple[str, int]]:
    """(module, line) of every rolecall import in ``path``; ``from P import M`` of a
    submodule ``M`` counts as ``P.M``. ``runtime_only``: what runs when the module is
    imported (module level, outside ``if TYPE_CHECKING:``), not imports inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if runtime_only:
        nodes = []
        for top in tree.body:
            if isinstance(top, ast.If) and "TYPE_CHECKING" in ast.unparse(top.test):
                nodes += [n for orelse in top.orelse for n in ast.walk(orelse)]
            elif not isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                nodes += list(ast.walk(top))
    else:
        nodes = list(ast.walk(tree))
    found = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            base = _absolute(node, path)
            names = [
                f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}") else base
                for alias in node.names
            ]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [
            (name, node.lineno)
            for name in dict.fromkeys(names)
            if name == "rolecall" or name.startswith("rolecall.")
        ]
    return found


def _is_module(name: str) -> bool:
    relative = Path(*name.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").is_file() or (
        PACKAGE / relative / "__init__.py"
    ).is_file()


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


def test_no_import_circle_even_inside_a_package_or_a_function():
    """No two modules import each other, at load time or inside a function (a deferred
    import hides a circle from Python, not from a reader: #51 item 5)."""
    graph = {
        module_name(path): {m for m, _ in rolecall_imports(path)} for path in PACKAGE.rglob("*.py")
    }
    assert sorted(map(sorted, _circles({"a": {"b"}, "b": {"c", "a"}, "c": set()}))) == [
        ["a", "b"],
        ["c"],
    ]  # the finder itself
    circles = [circle for circle in _circles(graph) if len(circle) > 1]
    assert not circles, (
        f"modules that import each other (move the shared part down a module): {circles}"
    )


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root] & graph.keys())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    work.append((target, iter(sorted(graph[target] & graph.keys()))))
                    break
                if target in stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    circle = []
                    while True:
                        member = stack.pop()
                        circle.append(member)
                        if member == node:
                            break
                    found.append(circle)
    return found


WORD = re.compile(r"\w+")
# Known package code that only tests use (issue #33 moved the last out): only what an open
# issue is about to call from the package, named with that issue
TEST_ONLY_KNOWN: set[str] = set()


def references(tree: ast.AST) -> list[str]:
    """The names code refers to (not its docstrings or comments): a name, an attribute, an
    import; names inside f-strings too (they are expressions)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.append(node.id)
        elif isinstance(node, ast.Attribute):
            found.append(node.attr)
        elif isinstance(node, ast.alias):
            found.append(node.name.rpartition(".")[2])
    return found


def test_test_helpers_do_not_ship_in_the_package():
    """A public function or class that no package code refers to (a docstring's mention is
    no use) but tests do is test-only code: it belongs in tests/. Used by a bench, or named
    in docs/ as an API to call, it is the product's (commands, registered by decorators,
    are used by the command line; a migration's upgrade and downgrade by alembic)."""
    sources = {path: path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")}
    trees = {path: ast.parse(text) for path, text in sources.items()}
    used = Counter(name for tree in trees.values() for name in references(tree))
    in_tests = {
        word
        for path in (REPO / "tests").rglob("*.py")
        for word in WORD.findall(path.read_text(encoding="utf-8"))
    }
    elsewhere = {
        word
        for path in [*(REPO / "bench").rglob("*.py"), *(REPO / "docs").glob("*.md")]
        for word in WORD.findall(path.read_text(encoding="utf-8"))
    }
    test_only = set()
    for path, tree in trees.items():
        if "migrations" in path.parts:
            continue
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if node.name.startswith("_"):
                continue
            if node.decorator_list and not isinstance(node, ast.ClassDef):
                continue  # a command, registered by its decorator
            if not used[node.name] and node.name in in_tests and node.name not in elsewhere:
                test_only.add(f"{path.relative_to(PACKAGE).as_posix()}:{node.name}")
    assert test_only <= TEST_ONLY_KNOWN, (
        f"used only by tests, move into tests/: {sorted(test_only - TEST_ONLY_KNOWN)}"
    )
    assert TEST_ONLY_KNOWN <= test_only, (
        f"no longer test-only: drop from TEST_ONLY_KNOWN: {sorted(TEST_ONLY_KNOWN - test_only)}"
    )
    shipped = [path for path, text in sources.items() if "def tiny_" in text]
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


def test_the_readme_stays_a_front_page():
    """The README says what rolecall is, the two commands and where to read on; the
    measured numbers live in docs/ (docs/benchmarks.md, each guide), not here."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text) < 10_000, f"README.md is {len(text)} characters: move detail into docs/"
    assert "make demo" in text and "make test" in text


def test_no_options_passed_as_locals():
    """A command hands its options on by name, as typed settings: a ``locals()`` dict lets
    a renamed parameter change behaviour silently and hides where an option is used."""
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for path in PACKAGE.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "locals()" in line.split("#")[0]
    ]
    assert not found, f"pass the options by name: {found}"


def test_every_module_stays_under_500_lines():
    """The style's bound (DESIGN.md): a module that outgrows it splits by what it does."""
    long = {
        str(path.relative_to(REPO)): count
        for path in PACKAGE.rglob("*.py")
        if (count := len(path.read_text(encoding="utf-8").splitlines())) >= 500
    }
    assert not long, f"split these modules: {long}"


def test_no_private_name_is_imported_from_another_module():
    """A name with a leading underscore is its module's own (#51 item 5: ``_torch`` was
    imported in seven modules): make it public, or move it where it is used."""
    private = [
        f"{path.relative_to(REPO)}:{node.lineno} imports {alias.name} from {node.module}"
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rolecall")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert not private, "\n".join(private)
