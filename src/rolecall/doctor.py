"""``rolecall doctor``: what is installed, where the embedded model is, does a model answer."""

from __future__ import annotations

import importlib.metadata

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rolecall import config
from rolecall.llm.cache import shown as shown_cache
from rolecall.llm.embedded import PACKAGE, embedded_model_path
from rolecall.llm.probe import build_summary, cpu_summary
from rolecall.llm.registry import backend_entry, default_model, known_schemes, missing_requirements

PACKAGES = [
    "llama-cpp-python",
    "openai",
    "transformers",
    "torch",
    "gguf",
    "peft",
    "sqlalchemy",
    "alembic",
    "psycopg",
    PACKAGE,
]


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def backends_table() -> Table:
    table = Table(title="backends")
    for column in ("scheme", "installed", "what"):
        table.add_column(column)
    for scheme in known_schemes():
        entry = backend_entry(scheme)
        missing = missing_requirements(entry)
        status = "yes" if not missing else f"no (missing {', '.join(missing)})"
        table.add_row(scheme, status, entry.summary)
    return table


def run_doctor(out: Console, model: str | None, check: bool) -> bool:
    """Print the report; return False when the model check fails."""
    out.print(f"ROLECALL_HOME: {config.home()}")
    out.print(f"LLM cache:     {shown_cache(config.cache_path())}")
    from rolecall.secrets import masked

    out.print(f"default model: {masked(default_model())}")  # ROLECALL_MODEL may hold a key
    out.print(f"CPU:           {cpu_summary()}")
    out.print(f"llama.cpp:     {build_summary()}")
    path = embedded_model_path(assemble=False)
    state = f"{path.stat().st_size / 1e6:.0f} MB" if path.exists() else "not assembled yet"
    out.print(f"embedded model: {path} ({state}; package {PACKAGE} {_version(PACKAGE)})")
    out.print(backends_table())
    packages = Table(title="packages")
    packages.add_column("package")
    packages.add_column("version")
    for name in PACKAGES:
        packages.add_row(name, _version(name))
    out.print(packages)
    if not check:
        return True
    return check_model(out, model)


def check_model(out: Console, model: str | None) -> bool:
    """One real call, made in a child process: a model whose native library crashes on
    this CPU is a failed check with the signal and the fix, not a dead ``doctor``."""
    from rolecall.llm.probe import explain, probe_model
    from rolecall.secrets import masked

    result = probe_model(model)
    for i, line in enumerate(masked(line) for line in explain(result)):
        style = "green" if result.ok else "red"
        out.print(f"[{style}]{escape(line)}[/{style}]" if i == 0 else escape(line), highlight=False)
    return result.ok
