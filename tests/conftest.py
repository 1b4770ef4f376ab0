"""Test-wide settings: offline, a shared model home, a private LLM cache per test, the
session's shared expensive things, and the markers that say what a test costs.

The embedded model is assembled once into ``ROLECALL_HOME`` (default
``~/.cache/rolecall``, kept between runs where the machine keeps it); every test gets its
own empty LLM cache so that no test sees another's calls.

Markers (docs/testing.md): ``embedded``, ``browser``, ``postgres``, ``ray`` and ``slow``.
A test that asks for the ``embedded``, ``ray_cluster`` or ``postgres_url`` fixture is
marked here, by what it uses; every ``embedded``, ``browser`` and ``ray`` test is also
``slow``, and so is each test measured over about 5 s (marked in its file). ``make test``
runs them all; ``make test-fast`` runs ``-m "not slow"``. The Ray tests run last, so the
session's Ray cluster and its daemons live only while they run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("ROLECALL_HOME", str(Path.home() / ".cache" / "rolecall"))
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import tests.fakes  # noqa: E402,F401  registers the 'fake:' backend
from rolecall.errors import RolecallError  # noqa: E402
from tests.paths import REPO, SLANG_CORPORA  # noqa: E402

# postgres_url / db_url: a real PostgreSQL server started by the tests (tests/postgres.py)
pytest_plugins = ["tests.postgres"]


# what a fixture costs, as the marker its users get
_MARKED_BY_FIXTURE = {"embedded": "embedded", "ray_cluster": "ray", "postgres_url": "postgres"}
_SLOW_BY_NATURE = ("embedded", "browser", "ray")


def pytest_configure(config):
    for line in (
        "embedded: runs the real embedded model (llama.cpp or transformers)",
        "postgres: runs against the session's real PostgreSQL server",
        "browser: drives a real headless Chromium",
        "ray: runs on a local Ray cluster (the session's, or one a child process starts)",
        "slow: over about 5 s on 2 cores; every embedded, browser and ray test is slow",
    ):
        config.addinivalue_line("markers", line)


def pytest_collection_modifyitems(config, items):
    for item in items:
        for fixture, marker in _MARKED_BY_FIXTURE.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)
        if any(item.get_closest_marker(m) for m in _SLOW_BY_NATURE):
            item.add_marker("slow")
    items.sort(key=lambda item: item.get_closest_marker("ray") is not None)  # stable


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


@pytest.fixture(scope="session")
def slang_index(tmp_path_factory) -> tuple[Path, str]:
    """(folder, printed summary) of the slang index of all three real slang corpora (~47k
    comments), built once per session by ``rolecall slang index``'s own function."""
    from rolecall.slang.index import index_command

    folder = tmp_path_factory.mktemp("slang") / "index"
    summary = index_command(SLANG_CORPORA, folder, delimiter="|", progress=False)
    return folder, summary


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster for every Ray test of the session (#18).

    ``ray.init(num_cpus=2)`` on loopback; its actors import the fake backend
    (``ROLECALL_PLUGINS=tests.fakes``) from this checkout. A test that asks for
    ``ray_cluster`` skips, with Ray's own reason, only when Ray is missing or its cluster
    cannot start.
    """
    try:
        from rolecall.engines.ray import start_ray

        saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "ROLECALL_PLUGINS")}
        # the cluster's worker processes inherit these: they import tests.fakes from here
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), saved["PYTHONPATH"]]))
        os.environ["ROLECALL_PLUGINS"] = "tests.fakes"
        ray = start_ray(None, num_cpus=2)
    except RolecallError as exc:
        pytest.skip(f"Ray is not installed: {exc.fix}")
    except Exception as exc:  # noqa: BLE001  any failure to start the cluster
        pytest.skip(f"a local Ray cluster cannot start here: {type(exc).__name__}: {exc}")
    yield ray
    ray.shutdown()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
