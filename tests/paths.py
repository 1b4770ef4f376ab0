"""Where things are: the repository root (``REPO``) and the shared data folder beside it
(``SHARED_DATA``)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
