"""One local Ray cluster for every engine test of the session (#18).

``ray.init(num_cpus=2)`` on loopback; its actors import the fake backend
(``ROLECALL_PLUGINS=tests.fakes``) from this checkout. A test that asks for ``ray_cluster``
skips, with Ray's own reason, only when Ray is missing or its cluster cannot start.
"""

from __future__ import annotations

import os

import pytest

from rolecall.errors import RolecallError
from tests.conftest import REPO


@pytest.fixture(scope="session")
def ray_cluster():
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
