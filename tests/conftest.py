"""Test-wide settings: offline, a shared model home, a private LLM cache per test.

The embedded model is assembled once into ``ROLECALL_HOME`` (default
``~/.cache/rolecall``, kept between runs where the machine keeps it); every test gets its
own empty LLM cache so that no test sees another's calls.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("ROLECALL_HOME", str(Path.home() / ".cache" / "rolecall"))
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import tests.fakes  # noqa: E402,F401  registers the 'fake:' backend

# postgres_url / db_url: a real PostgreSQL server started by the tests (tests/postgres.py)
pytest_plugins = ["tests.postgres"]

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROLECALL_CACHE", str(tmp_path / "llm-cache.sqlite"))


@pytest.fixture(scope="session")
def embedded():
    """The real embedded model through the llamacpp backend, opened once per session."""
    from rolecall.llm import load_backend

    backend = load_backend("llamacpp:embedded")
    yield backend
    backend.close()
