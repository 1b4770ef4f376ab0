"""Where things are: the repository root (``REPO``) and the shared data folder beside it
(``SHARED_DATA``)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
# the three real slang corpora as K/DA's index takes them (PATH or PATH:COLUMN, "|")
SLANG_CORPORA = [
    str(SHARED_DATA / "slang" / "beep_unlabeled_comments.txt"),
    f"{SHARED_DATA / 'slang' / 'beep_labeled_train.tsv'}:comments",
    f"{SHARED_DATA / 'slang' / 'curse_detection.txt'}:1",
]
