"""``rolecall doctor``: what is installed, where the embedded model is, does a model answer."""

from __future__ import annotations

import importlib.metadata
import time

from rich.console import Console
from rich.table import Table

from rolecall import config
from rolecall.errors import RolecallError
from rolecall.llm.embedded import PACKAGE, embedded_model_path
from rolecall.llm.registry import (backend_entry, default_model, known_schemes,
                                   missing_requirements)

PACKAGES = ["llama-cpp-python", "openai", "transformers", "torch", "gguf", "peft",
            "sqlalchemy", "alembic", "psycopg", PACKAGE]


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
    out.print(f"LLM cache:     {config.cache_path()}")
    out.print(f"default model: {default_model()}")
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
    from rolecall.llm import LLM, Request, SamplingParams, load_backend

    name = model or default_model()
    started = time.perf_counter()
    try:
        backend = load_backend(name)
        caps = ", ".join(k for k, v in backend.capabilities().items() if v)
        out.print(f"model {name}: loaded {backend.model_id} (capabilities: {caps})")
        llm = LLM(backend, retries=1)
        prompt = "한국어로 인사해 주세요: 안녕하세요,"
        completion = llm.complete(Request(prompt=prompt, params=SamplingParams(
            temperature=0.0, max_tokens=12)))
    except RolecallError as exc:
        out.print(f"[red]model {name}: FAILED[/red] {exc.message}")
        if exc.fix:
            out.print(f"  fix: {exc.fix}")
        return False
    seconds = time.perf_counter() - started
    out.print(f"model {name}: OK in {seconds:.1f}s -> {completion.text!r}")
    return True
